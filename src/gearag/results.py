"""A method's result for one question, and the one function that turns it into a run-file row.

Row contract (``gearag retrieve`` output, the service's JSON, the benchmarks)::

    {"id", "question", "passages": [{"id", "title", "text", "score", "evidence"?}, ...], "score_kind"?,
     "answer"?, "trace"?}

best first; ``trace`` is the typed trace's ``to_dict()``. ``"evidence": true``
marks the passages the answer rests on (the passages its evidence facts were
read from; the GEAR agent ranks them first). ``score_kind`` says what
``score`` is when it is not the method's own score: ``"rank"`` — ``1 / rank``,
for a method whose ranking has no per-passage score it could show (the GEAR
agent's merges a PPR ranking, its steps' passages and the evidence; a
reciprocal-rank fusion — hybrid, NaiveGE/SyncGE, title-link — scores every
passage near ``1 / 60``); the order is all it says, so people are shown the
rank, not the number. A hit on another
collection than the passages (a SiReRAG pool node) also names its
``collection``, ``level``, ``tree`` and ``kind``, and lists the passages it
covers as ``sources: [{"id", "title"}, ...]``; its ``id`` is the passage's
for a passage node and ``"<collection>:<row>"`` otherwise, and its ``title``
is empty unless it is a passage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gearag.model import Hit
from gearag.store.collection import PASSAGES
from gearag.trace import Trace

if TYPE_CHECKING:
    from gearag.store.interface import IndexStore

#: Digits kept of each score in a row.
SCORE_DIGITS = 6

#: ``Result.score_kind`` of a ranking without per-passage scores: each score is ``1 / rank``.
RANK = "rank"


def rank_scores(order: Sequence[int]) -> list[Hit]:
    """``order`` as hits scored ``1 / rank`` (:data:`RANK`): for methods that rank but do not score."""
    return [Hit(r, 1.0 / (i + 1)) for i, r in enumerate(order)]


@dataclass
class Result:
    """Ranked hits, an optional answer and what the method did.

    Hits are rows of ``index.passages`` unless they name another collection
    (``Hit.collection``; the base methods over a SiReRAG pool).
    """

    passages: list[Hit]
    trace: Trace | None = None
    answer: str | None = None
    #: Rows of ``index.passages`` the answer rests on, in evidence order (flagged in the row).
    evidence: list[int] = field(default_factory=list)
    #: What ``Hit.score`` is: None — the method's own score; :data:`RANK` — ``1 / rank``, the order only.
    score_kind: str | None = None

    @property
    def answer_label(self) -> str:
        label = getattr(self.trace, "answer_label", None)
        return label or "answer"


def result_row(index: IndexStore, result: Result, *, qid: str | None = None,
               question: str | None = None) -> dict[str, Any]:
    """The run-file row of ``result`` (``id``/``question`` only when given)."""
    row: dict[str, Any] = {}
    if qid is not None:
        row["id"] = qid
    if question is not None:
        row["question"] = question
    passages = []
    evidence = set(result.evidence)
    for h in result.passages:
        if h.collection == PASSAGES:
            p = index.passages[h.idx]
            entry: dict[str, Any] = {"id": p.id, "title": p.title, "text": p.text,
                                     "score": round(h.score, SCORE_DIGITS)}
            if h.idx in evidence:
                entry["evidence"] = True
            passages.append(entry)
        else:
            passages.append(node_entry(index, h))
    row["passages"] = passages
    if result.score_kind is not None:
        row["score_kind"] = result.score_kind
    if result.answer is not None:
        row["answer"] = result.answer
    if result.trace is not None:
        row["trace"] = result.trace.to_dict()
    return row


def node_entry(index: IndexStore, hit: Hit) -> dict[str, Any]:
    """The run-file entry of a hit on a collection other than the passages (a pool node)."""
    coll = index.collection(hit.collection)
    sources = [index.passages[r] for r in coll.sources(hit.idx)]
    record = coll.record(hit.idx) if coll.spec.records else {"text": coll.texts()[hit.idx]}
    entry: dict[str, Any]
    if record.get("kind") == "chunk" and len(sources) == 1:
        p = sources[0]
        entry = {"id": p.id, "title": p.title, "text": p.text}
    else:
        entry = {"id": f"{coll.name}:{hit.idx}", "title": "", "text": record["text"]}
    entry["score"] = round(hit.score, SCORE_DIGITS)
    entry["collection"] = coll.name
    for key in ("level", "tree", "kind"):
        if key in record:
            entry[key] = record[key]
    entry["sources"] = [{"id": p.id, "title": p.title} for p in sources]
    return entry
