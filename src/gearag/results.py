"""A method's result for one question, and the one function that turns it into a run-file row.

Row contract (``gearag retrieve`` output, the service's JSON, the benchmarks)::

    {"id", "question", "passages": [{"id", "title", "text", "score"}, ...], "answer"?, "trace"?}

best first; ``trace`` is the typed trace's ``to_dict()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gearag.model import Hit
from gearag.trace import Trace

if TYPE_CHECKING:
    from gearag.store.index import Index

#: Digits kept of each score in a row.
SCORE_DIGITS = 6


@dataclass
class Result:
    """Ranked passages (rows of ``index.passages``), an optional answer and what the method did."""

    passages: list[Hit]
    trace: Trace | None = None
    answer: str | None = None

    @property
    def answer_label(self) -> str:
        label = getattr(self.trace, "answer_label", None)
        return label or "answer"


def result_row(index: Index, result: Result, *, qid: str | None = None, question: str | None = None) -> dict[str, Any]:
    """The run-file row of ``result`` (``id``/``question`` only when given)."""
    row: dict[str, Any] = {}
    if qid is not None:
        row["id"] = qid
    if question is not None:
        row["question"] = question
    passages = []
    for h in result.passages:
        p = index.passages[h.idx]
        passages.append({"id": p.id, "title": p.title, "text": p.text, "score": round(h.score, SCORE_DIGITS)})
    row["passages"] = passages
    if result.answer is not None:
        row["answer"] = result.answer
    if result.trace is not None:
        row["trace"] = result.trace.to_dict()
    return row
