"""``gearag bench --limit N``: an index over the N questions' own passages instead of the whole corpus.

A quick check with ``--limit`` should not spend minutes indexing passages no
question asks about. Where the dataset ships each question's passages
(MuSiQue's ``paragraphs``, HotpotQA's ``context``: the distractor setting
these sets were made in), the index holds the union of the first N
questions' passages, taken from the corpus file as they are there (same ids,
same text). A question file without them (HippoRAG's 2Wiki file, a plain
JSONL) gets what those sets did to make theirs: the question's gold passages
plus the :data:`DISTRACTORS` passages BM25 ranks highest for the question
over the whole corpus. Either way the question's gold passages are in.

Retrieval among about ten passages per question is easier than among the
whole corpus: such a run's numbers are marked and are not comparable to a
full run's (:func:`gearag.bench.report.render` says so).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gearag.data import load_corpus
from gearag.data.corpus import join_sentences
from gearag.data.jsonio import read_json_or_jsonl
from gearag.data.questions import GoldMatcher
from gearag.model import Passage, Question

#: Passages BM25 adds per question when the question file ships no passages of its own
#: (HotpotQA's and 2Wiki's distractor settings give 8 beside the gold ones).
DISTRACTORS = 8

_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class Subset:
    """The passages of the first ``questions`` questions, as a corpus for one index."""

    passages: list[Passage]
    questions: int
    corpus_passages: int
    #: ``contexts``: the questions' own passages; ``bm25``: their gold passages + BM25's top DISTRACTORS.
    source: str
    #: Names the questions and the passages: a subset index with another key is rebuilt, not reused.
    key: str

    def describe(self) -> str:
        how = ("the questions' own passages" if self.source == "contexts"
               else f"their gold passages + BM25's top {DISTRACTORS} each")
        return f"{len(self.passages):,} of {self.corpus_passages:,} passages: {how}"

    def summary(self) -> dict[str, Any]:
        """What ``results.json`` and the index's manifest keep of it."""
        return {"questions": self.questions, "passages": len(self.passages),
                "corpus_passages": self.corpus_passages, "source": self.source, "key": self.key}

    def write(self, path: Path) -> Path:
        """The passages as a JSON Lines corpus (with their ids) for the build."""
        with path.open("w", encoding="utf-8") as f:
            for p in self.passages:
                f.write(json.dumps({"id": p.id, "title": p.title, "text": p.text}, ensure_ascii=False) + "\n")
        return path


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _contexts(record: Any) -> list[tuple[str, str]] | None:
    """The (title, text) passages a question record ships (MuSiQue, HotpotQA), or None."""
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("paragraphs"), list):  # MuSiQue
        return [(str(p.get("title", "")), str(p.get("paragraph_text", p.get("text", ""))))
                for p in record["paragraphs"] if isinstance(p, dict)]
    if isinstance(record.get("context"), list):  # HotpotQA: [[title, [sentences]]]
        out = []
        for item in record["context"]:
            if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
                body = item[1]
                text = join_sentences([s for s in body if isinstance(s, str)]) if isinstance(body, list) else str(body)
                out.append((item[0], text))
        return out
    return None


def _records(path: Path) -> list[Any]:
    data = read_json_or_jsonl(path)
    if isinstance(data, dict):
        data = data.get("data") or data.get("questions") or [data]
    return data if isinstance(data, list) else []


def question_subset(corpus: Path, questions_file: Path, questions: Sequence[Question]) -> Subset:
    """The passages of ``questions`` (the first N of ``questions_file``) in ``corpus`` (see the module)."""
    passages = load_corpus(corpus)
    records = _records(questions_file)[: len(questions)]
    by_title_text: dict[tuple[str, str], list[int]] = {}
    by_title: dict[str, list[int]] = {}
    for row, p in enumerate(passages):
        by_title_text.setdefault((p.title, _norm(p.text)), []).append(row)
        by_title.setdefault(p.title, []).append(row)
    matcher = GoldMatcher(passages)
    chosen: set[int] = set()
    own = [_contexts(rec) for rec in records]
    source = "contexts" if own and all(c for c in own) else "bm25"
    if source == "contexts":
        for context in own:
            for title, text in context or ():
                rows = by_title_text.get((title.strip(), _norm(text))) or by_title.get(title.strip(), [])
                chosen.update(rows)
    else:
        chosen.update(_bm25_rows(passages, [q.question for q in questions]))
    for q in questions:
        for gold in matcher.resolve(q):
            chosen.update(gold)
    picked = [passages[row] for row in sorted(chosen)]
    digest = hashlib.sha256()
    for text in [q.id for q in questions] + ["--"] + [p.id for p in picked]:
        digest.update(text.encode() + b"\0")
    return Subset(picked, len(questions), len(passages), source, digest.hexdigest()[:16])


def _bm25_rows(passages: Sequence[Passage], queries: Sequence[str]) -> set[int]:
    """The rows BM25 ranks in the top :data:`DISTRACTORS` for any of ``queries`` (title and text, as the index)."""
    from gearag.retrieve.bm25 import BM25Retriever, build_bm25

    retriever = BM25Retriever(build_bm25([p.content for p in passages]))
    return {hit.idx for query in queries for hit in retriever.retrieve(query, DISTRACTORS)}
