"""SiReRAG's QA protocol (§5): top-20 pool nodes → a concise answer, scored EM/F1.

The base methods answer with ``answer=True``: offline by the offline engine's
extracted candidate over the passages the nodes cover, with ``--engine
openai`` by one LLM call per question over the nodes' texts (tested against
the scripted OpenAI-compatible server).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("umap")
pytest.importorskip("sklearn")

from conftest import isolate_llm_env, wiki_slice
from gearag.api import Gearag
from gearag.baselines.qa import BaseMethodConfig, hit_passage, source_rows
from gearag.config import IndexConfig, TreesConfig
from gearag.engine import make_engine
from gearag.indexing import build_index
from gearag.llm import LLMClient, LLMConfig, LLMRoles
from gearag.llm.roles import format_passages
from gearag.model import Passage
from llm_server import Reply, ScriptedServer

INSTRUCTION = "Answer this question in as few words as possible."


@pytest.fixture(scope="module")
def sire(tmp_path_factory: pytest.TempPathFactory) -> tuple[Gearag, list[dict], Path]:
    rows, questions = wiki_slice(50, 6)
    passages = [Passage(f"p{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    out = tmp_path_factory.mktemp("sireqa") / "index"
    index = build_index(passages, out, IndexConfig(trees=TreesConfig(sirerag=True)))
    qfile = out.parent / "questions.json"
    qfile.write_text(json.dumps(questions), encoding="utf-8")
    return Gearag(index), questions, qfile


def responder(body: dict) -> Reply:
    prompt = str(body["messages"][-1]["content"])
    if INSTRUCTION not in prompt:
        return Reply("UNEXPECTED PROMPT")
    question = prompt.rsplit("Question: ", 1)[1].split("\n", 1)[0]
    return Reply(f"Answer: reply {prompt.count('Title: ')} {len(question)}")


def test_offline_answer_is_the_offline_engines_candidate_over_the_covered_passages(
        sire: tuple[Gearag, list[dict], Path]) -> None:
    app, questions, _ = sire
    engine = make_engine(app.index, BaseMethodConfig().engine)
    answered = 0
    for q in questions:
        result = app.retrieve(q["question"], "dense", 5, pool="sirerag", answer=True)
        nodes = app.retrieve(q["question"], "dense", 20, pool="sirerag")
        # The run keeps --top-k results; the answerer read the top 20 nodes.
        assert [h.idx for h in result.passages] == [h.idx for h in nodes.passages][:5]
        trace = result.trace.to_dict()
        assert trace["kind"] == "qa" and trace["engine"] == "offline" and trace["read"] == len(nodes.passages)
        assert "offline answer candidate" in trace["answer_label"]
        rows = source_rows(app.index, nodes.passages, 20)
        assert len(rows) == len(set(rows)) and rows
        memory = engine.gist.read(q["question"], rows)
        expected = engine.answerer.answer(q["question"], [app.index.passages[r] for r in rows], memory)
        assert result.answer == expected.text
        answered += result.answer != "unknown"
    assert answered, "the offline engine extracted no answer for any question"


def test_retrieve_and_eval_report_em_f1_offline(cli, sire: tuple[Gearag, list[dict], Path], tmp_path: Path) -> None:
    app, questions, qfile = sire
    run = tmp_path / "run.jsonl"
    result = cli("retrieve", app.index.path, qfile, "--method", "bm25", "--pool", "sirerag", "--answer",
                 "--top-k", "20", "--out", run)
    assert result.code == 0, result.stderr
    rows = [json.loads(line) for line in run.read_text().splitlines()]
    assert len(rows) == len(questions) and all(isinstance(r["answer"], str) and r["answer"] for r in rows)
    assert all(r["trace"]["kind"] == "qa" and len(r["passages"]) == 20 for r in rows)
    report = tmp_path / "report.json"
    result = cli("eval", qfile, run, "--k", "5,20", "--json", report)
    assert result.code == 0, result.stderr
    payload = json.loads(report.read_text())
    assert 0 <= payload["EM"] <= payload["F1"] <= 100 and "AR@20" in payload["answer_recall"]
    # Without --answer the base method writes no answer (and eval reports no EM/F1).
    plain = cli("ask", app.index.path, questions[0]["question"], "--method", "dense", "--pool", "sirerag", "--json")
    assert plain.code == 0 and "answer" not in json.loads(plain.stdout)


def test_llm_answer_reads_the_top_pool_nodes_once_per_question(
        sire: tuple[Gearag, list[dict], Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    app, questions, _ = sire
    isolate_llm_env(monkeypatch, tmp_path / "cache")
    with ScriptedServer(responder=responder) as server:
        roles = LLMRoles(LLMClient(LLMConfig(model="m", base_url=server.base_url, api_key="k", max_retries=0,
                                             timeout=20)))
        qa = Gearag(app.index, llm_roles=roles)
        for q in questions:
            result = qa.retrieve(q["question"], "dense", 5, pool="sirerag", answer=True, engine="openai")
            nodes = app.retrieve(q["question"], "dense", 20, pool="sirerag").passages
            prompt = server.requests[-1].prompt
            # Exactly the top-20 nodes' texts, in rank order; summaries and aggregates have no title line.
            expected = [hit_passage(app.index, h) for h in nodes]
            assert prompt.startswith(format_passages(expected) + f"\n\nQuestion: {q['question']}\n{INSTRUCTION}")
            assert any(not p.title for p in expected), "the top 20 hold no summary or aggregate"
            assert result.answer == f"reply {sum(bool(p.title) for p in expected)} {len(q['question'])}"
            trace = result.trace.to_dict()
            assert trace["engine"] == "openai" and trace["answer_label"] == "answer"
            assert set(trace["tokens_by_role"]) == {"answer"}
        assert len(server.requests) == len(questions)  # one bounded call per question
        assert roles.llm.ledger.by_role()["answer"].requests == len(questions)


def test_cli_llm_answers_are_cached_and_scored(cli, sire: tuple[Gearag, list[dict], Path],
                                               monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`gearag retrieve --answer --engine openai`: one request per question; a rerun is served by the cache."""
    app, questions, qfile = sire
    isolate_llm_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("GEARAG_LLM_CACHE", "1")  # on, in $GEARAG_CACHE_DIR (the test's own directory)
    gold = {q["question"]: q["answer"] for q in questions}

    def answer_gold(body: dict) -> Reply:
        prompt = str(body["messages"][-1]["content"])
        question = prompt.rsplit("Question: ", 1)[1].split("\n", 1)[0]
        return Reply(gold[question] if INSTRUCTION in prompt else "UNEXPECTED PROMPT")

    with ScriptedServer(responder=answer_gold) as server:
        args = ("retrieve", app.index.path, qfile, "--method", "dense", "--pool", "sirerag", "--answer",
                "--engine", "openai", "--llm-base-url", server.base_url, "--llm-model", "m", "--top-k", "20")
        first = cli(*args, "--out", tmp_path / "run1.jsonl")
        assert first.code == 0, first.stderr
        assert len(server.requests) == len(questions)
        second = cli(*args, "--out", tmp_path / "run2.jsonl")
        assert second.code == 0, second.stderr
        assert len(server.requests) == len(questions), "a cached answer was paid for again"
    rows = [json.loads(line) for line in (tmp_path / "run2.jsonl").read_text().splitlines()]
    assert [r["answer"] for r in rows] == [q["answer"] for q in questions]
    report = cli("eval", qfile, tmp_path / "run2.jsonl", "--k", "5,20", "--json", tmp_path / "report.json")
    assert report.code == 0, report.stderr
    payload = json.loads((tmp_path / "report.json").read_text())
    assert payload["EM"] == payload["F1"] == 100.0  # the server answered with the gold answers
