"""The trees stage with ``engine=openai`` against the scripted OpenAI-compatible server.

The project's SiReRAG prompts go through ``LLMRoles`` and the LLM client; the
server answers each prompt kind deterministically. What must hold: LLM
propositions (per passage) and LLM summaries (per cluster) are never paid
twice — neither after a failed build that is rerun, nor after a ``kill -9``
of a build in a child process.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("umap")
pytest.importorskip("sklearn")

from conftest import StubExtractor
from gearag.config import IndexConfig, TreesConfig
from gearag.errors import LLMError
from gearag.indexing import build_index, work_dir_for
from gearag.llm import LLMClient, LLMConfig, LLMRoles
from gearag.model import Passage
from llm_server import Hang, Reply, ScriptedServer, Status

SRC = Path(__file__).resolve().parents[2] / "src"
GROUPS = ["Amber", "Birch", "Cedar", "Delta", "Ember", "Fjord", "Garnet", "Harbor", "Indigo", "Juniper",
          "Kestrel", "Lumen", "Marble", "Nectar", "Onyx"]
N = 30


def corpus(n: int) -> list[Passage]:
    """Passages whose entities (an item, a collection) the server's replies name; the child builds the same."""
    material = ["glass", "wood", "stone", "silk", "iron"]
    return [Passage(f"p{i}", f"Item-{i:03d}",
                    f"PASSAGE-{i:03d} Item-{i:03d} belongs to the {GROUPS[i % 15]} collection of "
                    f"{material[i % 5]} objects and was made in {1900 + i}.")
            for i in range(n)]


def kind_of(body: dict) -> str:
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    for marker, kind in (("Summarise the text below", "summarize"), ("Rewrite a paragraph", "coref"),
                         ("List every named entity", "entities"), ("Extract every fact", "propositions")):
        if marker in text:
            return kind
    return "other"


def reply(body: dict) -> Reply:
    text = str(body["messages"][-1]["content"])
    kind = kind_of(body)
    if kind == "summarize":
        inner = text.split("Text:\n", 1)[1].rsplit("\n\nSummary:", 1)[0]
        blocks = inner.split("\n\n")
        return Reply(f"Summary of {len(blocks)} texts: " + " ".join(b.split("\n")[-1][:60] for b in blocks[:3]))
    if kind == "coref":
        return Reply(text.rsplit("Paragraph:\n", 1)[1].rsplit("\nRewritten:", 1)[0])
    i = int(re.findall(r"PASSAGE-(\d+)", text)[-1])
    item, group = f"Item-{i:03d}", GROUPS[i % 15]
    if kind == "entities":
        return Reply(json.dumps({"n1": {"name": item, "type": "Item"}, "n2": {"name": group, "type": "Collection"}}))
    return Reply(json.dumps({
        "f1": {"fact": f"{item} belongs to the {group} collection.", "triplets": [[item, "belongs to", group]]},
        "f2": {"fact": f"{item} was made in {1900 + i}.", "triplets": [[item, "made in", str(1900 + i)]]},
    }))


def key(body: dict) -> str:
    return json.dumps(body.get("messages"), sort_keys=True)


def config(base_url: str, cache: Path | None, concurrency: int) -> LLMConfig:
    return LLMConfig(model="test-model", base_url=base_url, api_key="k", timeout=60, max_retries=0,
                     backoff_base=0.01, concurrency=concurrency, cache_path=cache)


TREES = IndexConfig(trees=TreesConfig(sirerag=True, engine="openai"))


