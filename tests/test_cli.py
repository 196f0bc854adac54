"""The ``gearag`` command line: end-to-end on real data slices, and bad input.

The end-to-end tests share one spaCy-built index of a 2Wiki slice (module
scope); bad-input tests run the installed console script in a subprocess so
that exit codes and stderr are exactly what a user sees.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import (
    DATA,
    REPO,
    StubExtractor,
    assert_clean_error,
    run_gearag,
    use_stub_extractor,
    wiki_slice,
    write_jsonl,
)
from gearag.cli import main
from gearag.errors import IndexFormatError
from gearag.indexing import work_dir_for
from gearag.store.index import FORMAT_VERSION, MANIFEST, Index

N_PASSAGES = 300
N_QUESTIONS = 20
KS = (2, 5, 10, 15)
METHODS = ("bm25", "dense", "hybrid")
OPENIE = DATA / "musique_train" / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"


def _recall(rows: list[dict], gold: dict[str, list[tuple[str, str | None]]], k: int) -> float:
    """Mean fraction of gold passages in the top k, computed independently of gearag.evaluation."""
    total = 0.0
    for row in rows:
        top = [(p["title"], " ".join(p["text"].split())) for p in row["passages"][:k]]
        refs = gold[row["id"]]
        found = sum(
            1 for title, text in refs
            if any(t == title and (text is None or x == " ".join(text.split())) for t, x in top)
        )
        total += found / len(refs)
    return total / len(rows)


def _assert_run_format(run: Path, question_ids: list[str], questions: dict[str, str], corpus_keys: set,
                       top_k: int) -> list[dict]:
    lines = run.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["id"] for r in rows] == question_ids  # one row per question, in question order
    for row in rows:
        assert {"id", "question", "passages"} <= set(row)
        assert row["question"] == questions[row["id"]]
        passages = row["passages"]
        assert 0 < len(passages) <= top_k
        scores = [p["score"] for p in passages]
        assert all(isinstance(s, float | int) for s in scores)
        assert all(a >= b for a, b in itertools.pairwise(scores)), scores  # best first
        for p in passages:
            assert {"title", "text", "score"} <= set(p)
            assert (p["title"], p["text"]) in corpus_keys
        assert len({p["id"] for p in passages}) == len(passages)
    return rows


# --------------------------------------------------------------------------- 2Wiki end to end


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The first 300 2Wiki passages plus the gold passages of 20 questions, indexed with spaCy rules."""
    root = tmp_path_factory.mktemp("wiki")
    rows, questions = wiki_slice(N_PASSAGES, N_QUESTIONS)
    corpus_path = write_jsonl(root / "corpus.jsonl",
                              [{"id": f"w{i}", "title": p["title"], "text": p["text"]} for i, p in enumerate(rows)])
    questions_path = root / "questions.json"  # HippoRAG's 2Wiki format, as published
    questions_path.write_text(json.dumps(questions), encoding="utf-8")
    index = root / "index"
    code = main(["index", str(corpus_path), "--out", str(index), "--extractor", "spacy"])
    assert code == 0
    return SimpleNamespace(
        root=root,
        corpus=corpus_path,
        questions=questions_path,
        index=index,
        n_passages=len(rows),
        corpus_keys={(p["title"].strip(), p["text"].strip()) for p in rows},
        question_ids=[q["id"] for q in questions],
        question_text={q["id"]: q["question"].strip() for q in questions},
        gold={q["id"]: [(t, None) for t in q["supporting_facts"]] for q in questions},
    )


@pytest.fixture(scope="module")
def wiki_runs(wiki: SimpleNamespace) -> dict[str, SimpleNamespace]:
    """bm25, dense and hybrid run files over the slice, each evaluated with ``eval --corpus --json``."""
    runs = {}
    for method in METHODS:
        run = wiki.root / f"run-{method}.jsonl"
        assert main(["retrieve", str(wiki.index), str(wiki.questions), "--out", str(run),
                     "--method", method, "--top-k", "15"]) == 0
        report = wiki.root / f"eval-{method}.json"
        assert main(["eval", str(wiki.questions), str(run), "--corpus", str(wiki.corpus),
                     "--k", ",".join(map(str, KS)), "--json", str(report)]) == 0
        runs[method] = SimpleNamespace(run=run, report=json.loads(report.read_text(encoding="utf-8")))
    return runs


