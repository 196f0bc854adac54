"""A really running `gearag serve` (subprocess, 127.0.0.1, free port): the official openai client, keys, shutdown."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import httpx
import pytest

from server.servehelp import DEMO_ANSWER, DEMO_QUESTION, Served

openai = pytest.importorskip("openai", reason="the openai client is a dev dependency")


def test_openai_client_gets_an_answer_with_citations(served: Served) -> None:
    client = openai.OpenAI(base_url=served.base_url + "/v1", api_key="unused", max_retries=0, timeout=60)
    reply = client.chat.completions.create(model="gearag-gear", messages=[{"role": "user", "content": DEMO_QUESTION}])
    content = reply.choices[0].message.content or ""
    assert content.startswith(DEMO_ANSWER), content
    assert "[1] " in content and "Virginia Tech Hokies men's basketball" in content
    assert reply.model == "gearag-gear" and reply.choices[0].finish_reason == "stop"
    assert "gearag-syncge" in [m.id for m in client.models.list().data]


def test_openai_client_streams_an_answer_with_citations(served: Served) -> None:
    client = openai.OpenAI(base_url=served.base_url + "/v1", api_key="unused", max_retries=0, timeout=60)
    stream = client.chat.completions.create(model="gearag-gear", stream=True,
                                            messages=[{"role": "user", "content": DEMO_QUESTION}])
    parts, finish = [], None
    for chunk in stream:
        delta = chunk.choices[0].delta
        parts.append(delta.content or "")
        finish = chunk.choices[0].finish_reason or finish
    content = "".join(parts)
    assert len(parts) > 2 and content.startswith(DEMO_ANSWER) and "[1] " in content and finish == "stop"


def test_openai_client_sees_clear_errors(served: Served) -> None:
    client = openai.OpenAI(base_url=served.base_url + "/v1", api_key="unused", max_retries=0, timeout=60)
    with pytest.raises(openai.BadRequestError, match="unknown model"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "q"}])


def test_live_server_with_a_key_on_a_public_address_and_graceful_shutdown(demo_index: Any) -> None:
    server = Served(demo_index.path, {"GEARAG_API_KEY": "k3y"}, "--host", "127.0.0.1", "--request-timeout", "50")
    try:
        assert httpx.get(server.base_url + "/v1/index").status_code == 401
        client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="k3y", max_retries=0, timeout=60)
        reply = client.chat.completions.create(model="gearag-bm25", messages=[{"role": "user", "content": "Curry"}])
        assert "[1] " in (reply.choices[0].message.content or "")
        # SIGTERM while a request is in flight: it still gets its answer, then the server exits cleanly.
        got: dict[str, Any] = {}

        def ask() -> None:
            got["r"] = httpx.post(server.base_url + "/v1/ask/stream", headers={"X-API-Key": "k3y"}, timeout=120,
                                  json={"question": DEMO_QUESTION, "options": {"max_steps": 4}})

        worker = threading.Thread(target=ask)
        worker.start()
        time.sleep(0.3)
        server.proc.send_signal(signal.SIGTERM)
        worker.join(120)  # the in-flight request may take up to its 50 s limit on a loaded machine
        code, err = server.stop()
        assert code == 0, err
        assert got["r"].status_code == 200 and '"event": "result"' in got["r"].text
        assert "Traceback" not in err
    finally:
        server.stop()


def test_a_second_sigterm_while_the_server_winds_down_exits_at_once_without_a_traceback() -> None:
    """After the drain's SIGTERM the interpreter waits for its threads; another SIGTERM then must not raise
    SystemExit inside that wait (a traceback on stderr) but end the process with status 0."""
    import subprocess
    import sys

    script = (
        "import signal, threading, time\n"
        "from gearag.server import launch\n"
        "signal.signal(signal.SIGTERM, launch._stopped)\n"
        "threading.Thread(target=time.sleep, args=(30,)).start()  # a thread the exit must wait for\n"
        "print('ready', flush=True)\n"
        "signal.raise_signal(signal.SIGTERM)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(0.5)  # the first SIGTERM has run: the interpreter is waiting for the sleeping thread
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "gearag: stopped" in err


def test_warming_methods_with_an_llm_engine_calls_no_model(tiny_index) -> None:
    """The start-up warm-up loads what the methods read; through an LLM engine it would spend minutes of model time
    (a 135M model on 2 cores) on a question nobody asked, so it runs the methods offline."""
    from gearag.api import Gearag
    from gearag.methods import method_config
    from gearag.server.live import warm_methods
    from llm_server import ScriptedServer

    with ScriptedServer() as server:
        options = {"engine": "openai", "llm_base_url": server.base_url, "llm_model": "m"}
        warm_methods(Gearag(tiny_index), ["gear", "syncge", "ircot", "hipporag2"],
                     lambda name: method_config(name, options))
        assert server.requests == []