def test_failed_build_reruns_without_paying_twice(tmp_path: Path) -> None:
    """Cache off, one request at a time: the checkpoints alone keep a rerun from paying again."""
    state = {"fail_after": 2, "summaries": 0}

    def responder(body: dict):
        if kind_of(body) == "summarize" and state["fail_after"] is not None:
            if state["summaries"] >= state["fail_after"]:
                return Status(500)
            state["summaries"] += 1
        return reply(body)

    out = tmp_path / "index"
    with ScriptedServer(responder=responder) as server:
        roles = LLMRoles(LLMClient(config(server.base_url, None, 1)))
        with pytest.raises(LLMError):
            build_index(corpus(N), out, TREES, extractor=StubExtractor(), llm_roles=roles)
        first = len(server.requests)
        assert Counter(kind_of(r.body) for r in server.answered())["propositions"] == N
        assert list(work_dir_for(out).glob("sirerag-summaries-*.jsonl"))
        state["fail_after"] = None
        roles = LLMRoles(LLMClient(config(server.base_url, None, 1)))
        index = build_index(corpus(N), out, TREES, extractor=StubExtractor(), llm_roles=roles)
        again = server.requests[first:]
        answered = Counter(key(r.body) for r in server.answered())
    assert all(n == 1 for n in answered.values()), "a paid request was sent again"
    assert {kind_of(r.body) for r in again} == {"summarize"}  # propositions all came from the checkpoint
    assert index.manifest["trees"]["engine"] == "openai"
    pools = index.manifest["trees"]["pools"]
    assert pools["sirerag"]["aggregate"] > 11 and pools["sirerag"].get("relatedness summary", 0) > 0
    texts = [index.collection("sirerag").record(r)["text"] for r in range(len(index.collection("sirerag")))]
    assert any(t.startswith("Summary of ") for t in texts)
    assert not work_dir_for(out).exists()


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from gearag.config import IndexConfig, TreesConfig
    from gearag.indexing import build_index
    from gearag.llm import LLMClient, LLMConfig, LLMRoles
    from gearag.model import Fact
    from test_stage_llm import corpus

    class Extractor:
        key = "child-stub"
        def extract(self, passages):
            for p in passages:
                yield [Fact(p.title, "is", "item")]

    base_url, out, cache, n = sys.argv[1:5]
    config = LLMConfig(model="test-model", base_url=base_url, api_key="k", timeout=120, max_retries=0,
                       concurrency=4, cache_path=cache)
    roles = LLMRoles(LLMClient(config))
    index = build_index(corpus(int(n)), out, IndexConfig(trees=TreesConfig(sirerag=True, engine="openai")),
                        extractor=Extractor(), llm_roles=roles)
    print(index.manifest["trees"]["pools"]["sirerag"]["nodes"])
    """
)


def spawn(tmp_path: Path, server: ScriptedServer) -> subprocess.Popen:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    tests = Path(__file__).resolve().parent
    path = [str(SRC), str(tests), str(tests.parent), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), GEARAG_PROGRESS="0")
    args = [sys.executable, str(script), server.base_url, str(tmp_path / "index"), str(tmp_path / "llm.sqlite"),
            str(N)]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_killed_build_resumes_without_repeating_paid_calls(tmp_path: Path) -> None:
    """kill -9 while summaries are in flight (4 at a time, cache on): the rerun repeats no answered request."""
    state = {"hang": True, "summaries": 0}

    def responder(body: dict):
        if kind_of(body) == "summarize" and state["hang"]:
            if state["summaries"] >= 3:
                return Hang()
            state["summaries"] += 1
        return reply(body)

    with ScriptedServer(responder=responder) as server:
        proc = spawn(tmp_path, server)
        deadline = time.monotonic() + 240
        while not (server.in_flight >= 1 and state["summaries"] >= 3):
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the child never reached the summaries"
            time.sleep(0.05)
        time.sleep(0.3)  # let the other in-flight summaries hang too
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        server.release()
        before = len(server.requests)
        assert list((tmp_path / ".index.work").glob("sirerag-propositions-*.jsonl"))
        state["hang"] = False
        server.rearm()
        proc = spawn(tmp_path, server)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        answered = Counter(key(r.body) for r in server.answered())
        resent = [kind_of(r.body) for r in server.requests[before:]]
    assert all(n == 1 for n in answered.values()), "a paid request was sent again after the kill"
    assert "propositions" not in resent and "coref" not in resent  # every passage came from the checkpoint
    assert "summarize" in resent and int(out.strip().splitlines()[-1]) > N
