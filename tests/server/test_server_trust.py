"""The service's trust boundary (docs/guarantees.md): a request chooses question-time options only; the engine,
endpoints, keys, files and the graphs' shape are the operator's; no request holds the server."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from conftest import isolate_llm_env
from gearag.errors import GearagError
from gearag.options import option_specs
from gearag.registry import REGISTRY
from gearag.server import ServerSettings
from gearag.server.errors import UPSTREAM_FAILED
from gearag.server.requests import check_operator_options, operator_specs, request_config
from gearag.store.index import VARIANTS
from llm_server import Hang, ScriptedServer, Status
from server.servehelp import DEMO_QUESTION, Served, free_port
from server.test_server_api import assert_error

Client = Callable[..., TestClient]
OPERATOR = sorted(operator_specs())
ROUTES = ["/v1/retrieve", "/v1/ask", "/v1/ask/stream"]


def _method_taking(option: str) -> str:
    for name in REGISTRY.names("method"):
        cls = REGISTRY.entry("method", name).config_class()
        if cls is not None and option in option_specs(cls):
            return name
    raise AssertionError(option)


def _sample(option: str, url: str) -> Any:
    """A value a client might send for ``option``: the attacker's URL for every string, a number otherwise."""
    spec = operator_specs()[option]
    if spec.type is str:
        return "openai" if option == "engine" else url
    return False if spec.type is bool else 0.5


def test_the_allow_list_comes_from_the_configs_and_keeps_paths_and_endpoints_out() -> None:
    assert {"engine", "llm_base_url", "llm_model", "word_lists"} <= set(OPERATOR)
    for name in REGISTRY.names("method"):
        for option, spec in option_specs(REGISTRY.entry("method", name).config_class()).items():
            if spec.request is not None and spec.type is str:
                # A free string is a path, a URL or a name: a request may only pick among fixed choices.
                assert spec.choices is not None, (name, option)
            if spec.request is not None and spec.type is int and spec.default is not None:
                # Options that scale a request's work carry a bound (rrf_k is a constant, not work).
                assert spec.request.max is not None or option == "rrf_k", (name, option)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("option", OPERATOR)
def test_a_request_naming_an_operator_option_gets_400_and_nothing_is_contacted(
        make_client: Client, monkeypatch: pytest.MonkeyPatch, route: str, option: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-secret")
    with ScriptedServer() as listener:
        c = make_client(api_key="k")
        body = {"question": "Who is Dell Curry?", "method": _method_taking(option),
                "options": {option: _sample(option, listener.base_url)}}
        if option != "engine":  # the attack: a request picks the engine and an endpoint of its own
            body["options"]["engine"] = "openai"
        message = assert_error(c.post(route, json=body, headers={"X-API-Key": "k"}), 400, "options.",
                               "set by the server operator")
        assert listener.requests == []
        assert "sk-operator" not in message


def test_a_request_naming_an_engine_and_endpoint_sends_no_key_anywhere(make_client: Client,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-secret")
    with ScriptedServer() as listener:
        c = make_client(api_key="k")
        for route in ROUTES:
            r = c.post(route, headers={"Authorization": "Bearer k"}, json={
                "question": "Who is Dell Curry?", "method": "gear",
                "options": {"engine": "openai", "llm_base_url": listener.base_url, "llm_model": "evil"}})
            assert_error(r, 400, "options.engine", "operator")
        assert listener.requests == []


def test_word_lists_from_a_request_open_no_file(make_client: Client, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"my_secret_token": ["x"]}))
    c = make_client(max_concurrency=1, workers=1)
    messages = []
    for path in (fifo, secret, tmp_path / "missing.json", tmp_path, "/dev/zero"):
        r = c.post("/v1/ask", json={"question": "Who is Dell Curry?", "options": {"word_lists": str(path)}})
        messages.append(assert_error(r, 400, "options.word_lists", "operator").replace(str(path), "P"))
        assert "my_secret_token" not in r.text
    assert len(set(messages)) == 1  # nothing tells a client whether a path exists or what it holds
    # No worker was left blocked on the FIFO: a call still gets a slot.
    assert c.post("/v1/retrieve", json={"question": "Who is Dell Curry?"}).status_code == 200


@pytest.mark.parametrize(("option", "value", "needle"), [
    ("beam_width", 51, "limit of 50"), ("max_steps", "11", "limit of 10"), ("neighbours", 10**9, "limit of 1000"),
    ("ppr_damping", 1.5, "limit of 0.95"), ("beam_width", -1, "at least 1"), ("beam_widht", 3, "unknown option"),
    ("chunks", "many", "integer"),
])
def test_work_scaling_options_are_bounded_for_requests(client: TestClient, option: str, value: Any,
                                                       needle: str) -> None:
    r = client.post("/v1/retrieve", json={"question": "q", "method": "gear", "options": {option: value}})
    assert_error(r, 400, f"options.{option}", needle)


def test_a_request_may_set_question_time_options_within_bounds(client: TestClient) -> None:
    r = client.post("/v1/retrieve", json={"question": DEMO_QUESTION, "method": "gear",
                                          "options": {"beam_width": 50, "max_steps": "2", "memory_weight": 0.3}})
    assert r.status_code == 200, r.text


def test_index_info_lists_only_what_a_request_may_set(client: TestClient, demo_gearag: Any) -> None:
    info = client.get("/v1/index").json()
    gear = next(m for m in info["methods"] if m["name"] == "gear")
    assert "beam_width" in gear["options"] and gear["options"]["beam_width"]["max"] == 50
    assert not set(gear["options"]) & set(OPERATOR)
    assert info["path"] == Path(demo_gearag.index.location).name  # not the operator's file path


