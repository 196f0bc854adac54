"""Which documents of an add are new: an add of what the index already holds is skipped.

Rerunning ``gearag add idx more.jsonl`` used to add every document again
under fresh ``p<n>`` ids, silently — and a user whose first add was
interrupted, or who is unsure whether it ran, reruns it. So by default an add
keeps only the documents that are new, as LightRAG's document status does:

* a document whose title and text a live passage of the index already has is
  skipped — whatever its id: one without an id would get a fresh one, and one
  whose id the index gives that very passage is the passage already there
  (a rerun of an add with ids is a no-op, not an id clash). An id the index
  holds for *other* content stays an error (:func:`gearag.indexing.incremental.add_documents`);
* a document repeated within the documents to add (same title and text as an
  earlier one) is skipped after its first occurrence;
* when nothing is left, the add is a no-op: the index is not touched.

``keep_duplicates`` (``gearag add --keep-duplicates``) adds every document as
given, as adds did before. What is skipped is reported (:class:`NewDocuments`):
a skip is never silent either. Deleted passages do not count: re-adding a
deleted document adds it. The check reads no passage text of the index beyond
the rows whose stored content hash matches (:mod:`gearag.store.passage_contents`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gearag.model import Passage
from gearag.store.passage_contents import Content


@dataclass(frozen=True)
class NewDocuments:
    """An add's documents, split into those it adds and those it skips (each skip with the id it duplicates)."""

    #: The documents to add, in their order.
    passages: list[Passage]
    #: ``(id in the documents, id of the index's passage with the same title and text)`` per skipped document.
    in_index: list[tuple[str, str]] = field(default_factory=list)
    #: ``(id, id of the earlier document with the same title and text)`` per repeat within the documents.
    repeated: list[tuple[str, str]] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return len(self.in_index) + len(self.repeated)

    @property
    def total(self) -> int:
        return len(self.passages) + self.skipped


def new_documents(passages: Sequence[Passage], held: Callable[[Sequence[Passage]], dict[Content, str]],
                  *, keep_duplicates: bool = False) -> NewDocuments:
    """``passages`` without those the index holds (``held``: the id a live passage with each content has, for
    those it holds) and without repeats of an earlier one; all of them with ``keep_duplicates``."""
    if keep_duplicates:
        return NewDocuments(list(passages))
    in_index = held(passages)
    kept: list[Passage] = []
    first: dict[Content, str] = {}
    skipped_held: list[tuple[str, str]] = []
    repeated: list[tuple[str, str]] = []
    for p in passages:
        content = (p.title, p.text)
        if content in in_index:
            skipped_held.append((p.id, in_index[content]))
        elif content in first:
            repeated.append((p.id, first[content]))
        else:
            first[content] = p.id
            kept.append(p)
    return NewDocuments(kept, skipped_held, repeated)


__all__ = ["NewDocuments", "new_documents"]
