"""LLM triple extraction for indexing: order, concurrency, checkpoint resume after kill -9."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from gearag.errors import LLMError
from gearag.extract.base import make_extractor
from gearag.extract.llm import LLMTripleExtractor, make_llm_extractor
from gearag.extract.run import extract_with_checkpoint
from gearag.llm import FakeLLM, LLMClient, LLMConfig, PromptSet
from gearag.model import Fact, Passage
from gearag.store.checkpoint import checkpoint_name
from llm_server import Hang, Reply, ScriptedServer, Status

SRC = Path(__file__).resolve().parents[2] / "src"
MARK = re.compile(r"PASSAGE-(\d{3})")


def passages(n: int) -> list[Passage]:
    return [Passage(f"p{i}", f"Doc {i}", f"PASSAGE-{i:03d} tells that E{i} has index {i}.") for i in range(n)]


def expected(i: int) -> list[list[str]]:
    return [[f"E{i}", "has index", str(i)]]


def passage_of(body: dict) -> int:
    return int(MARK.findall(body["messages"][-1]["content"])[-1])


def reply_for(i: int, delay: float = 0.0) -> Reply:
    payload = {"named_entities": [f"E{i}", str(i)], "triples": expected(i)}
    return Reply("```json\n" + json.dumps(payload) + "\n```", delay=delay)


def client(server: ScriptedServer, cache: Path | None, **kw) -> LLMClient:
    settings = dict(model="test-model", base_url=server.base_url, api_key="k", timeout=5.0, max_retries=2,
                    backoff_base=0.01, backoff_cap=0.05, concurrency=4, cache_path=cache)
    settings.update(kw)
    return LLMClient(LLMConfig(**settings))


@pytest.fixture(autouse=True)
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEARAG_PROGRESS", "0")
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GEARAG_LLM_MODEL", "GEARAG_LLM_BASE_URL", "GEARAG_PROMPTS",
                "GEARAG_LLM_PRICES", "GEARAG_LLM_CACHE"):
        monkeypatch.delenv(var, raising=False)


def test_extracts_in_order_with_concurrency(tmp_path: Path) -> None:
    delays = [0.08 if i % 4 == 0 else 0.0 for i in range(16)]
    with ScriptedServer(responder=lambda b: reply_for(passage_of(b), delays[passage_of(b)])) as server:
        ex = LLMTripleExtractor(client(server, None, concurrency=4))
        out = list(ex.extract(passages(16)))
        ex.llm.close()
        assert out == [[Fact(*t) for t in expected(i)] for i in range(16)]
        assert 2 <= server.max_in_flight <= 4
    assert ex.parse_stats.replies == 16 and ex.parse_stats.valid_items == 16
    assert ex.ledger.snapshot(role="extract").requests == 16
    assert "tokens used" in ex.summary()


def test_extract_is_lazy() -> None:
    fake = FakeLLM(lambda messages, role: '{"triples": [["a", "b", "c"]]}', concurrency=2)
    stream = LLMTripleExtractor(fake).extract(passages(50))
    next(stream)
    stream.close()
    assert len(fake.calls) <= 5  # only a window ahead of the consumer was requested


def test_prompt_carries_title_and_passage() -> None:
    fake = FakeLLM(lambda messages, role: "[]")
    list(LLMTripleExtractor(fake).extract([Passage("x", "Lake Baikal", "It is deep.")]))
    (call,) = fake.calls
    assert call.role == "extract"
    assert "Lake Baikal\nIt is deep." in call.prompt and '"triples"' in call.prompt


def test_bad_reply_yields_no_triples_but_does_not_stop() -> None:
    replies = {0: "Sorry, I cannot do that.", 2: '{"triples": [["ok", "but", "cut'}
    fake = FakeLLM(lambda m, r: replies.get(passage_of({"messages": m}), json.dumps({"triples": [["s", "p", "o"]]})))
    ex = LLMTripleExtractor(fake, concurrency=1)
    out = list(ex.extract(passages(4)))
    assert out == [[], [Fact("s", "p", "o")], [], [Fact("s", "p", "o")]]
    assert ex.parse_stats.failed == 1 and ex.parse_stats.truncated == 1 and ex.parse_stats.invalid_items == 1


def test_key_tracks_model_prompt_and_settings() -> None:
    a = LLMTripleExtractor(FakeLLM(lambda m, r: "", model="m1"))
    assert a.key == LLMTripleExtractor(FakeLLM(lambda m, r: "", model="m1")).key
    assert a.key.startswith("llm:m1:")
    assert a.key != LLMTripleExtractor(FakeLLM(lambda m, r: "", model="m2")).key
    custom = PromptSet({"extract_triples": "Triples for {title}: {passage}"})
    assert a.key != LLMTripleExtractor(FakeLLM(lambda m, r: "", model="m1"), prompts=custom).key
    cfg = LLMConfig(model="m1", base_url="http://127.0.0.1:9/v1", cache_path=None)
    with LLMClient(cfg.with_overrides(temperature=0.8)) as hot, LLMClient(cfg) as cold:
        assert LLMTripleExtractor(hot).key != LLMTripleExtractor(cold).key
    assert checkpoint_name(a.key).startswith("extract-llm-m1-")


def test_factory_and_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeLLM(lambda m, r: "[]")
    assert make_extractor("llm", llm=fake).llm is fake
    with ScriptedServer(responder=lambda b: reply_for(passage_of(b))) as server:
        ex = make_llm_extractor("spec-model", {"llm_base_url": server.base_url, "llm_cache": False,
                                               "llm_concurrency": 2})
        assert isinstance(ex.llm, LLMClient) and ex.llm.model == "spec-model" and ex.concurrency == 2
        assert ex.llm.cache is None
        assert list(ex.extract(passages(2))) == [[Fact("E0", "has index", "0")], [Fact("E1", "has index", "1")]]
        assert server.requests[0].body["model"] == "spec-model"
        ex.close()
        monkeypatch.setenv("GEARAG_LLM_MODEL", "env-model")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("GEARAG_CACHE_DIR", str(tmp_path / "cachedir"))
        with make_extractor("llm") as ex:
            assert ex.llm.model == "env-model" and ex.llm.cache.path == tmp_path / "cachedir" / "llm.sqlite"
    monkeypatch.delenv("GEARAG_LLM_MODEL")
    with pytest.raises(LLMError, match="--llm-model"):
        make_extractor("llm")


def test_endpoint_failure_stops_the_run_and_keeps_the_checkpoint(tmp_path: Path) -> None:
    broken = {"on": True}

    def responder(body: dict):
        i = passage_of(body)
        if broken["on"] and i == 5:
            return Status(500, "model crashed")
        return reply_for(i)

    with ScriptedServer(responder=responder) as server:
        ex = LLMTripleExtractor(client(server, None, concurrency=1, max_retries=1))
        with pytest.raises(LLMError, match="HTTP 500"):
            extract_with_checkpoint(passages(10), ex, tmp_path)
        assert Counter(passage_of(r.body) for r in server.answered()) == Counter(range(5))
        broken["on"] = False
        result = extract_with_checkpoint(passages(10), ex, tmp_path)
        assert [[tuple(t) for t in row] for row in result] == [[tuple(t) for t in expected(i)] for i in range(10)]
        # Passages 0-4 were checkpointed before the failure: never requested again.
        assert Counter(passage_of(r.body) for r in server.answered()) == Counter(range(10))
        ex.llm.close()


# ---------------------------------------------------------------------------
# kill -9 and resume, in a child process
# ---------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from gearag.extract.llm import LLMTripleExtractor
    from gearag.extract.run import extract_with_checkpoint
    from gearag.llm import LLMConfig, LLMClient
    from gearag.model import Passage

    base_url, work, cache, n, out = sys.argv[1:6]
    ps = [Passage(f"p{i}", f"Doc {i}", f"PASSAGE-{i:03d} tells that E{i} has index {i}.") for i in range(int(n))]
    config = LLMConfig(model="test-model", base_url=base_url, api_key="k", timeout=60, max_retries=2,
                       backoff_base=0.01, concurrency=4, cache_path=None if cache == "-" else cache)
    extractor = LLMTripleExtractor(LLMClient(config))
    result = extract_with_checkpoint(ps, extractor, Path(work))
    Path(out).write_text(json.dumps([[list(t) for t in row] for row in result]))
    print(extractor.summary())
    """
)