def test_index_info(cli, wiki: SimpleNamespace) -> None:
    result = cli("info", wiki.index, "--verify")
    assert result.code == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["verified"] is True
    assert info["format_version"] == FORMAT_VERSION
    assert info["counts"]["passages"] == wiki.n_passages
    assert info["counts"]["triples"] > wiki.n_passages  # spaCy rules find several facts per passage
    assert info["counts"]["entities"] > 0
    assert info["config"]["extract"]["extractor"] == "spacy" and info["config"]["embed"]["embedder"] == "wordllama"
    index = Index.load(wiki.index)
    assert index.manifest["extractor_key"].startswith("spacy")
    # Every triple belongs to a passage, and the passage ranges tile the triple table.
    assert index.passage_triple_indptr[0] == 0 and index.passage_triple_indptr[-1] == len(index.triples)
    assert not work_dir_for(wiki.index).exists()


@pytest.mark.parametrize("method", METHODS)
def test_run_file_format(wiki: SimpleNamespace, wiki_runs: dict, method: str) -> None:
    rows = _assert_run_format(wiki_runs[method].run, wiki.question_ids, wiki.question_text, wiki.corpus_keys, 15)
    if method != "bm25":  # dense and hybrid always fill the top k
        assert all(len(r["passages"]) == 15 for r in rows)
    if method == "hybrid":  # reciprocal-rank fusion: the row says its scores are ranks
        assert all(r["score_kind"] == "rank" for r in rows)
        assert all([p["score"] for p in r["passages"]] == pytest.approx([1 / n for n in range(1, 16)], abs=1e-6)
                   for r in rows)
    else:
        assert all("score_kind" not in r for r in rows)


@pytest.mark.parametrize("method", METHODS)
def test_recall_values(wiki: SimpleNamespace, wiki_runs: dict, method: str) -> None:
    report = wiki_runs[method].report
    assert report["n_questions"] == N_QUESTIONS
    rows = [json.loads(line) for line in wiki_runs[method].run.read_text(encoding="utf-8").splitlines()]
    values = []
    for k in KS:
        value = float(report["recall"][f"R@{k}"])
        assert 0.0 <= value <= 100.0
        assert value == pytest.approx(100 * _recall(rows, wiki.gold, k), abs=0.01)
        values.append(value)
    assert values == sorted(values)  # recall never drops as k grows
    assert len(report["per_question"]) == N_QUESTIONS


def test_bm25_recall_is_high(wiki: SimpleNamespace, wiki_runs: dict) -> None:
    rows = [json.loads(line) for line in wiki_runs["bm25"].run.read_text(encoding="utf-8").splitlines()]
    assert _recall(rows, wiki.gold, 15) > 0.5


def test_eval_prints_a_table(cli, wiki: SimpleNamespace, wiki_runs: dict) -> None:
    result = cli("eval", wiki.questions, wiki_runs["bm25"].run, "--k", "5,15")
    assert result.code == 0, result.stderr
    assert "R@5" in result.stdout and "R@15" in result.stdout
    assert f"{wiki_runs['bm25'].report['recall']['R@15']:.1f}" in result.stdout


def test_retrieve_resumes_a_partial_run(cli, wiki: SimpleNamespace, wiki_runs: dict, tmp_path: Path) -> None:
    done = [json.loads(line) for line in wiki_runs["bm25"].run.read_text(encoding="utf-8").splitlines()][:3]
    done[0]["question"] = "SENTINEL: kept from the interrupted run"
    out = tmp_path / "run.jsonl"
    partial = tmp_path / "run.jsonl.partial"
    partial.write_text("".join(json.dumps(r) + "\n" for r in done) + '{"id": "torn', encoding="utf-8")
    result = cli("retrieve", wiki.index, wiki.questions, "--out", out, "--method", "bm25", "--top-k", "15")
    assert result.code == 0, result.stderr
    assert f"resuming: 3 of {N_QUESTIONS}" in result.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == wiki.question_ids
    assert rows[0]["question"] == done[0]["question"]  # not recomputed
    assert rows[3:] == [json.loads(line) for line in
                        wiki_runs["bm25"].run.read_text(encoding="utf-8").splitlines()][3:]
    assert not partial.exists()


def test_ask_json(cli, wiki: SimpleNamespace) -> None:
    question = json.loads(wiki.questions.read_text(encoding="utf-8"))[0]["question"]
    result = cli("ask", wiki.index, question, "--method", "hybrid", "--top-k", "4", "--json")
    assert result.code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["question"] == question
    assert len(payload["passages"]) == 4
    scores = [p["score"] for p in payload["passages"]]
    assert scores == sorted(scores, reverse=True)


