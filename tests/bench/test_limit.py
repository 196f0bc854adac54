"""``gearag bench --limit N``: an index over those questions' own passages (marked in the results), a full index
reused where there is one, and progress lines on a piped stderr."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, VENV_BIN, write_wiki_slice
from gearag.bench import report
from gearag.bench.subset import DISTRACTORS, question_subset
from gearag.data import load_corpus, load_questions

MUSIQUE = DATA / "musique_train"
MUSIQUE_CORPUS = MUSIQUE / "musique_train_corpus.json"
MUSIQUE_QUESTIONS = MUSIQUE / "musique_train.json"
_WS = re.compile(r"\s+")


def _bench(*argv: object, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``gearag bench`` in a subprocess with stderr a pipe (not a terminal) and GEARAG_PROGRESS as ``env`` says."""
    exe = VENV_BIN / "gearag"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "gearag.cli"]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GEARAG_PROGRESS")}
    return subprocess.run([*cmd, "bench", *map(str, argv)], capture_output=True, text=True, timeout=timeout,
                          env={**environ, **(env or {})}, stdin=subprocess.DEVNULL, check=False)


def _own_passages(n: int) -> int:
    """How many MuSiQue corpus passages the first ``n`` questions' paragraphs are (title and text)."""
    wanted = {(p["title"], _WS.sub(" ", p["paragraph_text"]).strip())
              for q in json.loads(MUSIQUE_QUESTIONS.read_text(encoding="utf-8"))[:n] for p in q["paragraphs"]}
    return sum((p.title, _WS.sub(" ", p.text).strip()) in wanted for p in load_corpus(MUSIQUE_CORPUS))


def test_limit_indexes_only_the_questions_own_passages_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "b2"
    done = _bench("--corpus", MUSIQUE_CORPUS, "--questions", MUSIQUE_QUESTIONS, "--limit", 2, "--methods", "bm25",
                  "--no-ablations", "--out", out, env={"GEARAG_PROGRESS_EVERY": "0"})
    assert done.returncode == 0, done.stderr
    expected = _own_passages(2)
    assert 20 <= expected <= 40  # two questions, 20 paragraphs each (a paragraph may be shared)
    manifest = json.loads((out / "indices" / "musique_train-spacy-wordllama-first2" / "manifest.json").read_text())
    assert manifest["counts"]["passages"] == expected
    assert not (out / "indices" / "musique_train-spacy-wordllama").exists()  # no full index was built
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert run["index"]["subset"]["passages"] == expected
    assert run["index"]["subset"]["corpus_passages"] == 1890 and run["index"]["subset"]["source"] == "contexts"
    md = (out / "results.md").read_text()
    assert "--limit 2: not comparable to full runs." in md
    assert f"musique_train {expected:,} of 1,890 passages (the questions' own paragraphs)" in md
    assert "| method | musique_train (2 q, subset) R@2 |" in md
    assert f"| {expected} (subset of 1,890) |" in md
    # stderr is a pipe: the build's stages and its long steps (every step, with GEARAG_PROGRESS_EVERY=0) show.
    assert f"over {expected} of 1,890 passages" in done.stderr
    for stage in ("extract", "graph", "bm25", "embed"):
        assert f"stage {stage} done in" in done.stderr, stage
    assert re.search(r"\d+/\d+ \(\d+%\), \d+ s", done.stderr), done.stderr
    # The same questions again: the subset index is reused.
    again = _bench("--corpus", MUSIQUE_CORPUS, "--questions", MUSIQUE_QUESTIONS, "--limit", 2, "--methods", "bm25",
                   "--no-ablations", "--out", out)
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "results.json").read_text())["runs"][0]["index"]["reused"] is True
    assert "stage extract" not in again.stderr


def test_limit_reuses_a_full_index_and_full_corpus_builds_one(tmp_path: Path) -> None:
    corpus, questions = write_wiki_slice(tmp_path, 30, 6, "wiki_corpus.json", "wiki.json")
    out = tmp_path / "out"
    full = _bench("--corpus", corpus, "--questions", questions, "--limit", 2, "--full-corpus", "--methods", "bm25",
                  "--no-ablations", "--out", out, env={"GEARAG_PROGRESS": "0"})
    assert full.returncode == 0, full.stderr
    assert "progress" not in full.stderr and "stage extract" not in full.stderr  # GEARAG_PROGRESS=0: none
    passages = len(load_corpus(corpus))
    manifest = json.loads((out / "indices" / "wiki-spacy-wordllama" / "manifest.json").read_text())
    assert manifest["counts"]["passages"] == passages
    md = (out / "results.md").read_text()
    assert "over the full corpus's index" in md and "subset" not in md
    # Without --full-corpus, the full index that is there now is reused, not a subset built.
    quick = _bench("--corpus", corpus, "--questions", questions, "--limit", 3, "--methods", "bm25",
                   "--no-ablations", "--out", out)
    assert quick.returncode == 0, quick.stderr
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert run["index"]["reused"] is True and "subset" not in run["index"]
    assert not (out / "indices" / "wiki-spacy-wordllama-first3").exists()
    assert run["rows"][0]["n"] == 3


def test_a_question_file_without_passages_gets_gold_plus_bm25_distractors(tmp_path: Path) -> None:
    corpus, questions_file = write_wiki_slice(tmp_path, 200, 8)
    questions = load_questions(questions_file)[:3]
    subset = question_subset(corpus, questions_file, questions)
    assert subset.source == "bm25" and subset.questions == 3
    titles = {p.title for p in subset.passages}
    gold = {ref.title for q in questions for ref in q.gold}
    assert gold <= titles
    assert len(gold) < len(subset.passages) <= len(gold) + 3 * DISTRACTORS
    everything = load_corpus(corpus)
    assert subset.corpus_passages == len(everything)
    assert all(p in everything for p in subset.passages)  # the corpus's own passages, ids and text
    assert question_subset(corpus, questions_file, questions).key == subset.key
    assert question_subset(corpus, questions_file, questions[:2]).key != subset.key


@pytest.mark.parametrize("name", ["hotpotqa_train", "musique_train"])
def test_shipped_contexts_are_the_subset(name: str) -> None:
    folder = DATA / name
    questions = load_questions(folder / f"{name}.json")[:4]
    subset = question_subset(folder / f"{name}_corpus.json", folder / f"{name}.json", questions)
    assert subset.source == "contexts"
    per_question = 10 if name == "hotpotqa_train" else 20
    assert 2 * per_question < len(subset.passages) <= 4 * per_question


def test_the_results_page_marks_a_subset_run() -> None:
    index = {"counts": {"passages": 45}, "seconds": 1.0,
             "subset": {"questions": 5, "passages": 45, "corpus_passages": 6119, "source": "bm25", "key": "k"}}
    rows = [{"label": "bm25", "recall": {"2": 50.0, "5": 60.0, "10": 70.0, "15": 80.0}, "median_ms": 1.0, "n": 5}]
    results = {"command": "gearag bench --limit 5", "machine": "m", "date": "d", "limit": 5,
               "runs": [{"dataset": "2wiki", "extractor": "spacy", "embedder": "wordllama", "index": index,
                         "rows": rows}]}
    md = report.render(results)
    assert md.index("not comparable to full runs") < md.index("### Recall")
    assert ("2wiki 45 of 6,119 passages (its question file ships no paragraphs: each question's gold passages "
            "plus BM25's top 8)") in md
    assert "| 2wiki (5 q, subset) R@2 |" in md and "| 45 (subset of 6,119) |" in md
    results["limit"] = None
    del index["subset"]
    assert "comparable" not in report.render(results) and "subset" not in report.render(results)