def kill_9(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def spawn(tmp_path: Path, server: ScriptedServer, cache: str, n: int) -> subprocess.Popen:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
               GEARAG_PROGRESS="0")
    return subprocess.Popen(
        [sys.executable, str(script), server.base_url, str(tmp_path / "work"), cache, str(n),
         str(tmp_path / "out.json")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def checkpoint_lines(tmp_path: Path) -> int:
    files = list((tmp_path / "work").glob("extract-*.jsonl"))
    if not files:
        return 0
    with files[0].open("rb") as fh:
        return sum(1 for _ in fh)


def wait_for(condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the child process")
        time.sleep(0.02)


def finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return out


def test_resume_after_kill_9_never_pays_twice_without_cache(tmp_path: Path) -> None:
    """Cache off: the append-only checkpoint alone stops a rerun from paying for finished passages."""
    n, cut = 40, 20
    state = {"hang_from": cut}

    def responder(body: dict):
        i = passage_of(body)
        return Hang() if i >= state["hang_from"] else reply_for(i)

    with ScriptedServer(responder=responder) as server:
        proc = spawn(tmp_path, server, "-", n)
        wait_for(lambda: checkpoint_lines(tmp_path) >= cut and server.in_flight >= 4)
        kill_9(proc)
        server.release()
        assert checkpoint_lines(tmp_path) == cut
        state["hang_from"] = n + 1

        summary = finish(spawn(tmp_path, server, "-", n))
        result = json.loads((tmp_path / "out.json").read_text())
        assert result == [expected(i) for i in range(n)]
        answered = Counter(passage_of(r.body) for r in server.answered())
        received = Counter(passage_of(r.body) for r in server.requests)
        assert answered == Counter(range(n))  # every passage paid for exactly once
        assert all(received[i] == 1 for i in range(cut))  # finished passages were never sent again
        assert checkpoint_lines(tmp_path) == n
        assert f"{n - cut} requests" in summary


def test_resume_after_kill_9_reuses_out_of_order_replies_from_cache(tmp_path: Path) -> None:
    """Cache on (the default): replies that arrived but were not yet checkpointed survive a kill -9."""
    n, stuck = 40, 10
    state = {"hang": True}
    cache = tmp_path / "llm.sqlite"

    def responder(body: dict):
        i = passage_of(body)
        return Hang() if (i == stuck and state["hang"]) else reply_for(i)

    def cached_rows() -> int:
        if not cache.exists():
            return 0
        with sqlite3.connect(cache) as conn:
            try:
                return conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
            except sqlite3.OperationalError:
                return 0

    with ScriptedServer(responder=responder) as server:
        proc = spawn(tmp_path, server, str(cache), n)

        def settled() -> bool:
            answered = len(server.answered())
            return checkpoint_lines(tmp_path) == stuck and answered > stuck and cached_rows() == answered

        wait_for(settled)
        time.sleep(0.2)
        wait_for(settled)  # still settled: the window ahead of the stuck passage is full
        buffered = len(server.answered()) - stuck
        kill_9(proc)
        server.release()
        state["hang"] = False

        finish(spawn(tmp_path, server, str(cache), n))
        result = json.loads((tmp_path / "out.json").read_text())
        assert result == [expected(i) for i in range(n)]
        answered = Counter(passage_of(r.body) for r in server.answered())
        assert answered == Counter(range(n))  # nothing paid twice, including the buffered replies
        received = Counter(passage_of(r.body) for r in server.requests)
        assert buffered >= 1
        assert all(received[i] == 1 for i in range(n) if i != stuck)
        assert received[stuck] == 2  # held unanswered when killed, then sent again