# --------------------------------------------------------------------------- MuSiQue with OpenIE triples


def test_musique_openie_end_to_end(cli, tmp_path: Path) -> None:
    openie = json.loads(OPENIE.read_text(encoding="utf-8"))
    corpus = json.loads((DATA / "musique_train" / "musique_train_corpus.json").read_text(encoding="utf-8"))
    raw_questions = json.loads((DATA / "musique_train" / "musique_train.json").read_text(encoding="utf-8"))[:10]
    rows = corpus[:150]
    keys = {(p["title"], p["text"]) for p in rows}
    by_key = {(p["title"], " ".join(p["text"].split())): p for p in corpus}
    for q in raw_questions:
        for para in q["paragraphs"]:
            if para["is_supporting"]:
                p = by_key[(para["title"], " ".join(para["paragraph_text"].split()))]
                if (p["title"], p["text"]) not in keys:
                    rows.append(p)
                    keys.add((p["title"], p["text"]))
    corpus_path = write_jsonl(tmp_path / "musique.jsonl", rows)
    questions_path = tmp_path / "musique_questions.json"
    questions_path.write_text(json.dumps(raw_questions), encoding="utf-8")
    index = tmp_path / "index"

    result = cli("index", corpus_path, "--out", index, "--extractor", f"openie:{OPENIE}")
    assert result.code == 0, result.stderr
    idx = Index.load(index)
    assert idx.manifest["counts"]["passages"] == len(rows)
    # The triples of the first passage are the ones the OpenIE file gives for it.
    doc = openie["docs"][0]
    assert (doc["title"], doc["text"]) == (rows[0]["title"], rows[0]["text"])
    expected = {tuple(" ".join(x.split()) for x in t) for t in doc["extracted_triples"]
                if len(t) == 3 and all(isinstance(x, str) and x.strip() for x in t)}
    got = {idx.triples[i].as_tuple() for i in idx.passage_triples(0)}
    assert got and got <= expected
    assert len(got) >= len(expected) // 2

    run = tmp_path / "run.jsonl"
    result = cli("retrieve", index, questions_path, "--out", run, "--top-k", "15")
    assert result.code == 0, result.stderr
    report_path = tmp_path / "eval.json"
    result = cli("eval", questions_path, run, "--corpus", corpus_path, "--json", report_path)
    assert result.code == 0, result.stderr
    run_rows = _assert_run_format(run, [q["id"] for q in raw_questions],
                                  {q["id"]: q["question"].strip() for q in raw_questions},
                                  {(p["title"], p["text"].strip()) for p in rows}, 15)
    gold = {q["id"]: [(p["title"], p["paragraph_text"]) for p in q["paragraphs"] if p["is_supporting"]]
            for q in raw_questions}
    report = json.loads(report_path.read_text(encoding="utf-8"))
    for k in KS:
        assert float(report["recall"][f"R@{k}"]) == pytest.approx(100 * _recall(run_rows, gold, k), abs=0.01)
    assert _recall(run_rows, gold, 15) > 0.5


# --------------------------------------------------------------------------- bad input (subprocess)


@pytest.fixture
def good_corpus(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", [{"title": "A", "text": "Alpha is first."},
                                                   {"title": "B", "text": "Beta is second."}])


@pytest.fixture
def good_questions(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "questions.jsonl", [{"id": "q1", "question": "Which is first?", "gold": ["A"]}])


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        (b"[]", ["corpus is empty"]),
        (b"", ["file is empty"]),
        (b'{"title": "A", "text": "x"}\n{"title": "B"}\n', ["record 1", "missing 'text' field"]),
        (b'{"id": "1", "title": "A", "text": "x"}\n{"id": "1", "title": "B", "text": "y"}\n',
         ["record 1", "duplicate id '1'"]),
        (b'{"title": "A", "text": "caf\xe9"}\n', ["not valid UTF-8", "line 1"]),
        (b'{"title": "A", "text": "x"}\n{"title": "B", "text": "y"\n', ["line 2", "invalid JSON"]),
    ],
    ids=["empty-list", "empty-file", "missing-text", "duplicate-ids", "non-utf8", "invalid-json"],
)
def test_index_bad_corpus(tmp_path: Path, content: bytes, needles: list[str]) -> None:
    corpus = tmp_path / "corpus.json"  # a .json file may hold JSON or JSON Lines
    corpus.write_bytes(content)
    out = tmp_path / "index"
    line = assert_clean_error(run_gearag("index", corpus, "--out", out, "--extractor", "spacy"), *needles)
    assert str(corpus) in line
    assert not out.exists()


