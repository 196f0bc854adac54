"""Finding passages by id without reading every id of the index (``gearag add`` and ``delete``).

An add must refuse an id the index already holds, and a delete must find
the rows of the ids it is given. Reading every stored id for that (a set of
a million strings per ``gearag add`` at a million passages) grew each add
with the corpus. An index therefore stores, beside ``passages.jsonl``, a
64-bit hash of each passage's id in row order (:data:`ID_HASHES`,
:func:`~gearag.hashing.stable_hashes`); a lookup compares
hashes and reads the id of a matching row only to confirm it, so two ids
sharing a hash cost a read, never a wrong answer. Indices written before
the file existed are read id by id, as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gearag import setops
from gearag.errors import IndexFormatError
from gearag.hashing import stable_hashes
from gearag.model import Passage
from gearag.store.collection import load_array
from gearag.store.index import passage_of_record, stored_offsets
from gearag.store.passage_contents import CONTENT_HASHES, content_hash
from gearag.store.rows import JsonlRows

if TYPE_CHECKING:
    from gearag.store.writer import IndexWriter

#: The hashes of the passages' ids, in row order (int64), under an index directory.
ID_HASHES = "arrays/passage_id_hashes.npy"


def find_rows(path: Path, listed: Iterable[str], ids: Iterable[str], dead: np.ndarray | None = None,
              passages: Sequence[Passage] | None = None) -> dict[str, int]:
    """The row of each of ``ids`` among the live rows of the index (or shard) at ``path``: ``listed``, the
    files its manifest lists; ``dead``, its deleted rows; ``passages``, its rows if loaded (else read from its
    file where needed). Ids it does not hold are absent from the result."""
    wanted = set(ids)
    listed = set(listed)
    dead_rows = set(np.asarray(dead if dead is not None else (), dtype=np.int64).tolist())
    candidates: Iterable[tuple[int, str]]
    if ID_HASHES in listed:
        if passages is None:
            passages = JsonlRows(path / "passages.jsonl", passage_of_record,
                                 stored_offsets(path, listed, "passages.jsonl"))
        rows = np.flatnonzero(setops.isin(load_array(path, ID_HASHES), stable_hashes(wanted)))
        candidates = ((r, passages[r].id) for r in rows.tolist())
    else:  # written before the hashes were kept: every id read
        candidates = enumerate(stored_passage_ids(path / "passages.jsonl"))
    return {pid: row for row, pid in candidates if pid in wanted and row not in dead_rows}


def write_passages(writer: IndexWriter, passages: Iterable[Passage]) -> None:
    """``passages.jsonl`` with its row offsets, the ids' hashes (:data:`ID_HASHES`) and the contents' hashes
    (:data:`~gearag.store.passage_contents.CONTENT_HASHES`), as every index has them."""
    ids: list[str] = []
    contents: list[int] = []

    def records() -> Iterator[dict[str, str]]:
        for p in passages:
            ids.append(p.id)
            contents.append(content_hash(p.title, p.text))
            yield {"id": p.id, "title": p.title, "text": p.text}

    writer.write_jsonl("passages.jsonl", records(), offsets=True)
    writer.write_array(ID_HASHES, stable_hashes(ids))
    writer.write_array(CONTENT_HASHES, np.asarray(contents, dtype=np.int64))


__all__ = ["ID_HASHES", "find_rows", "write_passages"]


_ID_PREFIX = '{"id": '


def stored_passage_ids(path: Path) -> list[str]:
    """The passage ids of the ``passages.jsonl`` at ``path`` in row order, reading only each record's id.

    gearag writes ``id`` first in every record, so the id string is decoded
    where it starts; a record of another shape is parsed whole.
    """
    decoder = json.JSONDecoder()
    ids: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                value = decoder.raw_decode(line, len(_ID_PREFIX))[0] if line.startswith(_ID_PREFIX) else None
                if not isinstance(value, str):
                    value = json.loads(line)["id"]
                if not isinstance(value, str):
                    raise TypeError("id is not a string")
            except (ValueError, KeyError, TypeError):
                raise IndexFormatError(f"{path}: row {n} is corrupt; rebuild the index") from None
            ids.append(value)
    return ids