def test_the_operator_sets_what_requests_cannot(tmp_path: Path) -> None:
    words = tmp_path / "words.json"
    words.write_text(json.dumps({}))
    config = request_config("gear", {"beam_width": 5}, {"word_lists": str(words), "about_weight": 1.0})
    assert config.engine.word_lists == str(words) and config.expansion.beam.width == 5
    assert request_config("bm25", {}, {"word_lists": str(words)}) is not None  # applies where it is taken
    with pytest.raises(GearagError, match="--beam-width: not an option gearag serve sets"):
        check_operator_options({"beam_width": 3})
    with pytest.raises(GearagError, match="apply only to --engine openai"):
        check_operator_options({"llm_model": "m"})
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(GearagError, match=r"bad\.json"):  # at start: a request never meets it
        ServerSettings.from_env({"word_lists": str(bad)})


def test_upstream_failures_tell_the_client_nothing_of_the_endpoint(
        make_client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_llm_env(monkeypatch, tmp_path)
    closed = free_port()
    with ScriptedServer(default=Status(401, "bad key for org-123")) as refusing:
        seen = []
        for url in (f"http://127.0.0.1:{closed}/v1", refusing.base_url):
            c = make_client(method_options={"engine": "openai", "llm_base_url": url, "llm_model": "m"},
                            warm_methods="")
            r = c.post("/v1/ask", json={"question": "Who is Dell Curry?"})
            message = assert_error(r, 502, UPSTREAM_FAILED)
            streamed = c.post("/v1/ask/stream", json={"question": "Who is Dell Curry?"}).text
            for text in (r.text, streamed):
                for leak in (str(closed), str(refusing.port), "127.0.0.1", "refused", "401", "org-123"):
                    assert leak not in text, (leak, text)
            seen.append(message)
        assert seen[0] == seen[1]  # a refused port and a live one look the same


def test_a_timed_out_request_frees_its_slot_while_the_llm_still_hangs(
        make_client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_llm_env(monkeypatch, tmp_path)
    monkeypatch.setenv("GEARAG_LLM_TIMEOUT", "300")
    with ScriptedServer(default=Hang()) as hanging:
        c = make_client(method_options={"engine": "openai", "llm_base_url": hanging.base_url, "llm_model": "m"},
                        warm_methods="", request_timeout=1.0, max_concurrency=1, workers=1)
        assert_error(c.post("/v1/ask", json={"question": "Who is Dell Curry?"}), 504, "time limit")
        runner = c.app.state.runner  # type: ignore[attr-defined]
        waited = 0.0
        while runner.active and waited < 30:  # the LLM read is cut at the request's deadline, not the LLM's 300 s
            time.sleep(0.1)
            waited += 0.1
        assert runner.active == 0
        assert len(hanging.requests) == 1  # not retried past the deadline
        bm25 = c.post("/v1/retrieve", json={"question": "Who is Dell Curry?"})
        assert bm25.status_code == 200, bm25.text  # the single slot is free again
        hanging.release()


def test_request_option_sets_do_not_grow_the_caches_without_bound(client: TestClient, demo_gearag: Any) -> None:
    for k in range(1, VARIANTS + 10):
        assert client.post("/v1/retrieve", json={"question": "q", "options": {"rrf_k": k}}).status_code == 200
    assert len(demo_gearag.index._cache["method:bm25"]) == VARIANTS


def test_head_health_and_offline_docs_that_say_how_to_authorise(make_client: Client) -> None:
    c = make_client(api_key="k")
    assert c.head("/health").status_code == 200
    page = c.get("/docs")
    assert page.status_code == 200 and "https://" not in page.text and "cdn" not in page.text.lower()
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert c.get(f"/docs-assets/{asset}").status_code == 200
    schema = c.get("/openapi.json").json()
    assert set(schema["components"]["securitySchemes"]) == {"bearer", "apiKey"}
    assert "Authorize" in schema["info"]["description"]
    assert c.get("/v1/index").status_code == 401  # the docs are public, the API is not


@pytest.fixture(scope="module")
def slow_served(demo_index: Any) -> Any:
    server = Served(demo_index.path, None, "--header-timeout", "1", "--warm-methods", "", "--no-access-log")
    yield server
    server.stop()


def _recv_all(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return b"".join(chunks) + b"<still open>"
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_a_client_trickling_its_headers_is_disconnected(slow_served: Served) -> None:
    with socket.create_connection(("127.0.0.1", slow_served.port), timeout=20) as sock:
        sock.sendall(b"POST /v1/retrieve HTTP/1.1\r\nHost: x\r\n")  # and never the end of the headers
        assert _recv_all(sock) == b""  # closed by the server, well before our 20 s


def test_a_client_trickling_its_body_gets_408(slow_served: Served) -> None:
    with socket.create_connection(("127.0.0.1", slow_served.port), timeout=20) as sock:
        sock.sendall(b"POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"question\":")
        reply = _recv_all(sock)
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
    assert b"not received within 1 s" in reply


def test_every_id_an_index_accepts_can_be_named_to_the_api(make_client: Client, tmp_path: Path) -> None:
    from urllib.parse import quote

    from gearag.api import Gearag
    from gearag.data import load_corpus
    from gearag.indexing import build_index

    ids = ["AC/DC", "100% pure", "a?b#c", "..", "Zürich/Altstadt"]
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"id": i, "title": f"T{n}", "text": f"Passage {n} about Dell Curry."}
                                  for n, i in enumerate(ids)]))
    c = make_client(Gearag(build_index(load_corpus(corpus), tmp_path / "index")))
    for passage_id in ids:
        r = c.get("/v1/passages/" + quote(passage_id, safe="").replace(".", "%2E"))
        assert r.status_code == 200 and r.json()["id"] == passage_id, (passage_id, r.text)