def test_index_invalid_json_in_json_file(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.json"
    corpus.write_text('[{"title": "A", "text": "x"},', encoding="utf-8")
    assert_clean_error(run_gearag("index", corpus, "--out", tmp_path / "index"), "invalid JSON", "line 1")


def test_index_missing_corpus_file(tmp_path: Path) -> None:
    assert_clean_error(run_gearag("index", tmp_path / "nope.jsonl", "--out", tmp_path / "index"), "no such file")


def test_unknown_embedder(tmp_path: Path, good_corpus: Path) -> None:
    assert_clean_error(run_gearag("index", good_corpus, "--out", tmp_path / "index", "--embedder", "glove"),
                       "unknown embedder 'glove'", "wordllama")


def test_unknown_extractor(tmp_path: Path, good_corpus: Path) -> None:
    out = tmp_path / "index"
    assert_clean_error(run_gearag("index", good_corpus, "--out", out, "--extractor", "magic"),
                       "unknown extractor 'magic'", "spacy")
    assert not out.exists()
    assert list(tmp_path.glob(".index.tmp-*")) == []


def test_openie_file_missing(tmp_path: Path, good_corpus: Path) -> None:
    out = tmp_path / "index"
    assert_clean_error(run_gearag("index", good_corpus, "--out", out, "--extractor",
                                  f"openie:{tmp_path / 'missing.json'}"), "missing.json")
    assert not out.exists()


def test_registering_an_extractor_keeps_the_builtins(tmp_path: Path) -> None:
    code = (
        "from gearag.extract.base import register_extractor, make_extractor\n"
        "register_extractor('mine', lambda arg, options: None)\n"
        "print(type(make_extractor('spacy')).__name__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "SpacyRulesExtractor"


def test_index_refuses_existing_out(tiny_index: Index, good_corpus: Path) -> None:
    before = (tiny_index.path / MANIFEST).read_bytes()
    assert_clean_error(run_gearag("index", good_corpus, "--out", tiny_index.path), "already exists", "--overwrite")
    assert (tiny_index.path / MANIFEST).read_bytes() == before


def test_top_k_zero(tiny_index: Index, good_questions: Path, tmp_path: Path) -> None:
    result = run_gearag("retrieve", tiny_index.path, good_questions, "--out", tmp_path / "run.jsonl",
                        "--top-k", "0")
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "--top-k" in result.stderr
    assert not (tmp_path / "run.jsonl").exists()


def test_missing_required_option(good_corpus: Path) -> None:
    result = run_gearag("index", good_corpus)
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "--out" in result.stderr


def test_unknown_method(tiny_index: Index, good_questions: Path, tmp_path: Path) -> None:
    assert_clean_error(run_gearag("retrieve", tiny_index.path, good_questions, "--out", tmp_path / "run.jsonl",
                                  "--method", "telepathy"), "unknown method 'telepathy'", "bm25")
    assert_clean_error(run_gearag("ask", tiny_index.path, "Who?", "--method", "telepathy"), "unknown method")


def test_missing_index_dir(tmp_path: Path, good_questions: Path) -> None:
    missing = tmp_path / "no-index"
    assert_clean_error(run_gearag("info", missing), "no such index directory", str(missing))
    assert_clean_error(run_gearag("retrieve", missing, good_questions, "--out", tmp_path / "run.jsonl"),
                       "no such index directory")


def test_directory_that_is_not_an_index(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert_clean_error(run_gearag("info", tmp_path / "plain"), "not a gearag index")


def test_newer_format_version(tiny_index: Index, tmp_path: Path, good_questions: Path) -> None:
    index = tmp_path / "index"
    shutil.copytree(tiny_index.path, index)
    manifest = json.loads((index / MANIFEST).read_text(encoding="utf-8"))
    manifest["format_version"] += 1
    (index / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert_clean_error(run_gearag("info", index), "newer than this gearag supports", "upgrade gearag")
    assert_clean_error(run_gearag("retrieve", index, good_questions, "--out", tmp_path / "run.jsonl"),
                       "format version")


def test_info_verify_detects_corruption(cli, tiny_index: Index, tmp_path: Path) -> None:
    index = tmp_path / "index"
    shutil.copytree(tiny_index.path, index)
    target = index / "vectors" / "triples.npy"
    data = bytearray(target.read_bytes())
    data[-3] ^= 0x55
    target.write_bytes(bytes(data))
    plain = cli("info", index)
    # Same size, but small files are checksummed on every check, not only with --verify.
    assert plain.code == 2 and "vectors/triples.npy fails its checksum" in plain.stderr
    verified = cli("info", index, "--verify")
    assert verified.code == 2
    assert "vectors/triples.npy fails its checksum" in verified.stderr
    result = run_gearag("info", index, "--verify")
    assert_clean_error(result, "checksum", "rebuild")


def test_eval_gold_not_in_corpus(tmp_path: Path, good_corpus: Path) -> None:
    questions = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "ok", "question": "x?", "gold": ["A"]},
        {"id": "lost-7", "question": "y?", "gold": ["A", ["Zeta", "Zeta is missing."]]},
    ])
    run = write_jsonl(tmp_path / "run.jsonl", [{"id": "ok", "passages": []}, {"id": "lost-7", "passages": []}])
    assert_clean_error(run_gearag("eval", questions, run, "--corpus", good_corpus),
                       "lost-7", "gold passage not in the corpus", "Zeta")


def test_eval_run_mismatch(tmp_path: Path) -> None:
    questions = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "question": "x?", "gold": ["A"]},
                                                   {"id": "b", "question": "y?", "gold": ["B"]}])
    run = write_jsonl(tmp_path / "run.jsonl", [{"id": "a", "passages": []}])
    assert_clean_error(run_gearag("eval", questions, run), "no row for 1 question", "'b'")
    run = write_jsonl(tmp_path / "run2.jsonl", [{"id": "a", "passages": []}, {"id": "b", "passages": []},
                                                {"id": "zzz", "passages": []}])
    assert_clean_error(run_gearag("eval", questions, run), "unknown question id 'zzz'")
    torn = tmp_path / "run3.jsonl"
    torn.write_text('{"id": "a", "passages": []}\n{"id": "b", "pass', encoding="utf-8")
    assert_clean_error(run_gearag("eval", questions, torn), "line 2", "invalid JSON")
    pretty = tmp_path / "q.json"  # a questions file given as the run (the arguments swapped)
    pretty.write_text(json.dumps([{"id": "a", "question": "x?", "gold": ["A"]}], indent=1), encoding="utf-8")
    assert_clean_error(run_gearag("eval", questions, pretty), "not a run file", "QUESTIONS then RUN")
    assert_clean_error(run_gearag("eval", questions, run, "--k", "0,5"), "--k")


