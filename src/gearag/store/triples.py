"""The triples ``T`` of an index as parallel columns (subject, predicate, object, source passage).

Both backends hand them out in this shape: the embedded index reads its ``triples.jsonl`` rows on demand
(:mod:`gearag.store.rows`), the Lance index fetches each column from its table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gearag.model import Fact, Triple
from gearag.store.rows import Column, JsonlRows, Mapped, rows_at


def triple_of_record(row: Any) -> tuple[str, str, str]:
    """A ``triples.jsonl`` record (``[subject, predicate, object]``) as a tuple."""
    s, p, o = row
    return s, p, o


@dataclass
class TripleTable:
    """The triples ``T`` as parallel columns; ``passage[i]`` is triple ``i``'s passage row."""

    subjects: Sequence[str]
    predicates: Sequence[str]
    objects: Sequence[str]
    passage: np.ndarray
    #: The triples as ``[s, p, o]`` rows when the columns are views of them (a loaded index reads its
    #: rows from ``triples.jsonl`` on demand, :mod:`gearag.store.rows`): one parse per triple read.
    rows: Sequence[Sequence[str]] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of_rows(cls, rows: Sequence[Sequence[str]], passage: np.ndarray) -> TripleTable:
        """The table whose columns are fields 0, 1, 2 of ``rows``."""
        return cls(Column(rows, 0), Column(rows, 1), Column(rows, 2), passage, rows)

    @classmethod
    def read(cls, path: Path, passage: np.ndarray, offsets: np.ndarray | None = None) -> TripleTable:
        """The table of the ``triples.jsonl`` at ``path``, its rows read on demand (not held as strings;
        ``offsets``: its stored row offsets, if any)."""
        return cls.of_rows(JsonlRows(path, triple_of_record, offsets), passage)

    def __len__(self) -> int:
        return len(self.subjects)

    def __getitem__(self, i: int) -> Triple:
        if self.rows is not None:
            s, p, o = self.rows[i]
            return Triple(s, p, o, int(self.passage[i]))
        return Triple(self.subjects[i], self.predicates[i], self.objects[i], int(self.passage[i]))

    def facts(self, ids: Sequence[int]) -> list[Fact]:
        """Triples ``ids`` as facts (``source``: the id), read together: one parse per triple when the columns
        are views of rows, else one read per column (one take each on a Lance index)."""
        if self.rows is not None:
            spo = rows_at(self.rows, ids)
        else:
            spo = list(zip(rows_at(self.subjects, ids), rows_at(self.predicates, ids), rows_at(self.objects, ids),
                           strict=True))
        return [Fact(s, p, o, source=int(t)) for t, (s, p, o) in zip(ids, spo, strict=True)]

    def text(self, i: int) -> str:
        if self.rows is not None:
            return " ".join(self.rows[i])
        return f"{self.subjects[i]} {self.predicates[i]} {self.objects[i]}"

    def texts(self) -> Sequence[str]:
        """Each triple as the text retrievers and embedders see: ``"s p o"`` (a view, read on demand, when
        the table is a view of rows)."""
        if self.rows is not None:
            return Mapped(self.rows, " ".join)
        return [f"{s} {p} {o}" for s, p, o in zip(self.subjects, self.predicates, self.objects, strict=True)]
