"""The HTTP API with FastAPI's test client: every endpoint, auth on/off, each limit, every error as JSON."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from conftest import assert_clean_error
from gearag.api import Gearag
from gearag.results import Result
from gearag.server import ServerSettings
from gearag.server.graph import parse_path
from server.servehelp import DEMO_ANSWER, DEMO_QUESTION

Client = Callable[..., TestClient]


def assert_error(response: Any, status: int, *needles: str) -> str:
    """The status, a JSON ``{"error": {"message", "type"}}`` body naming the needles, and no traceback."""
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type"}, body
    message = body["error"]["message"]
    assert "Traceback" not in response.text
    for needle in needles:
        assert needle.lower() in message.lower(), (needle, message)
    return str(body["error"]["type"])


# ------------------------------------------------------------------------------------------ happy paths
def test_health_and_index(client: TestClient) -> None:
    assert client.get("/health").json()["status"] == "ok"
    info = client.get("/v1/index").json()
    assert info["counts"]["passages"] == 12 and info["counts"]["triples"] > 12 and info["counts"]["entities"] > 12
    assert info["extractor"] == "spacy" and info["embedder"] == "wordllama" and info["created"]
    methods = {m["name"]: m for m in info["methods"]}
    assert {"bm25", "syncge", "gear"} <= set(methods)
    assert "beam_width" in methods["syncge"]["options"]


def test_retrieve_bm25_and_syncge(client: TestClient) -> None:
    r = client.post("/v1/retrieve", json={"question": DEMO_QUESTION, "method": "bm25", "top_k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["passages"]) == 3 and body["method"] == "bm25"
    assert body["trace"] is None and body["answer"] is None and body["graph"] is None
    scores = [p["score"] for p in body["passages"]]
    assert scores == sorted(scores, reverse=True)

    r = client.post("/v1/retrieve", json={"question": DEMO_QUESTION, "method": "syncge", "top_k": 5,
                                          "options": {"beam_width": 3}})
    body = r.json()
    assert r.status_code == 200 and body["trace"]["kind"] == "expansion" and body["trace"]["proximal"]
    assert body["graph"]["nodes"] and body["graph"]["edges"]


def test_ask_answers_with_evidence_and_graph(client: TestClient) -> None:
    body = client.post("/v1/ask", json={"question": DEMO_QUESTION}).json()
    assert body["answer"] == DEMO_ANSWER and body["method"] == "gear"
    assert "offline" in body["answer_label"]
    assert body["evidence"] and any(DEMO_ANSWER in e for e in body["evidence"])
    titles = [p["title"] for p in body["passages"]]
    assert "Virginia Tech Hokies men's basketball" in titles and len(titles) == 5
    assert body["trace"]["kind"] == "agent" and body["trace"]["steps"]
    graph = body["graph"]
    kinds = {n["kind"] for n in graph["nodes"]}
    assert {"entity", "passage"} <= kinds
    highlighted = [e for e in graph["edges"] if e["highlight"]]
    assert highlighted and all(e["kind"] == "triple" for e in highlighted)
    assert any(n["label"] == DEMO_ANSWER and n["highlight"] for n in graph["nodes"])


def _events(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def test_ask_stream_sends_each_step_then_the_result(client: TestClient) -> None:
    r = client.post("/v1/ask/stream", json={"question": DEMO_QUESTION, "options": {"max_steps": 3}})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    events = _events(r)
    kinds = [e["event"] for e in events]
    assert kinds[-1] == "result" and set(kinds[:-1]) == {"step"}
    result = events[-1]["result"]
    assert result["answer"] == DEMO_ANSWER
    steps = [e["step"] for e in events[:-1]]
    assert [s["step"] for s in steps] == list(range(1, len(steps) + 1))
    assert [s["query"] for s in steps] == [s["query"] for s in result["trace"]["steps"]]
    for event in events[:-1]:
        assert event["graph"]["nodes"], "every step carries its beams as a graph"


def test_ask_stream_for_a_method_without_steps(client: TestClient) -> None:
    events = _events(client.post("/v1/ask/stream", json={"question": DEMO_QUESTION, "method": "bm25"}))
    assert [e["event"] for e in events] == ["result"] and events[0]["result"]["answer"] is None


def test_passage_entities_and_graph(client: TestClient) -> None:
    p = client.get("/v1/passages/d1").json()
    assert p["title"] == "Dell Curry" and p["row"] == 1 and p["triples"]
    assert_error(client.get("/v1/passages/nope"), 404, "no passage", "nope")

    found = client.get("/v1/entities", params={"q": "Curry"}).json()["entities"]
    assert found[0]["degree"] >= found[-1]["degree"] and any(e["name"] == "dell curry" for e in found)
    assert client.get("/v1/entities", params={"q": "dell curry"}).json()["entities"][0]["name"] == "dell curry"

    g = client.get("/v1/graph", params={"entity": "Dell Curry", "depth": 1}).json()
    focus = [n for n in g["nodes"] if n["focus"]]
    assert len(focus) == 1 and focus[0]["label"] == "Dell Curry"
    assert {n["kind"] for n in g["nodes"]} >= {"entity", "passage"}
    triples = [e for e in g["edges"] if e["kind"] == "triple"]
    assert triples and all(e["label"] for e in triples)
    ids = {n["id"] for n in g["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in g["edges"])
    deeper = client.get("/v1/graph", params={"entity": "Dell Curry", "depth": 2}).json()
    assert len(deeper["nodes"]) > len(g["nodes"])
    small = client.get("/v1/graph", params={"entity": "Dell Curry", "depth": 2, "max_nodes": 4}).json()
    assert len(small["nodes"]) <= 4 and small["truncated"] is True
    assert_error(client.get("/v1/graph", params={"entity": "Nobody Atall"}), 404, "no entity")


def test_parse_path_reads_trace_beams() -> None:
    assert parse_path("(Dell Curry; joined in; 1982) → (Dell Curry; joined; Hokies)  [1.546]") == [
        ("Dell Curry", "joined in", "1982"), ("Dell Curry", "joined", "Hokies")]
    assert parse_path("(a; b; c; d)  [0.1]") == [("a", "b", "c; d")]
    assert parse_path("not a path") == []


def test_chat_completions_plain_and_streamed(client: TestClient) -> None:
    request = {"model": "gearag-gear", "messages": [{"role": "system", "content": "be brief"},
                                                    {"role": "user", "content": DEMO_QUESTION}]}
    body = client.post("/v1/chat/completions", json=request).json()
    content = body["choices"][0]["message"]["content"]
    assert body["object"] == "chat.completion" and content.startswith(DEMO_ANSWER)
    assert "[1] " in content and "Sources:" in content
    assert body["gearag"]["citations"][0]["n"] == 1

    r = client.post("/v1/chat/completions", json={**request, "stream": True, "model": "gearag-bm25"})
    assert r.headers["content-type"].startswith("text/event-stream")
    lines = [line for line in r.text.split("\n\n") if line.strip()]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[len("data: "):]) for line in lines[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert "writes no answer" in text and "[1] " in text
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    models = [m["id"] for m in client.get("/v1/models").json()["data"]]
    assert {"gearag-gear", "gearag-syncge", "gearag-bm25"} <= set(models)


def test_openapi_documents_the_endpoints(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/health", "/v1/index", "/v1/retrieve", "/v1/ask", "/v1/ask/stream", "/v1/passages/{passage_id}",
                 "/v1/entities", "/v1/graph", "/v1/chat/completions"):
        assert path in paths
    assert "RetrieveResponse" in json.dumps(paths["/v1/retrieve"])
    assert client.get("/docs").status_code == 200


# ------------------------------------------------------------------------------------------ auth
def test_auth_off_by_default(client: TestClient) -> None:
    assert client.get("/v1/index").status_code == 200


def test_auth_on(make_client: Client) -> None:
    c = make_client(api_key="s3cret")
    assert c.get("/health").status_code == 200
    assert c.get("/").status_code == 200 and c.get("/static/app.js").status_code == 200
    assert assert_error(c.get("/v1/index"), 401, "missing API key") == "authentication_error"
    assert_error(c.get("/v1/index", headers={"Authorization": "Bearer wrong"}), 401, "invalid API key")
    assert_error(c.post("/v1/ask", json={"question": "x"}), 401)
    assert_error(c.get("/metrics"), 401)
    assert_error(c.get("/v1/nowhere"), 401)  # unknown paths do not reveal themselves either
    assert c.get("/v1/index", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert c.get("/v1/index", headers={"X-API-Key": "s3cret"}).status_code == 200
    r = c.post("/v1/chat/completions", headers={"Authorization": "Bearer s3cret"},
               json={"model": "gearag-bm25", "messages": [{"role": "user", "content": DEMO_QUESTION}]})
    assert r.status_code == 200


def test_settings_refuse_exposure_without_a_key() -> None:
    from gearag.errors import ConfigError

    ServerSettings(host="127.0.0.1").check_exposure()
    ServerSettings(host="::1").check_exposure()
    ServerSettings(host="localhost").check_exposure()
    ServerSettings(host="0.0.0.0", api_key="k").check_exposure()
    for host in ("0.0.0.0", "192.168.1.5", "::", "example.org"):
        with pytest.raises(ConfigError, match="without an API key"):
            ServerSettings(host=host).check_exposure()
    with pytest.raises(ConfigError, match="65535"):
        ServerSettings(port=70000)


def test_serve_cli_refuses_a_public_host_without_a_key(cli: Any, demo_index: Any, monkeypatch: Any) -> None:
    monkeypatch.delenv("GEARAG_API_KEY", raising=False)
    assert_clean_error(cli("serve", demo_index.path, "--host", "0.0.0.0"), "without an API key", "GEARAG_API_KEY")
    assert_clean_error(cli("serve", demo_index.path / "missing"), "no such index")
    assert_clean_error(cli("serve", demo_index.path, "--max-concurrency", "0"), "--max-concurrency")
    import socket

    with socket.socket() as taken:  # a port something else listens on: one line before the index is opened
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert_clean_error(cli("serve", demo_index.path, "--port", port), f"--port {port}", "cannot listen on")


# ------------------------------------------------------------------------------------------ limits and errors
def test_question_limits(make_client: Client) -> None:
    c = make_client(max_question_chars=50, max_top_k=10)
    assert_error(c.post("/v1/retrieve", json={"question": "x" * 51}), 422, "too long", "limit 50")
    assert_error(c.post("/v1/retrieve", json={"question": "   "}), 422, "empty")
    assert_error(c.post("/v1/retrieve", json={"question": "q", "top_k": 11}), 422, "top_k", "10")
    assert_error(c.post("/v1/retrieve", json={"question": "q", "top_k": 0}), 422, "top_k")
    assert_error(c.post("/v1/ask/stream", json={"question": "x" * 51}), 422, "too long")
    assert_error(c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x" * 51}]}),
                 422, "too long")


def test_graph_bounds(make_client: Client) -> None:
    c = make_client(max_depth=2, max_nodes=50)
    assert_error(c.get("/v1/graph", params={"entity": "Dell Curry", "depth": 3}), 422, "depth", "limit of 2")
    assert_error(c.get("/v1/graph", params={"entity": "Dell Curry", "max_nodes": 51}), 422, "max_nodes")
    assert_error(c.get("/v1/graph", params={"entity": "Dell Curry", "depth": 0}), 422, "depth")
    assert_error(c.get("/v1/graph"), 422, "entity")


def test_bad_requests_are_clear(client: TestClient) -> None:
    assert_error(client.post("/v1/retrieve", content=b'{"question": ', headers={"Content-Type": "application/json"}),
                 422, "malformed JSON")
    assert_error(client.post("/v1/retrieve", json={"question": "q", "method": "nope"}), 400,
                 "unknown method 'nope'", "syncge")
    assert_error(client.post("/v1/ask/stream", json={"question": "q", "method": "nope"}), 400, "unknown method")
    assert_error(client.post("/v1/retrieve", json={"question": "q", "method": "bm25", "options": {"beam_width": 3}}),
                 400, "options.beam_width", "unknown option for method 'bm25'")
    assert_error(client.post("/v1/retrieve", json={"question": "q", "method": "syncge",
                                                   "options": {"beam_width": -1}}), 400, "options.beam_width",
                 "at least 1")
    assert_error(client.post("/v1/retrieve", json={"question": "q", "colour": "red"}), 422, "colour")
    assert_error(client.post("/v1/retrieve", json=["q"]), 422)
    assert_error(client.post("/v1/chat/completions", json={"model": "gpt-4", "messages": [
        {"role": "user", "content": "q"}]}), 400, "unknown model 'gpt-4'", "gearag-gear")
    assert_error(client.post("/v1/chat/completions", json={"messages": [{"role": "system", "content": "q"}]}),
                 422, "no user message")
    assert_error(client.get("/v1/nowhere"), 404)
    assert_error(client.delete("/v1/ask"), 405)


def test_oversized_body_gets_413(make_client: Client) -> None:
    c = make_client(max_body_bytes=1000)
    big = {"question": "q", "options": {"pad": "x" * 2000}}
    assert_error(c.post("/v1/retrieve", json=big), 413, "too large", "1000")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while reading
        yield b'{"question": "'
        for _ in range(20):
            yield b"x" * 100
        yield b'"}'

    assert_error(c.post("/v1/retrieve", content=chunks(), headers={"Content-Type": "application/json"}), 413)
    assert c.post("/v1/retrieve", json={"question": "small enough"}).status_code == 200


class SlowGearag(Gearag):
    """The demo index, but every method call first waits for ``gate`` (or ``delay`` seconds)."""

    def __init__(self, base: Gearag, delay: float = 0.0) -> None:
        super().__init__(base.index)
        self.gate = threading.Event()
        self.delay = delay
        self.started = threading.Event()

    def method(self, name: str, config: Any = None, **options: Any) -> Any:
        inner = super().method(name, config, **options)

        def slow(question: str, k: int) -> Result:
            self.started.set()
            if self.delay:
                time.sleep(self.delay)
            else:
                self.gate.wait(30)
            return inner(question, k)

        return slow


def test_time_limit_gives_504(make_client: Client, demo_gearag: Gearag) -> None:
    slow = SlowGearag(demo_gearag, delay=1.0)
    c = make_client(slow, request_timeout=0.2)
    t0 = time.perf_counter()
    assert assert_error(c.post("/v1/retrieve", json={"question": "q"}), 504, "time limit (0.2 s)") == "timeout_error"
    assert time.perf_counter() - t0 < 0.9
    events = _events(c.post("/v1/ask/stream", json={"question": "q", "method": "bm25"}))
    assert events[-1]["event"] == "error" and events[-1]["error"]["type"] == "timeout_error"


def test_timed_out_agent_stops_at_its_next_step(make_client: Client, demo_gearag: Gearag) -> None:
    from gearag.server.runner import Runner, StoppedError

    runner = Runner(ServerSettings())
    import asyncio

    async def run() -> None:
        call = runner.submit(demo_gearag, "gear", runner.config("gear", {}), DEMO_QUESTION, 5)
        call.stop.set()  # as after a timeout or a client that went away
        with pytest.raises(StoppedError):
            await call.future

    asyncio.run(run())
    runner.shutdown()


def test_concurrency_limit_gives_503(make_client: Client, demo_gearag: Gearag) -> None:
    slow = SlowGearag(demo_gearag)
    c = make_client(slow, max_concurrency=1, request_timeout=30)
    first: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: first.update(r=c.post("/v1/retrieve", json={"question": "q"})))
    worker.start()
    assert slow.started.wait(10)
    r = c.post("/v1/retrieve", json={"question": "q"})
    assert assert_error(r, 503, "busy") == "overloaded_error" and r.headers["retry-after"] == "1"
    assert c.get("/v1/passages/d0").status_code == 200  # cheap endpoints still answer
    slow.gate.set()
    worker.join(30)
    assert first["r"].status_code == 200
    assert c.post("/v1/retrieve", json={"question": "q"}).status_code == 200  # the slot came back


def test_unexpected_errors_are_500_json_without_traceback(make_client: Client, demo_gearag: Gearag) -> None:
    class Broken(Gearag):
        def method(self, name: str, config: Any = None, **options: Any) -> Any:
            def boom(question: str, k: int) -> Result:
                raise RuntimeError("secret internal detail")

            return boom

    c = make_client(Broken(demo_gearag.index))
    r = c.post("/v1/retrieve", json={"question": "q"})
    assert assert_error(r, 500, "internal server error") == "server_error"
    assert "secret" not in r.text


def test_cors_off_unless_configured(make_client: Client) -> None:
    origin = {"Origin": "http://evil.example"}
    assert "access-control-allow-origin" not in make_client().get("/v1/index", headers=origin).headers
    c = make_client(cors_origins="http://app.example")
    assert c.get("/v1/index", headers={"Origin": "http://app.example"}).headers[
        "access-control-allow-origin"] == "http://app.example"
    assert "access-control-allow-origin" not in c.get("/v1/index", headers=origin).headers


# ------------------------------------------------------------------------------------------ operations
def test_metrics_count_requests_latency_and_errors(client: TestClient) -> None:
    client.get("/v1/passages/d0")
    client.get("/v1/passages/missing")
    text = client.get("/metrics").text
    assert 'gearag_http_requests_total{method="GET",route="/v1/passages/{passage_id:path}",status="200"} 1.0' in text
    assert 'gearag_http_errors_total{route="/v1/passages/{passage_id:path}",status="404"} 1.0' in text
    assert "gearag_http_request_seconds_bucket" in text and "gearag_method_calls_in_flight" in text


def test_access_log_is_one_json_line_per_request(make_client: Client) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("gearag.access")
    logger.addHandler(handler)
    try:
        c = make_client(access_log=True)
        c.get("/v1/passages/d0")
        c.post("/v1/retrieve", json={"question": ""})
    finally:
        logger.removeHandler(handler)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(x["method"], x["path"], x["status"]) for x in lines] == [
        ("GET", "/v1/passages/d0", 200), ("POST", "/v1/retrieve", 422)]
    assert all(isinstance(x["ms"], float) for x in lines)


# ------------------------------------------------------------------------------------------ the page's files
def test_page_is_self_contained_and_escapes_data(client: TestClient) -> None:
    from gearag.server.app import STATIC

    page = client.get("/").text
    assert "/static/cytoscape.min.js" in page and "http://" not in page and "https://" not in page
    assert (STATIC / "cytoscape.LICENSE").read_text().startswith("Copyright")
    js = (STATIC / "app.js").read_text()
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "document.write" not in js
    assert client.get("/static/cytoscape.min.js").status_code == 200