def test_bad_questions_file(tiny_index: Index, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_bytes(b'{"id": "a", "question": "ok?"}\n{"id": "b"}\n')
    assert_clean_error(run_gearag("retrieve", tiny_index.path, questions, "--out", tmp_path / "run.jsonl"),
                       "record 1", "missing or empty 'question'")
    assert not (tmp_path / "run.jsonl").exists()


def test_ask_empty_question(tiny_index: Index) -> None:
    assert_clean_error(run_gearag("ask", tiny_index.path, "   "), "question is empty")


# --------------------------------------------------------------------------- big passage, interrupted builds


def test_one_megabyte_passage_indexes(cli, tmp_path: Path) -> None:
    # The spaCy rules need about a minute for 1 MB of text, so a stub extractor stands in;
    # loading, BM25, embedding and writing all see the full passage.
    use_stub_extractor(StubExtractor())
    sentence = "Quokkas live on Rottnest Island near Perth and eat leaves. "
    big = (sentence * (1_000_000 // len(sentence) + 1))[:1_000_000] + " Zanzibarite"
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [
        {"title": "Big", "text": big},
        {"title": "Small", "text": "A small passage about Liverpool."},
    ])
    assert corpus.stat().st_size > 1_000_000
    out = tmp_path / "index"
    # Raise the passage-size limit (default 200,000 characters) so the passage stays whole.
    result = cli("index", corpus, "--out", out, "--extractor", "stub", "--max-passage-chars", 2_000_000)
    assert result.code == 0, result.stderr
    idx = Index.load(out, verify=True)
    assert len(idx.passages[0].text) == len(big.strip())
    questions = write_jsonl(tmp_path / "q.jsonl", [{"id": "q", "question": "Where is Zanzibarite?"}])
    result = cli("retrieve", out, questions, "--out", tmp_path / "run.jsonl", "--method", "hybrid", "--top-k", "1")
    assert result.code == 0, result.stderr
    (row,) = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    assert row["passages"][0]["title"] == "Big"


def _assert_no_loadable_index(parent: Path) -> None:
    for p in parent.iterdir():
        if p.is_dir():
            with pytest.raises(IndexFormatError):
                Index.load(p)


def test_interrupted_build_resumes(cli, tmp_path: Path) -> None:
    n = 12
    corpus = write_jsonl(tmp_path / "corpus.jsonl",
                         [{"title": f"Topic {i}", "text": f"Topic {i} is linked to Place{i} and Person{i}."}
                          for i in range(n)])
    out = tmp_path / "index"
    use_stub_extractor(StubExtractor(fail_after=5, fail_with=KeyboardInterrupt))  # Ctrl-C mid-way
    result = cli("index", corpus, "--out", out, "--extractor", "stub")
    assert result.code == 130
    assert "interrupted" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()
    assert work_dir_for(out).is_dir()
    _assert_no_loadable_index(tmp_path)
    assert cli("info", out).code == 2

    counting = StubExtractor()
    use_stub_extractor(counting)
    result = cli("index", corpus, "--out", out, "--extractor", "stub")
    assert result.code == 0, result.stderr
    assert len(counting.seen) == n - 5  # the first five came from the checkpoint
    info = cli("info", out, "--verify")
    assert info.code == 0
    assert json.loads(info.stdout)["counts"]["passages"] == n
    assert not work_dir_for(out).exists()


_KILLABLE = """
import sys, time
sys.path.insert(0, {tests!r})
from conftest import StubExtractor, use_stub_extractor

class Slow(StubExtractor):
    def extract(self, passages):
        for triples in super().extract(passages):
            time.sleep(0.05)
            yield triples

use_stub_extractor(Slow())
from gearag.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_killed_build_resumes(cli, tmp_path: Path) -> None:
    n = 200
    corpus = write_jsonl(tmp_path / "corpus.jsonl",
                         [{"title": f"Topic {i}", "text": f"Topic {i} mentions Alpha{i} and Beta{i}."}
                          for i in range(n)])
    out = tmp_path / "index"
    script = _KILLABLE.format(tests=str(REPO / "tests"))
    proc = subprocess.Popen([sys.executable, "-c", script, "index", str(corpus), "--out", str(out),
                             "--extractor", "stub"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "GEARAG_PROGRESS": "0"})
    work = work_dir_for(out)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            files = list(work.glob("*.jsonl")) if work.exists() else []
            if files and files[0].read_bytes().count(b"\n") >= 5:
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()
    assert not out.exists()
    _assert_no_loadable_index(tmp_path)
    (ckpt,) = work.glob("*.jsonl")
    done = ckpt.read_bytes().count(b"\n")
    assert 5 <= done < n

    counting = StubExtractor()
    use_stub_extractor(counting)
    result = cli("index", corpus, "--out", out, "--extractor", "stub")
    assert result.code == 0, result.stderr
    assert len(counting.seen) == n - done
    assert Index.load(out, verify=True).manifest["counts"]["passages"] == n


def test_openie_passage_not_in_file(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"title": "Nowhere Land", "text": "Not in any OpenIE file."}])
    out = tmp_path / "index"
    assert_clean_error(run_gearag("index", corpus, "--out", out, "--extractor", f"openie:{OPENIE}"),
                       "no OpenIE result", "Nowhere Land")
    assert not out.exists()


def test_retrieve_restarts_a_partial_run_with_other_settings(cli, wiki: SimpleNamespace, tmp_path: Path) -> None:
    import gearag.api

    out = tmp_path / "run.jsonl"
    calls = {"n": 0}
    real = gearag.api.make_method

    def interrupting(index, name, config=None, **options):
        run = real(index, name, config, **options)

        def wrapped(question, k):
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt
            return run(question, k)

        return wrapped

    gearag.api.make_method = interrupting
    try:
        first = cli("retrieve", wiki.index, wiki.questions, "--out", out, "--method", "bm25")
    finally:
        gearag.api.make_method = real
    assert first.code == 130
    assert (tmp_path / "run.jsonl.partial").exists() and not out.exists()
    second = cli("retrieve", wiki.index, wiki.questions, "--out", out, "--method", "dense")
    assert second.code == 0, second.stderr
    assert "discarded 2 rows" in second.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == wiki.question_ids
