"""Finding passages by content — title and text — without reading every passage (``gearag add``'s duplicate check).

An add skips a document the index already holds (same title and same text),
so rerunning an add that ran, or one whose first run the user is unsure of,
does not duplicate passages. Reading every stored passage to know that would
make each add as slow as the index is large (a million passages: ~1 GB of
text), so every index stores, beside ``passages.jsonl``, a 64-bit hash of each
passage's ``title + "\\n" + text`` in row order (:data:`CONTENT_HASHES`). A
lookup compares hashes and reads a matching row only to confirm it: two
contents sharing a hash (or a title holding the newline, which the hashed
string cannot tell apart from the text's) cost a read, never a wrong answer.
Indices written before the file existed have every passage read instead —
once per add, until ``gearag compact`` (or the first add converting a plain
index) stores the hashes.

The hash is XXH3-64 (:mod:`xxhash`, the checksums' library) rather than the
blake2b of :func:`gearag.hashing.stable_hashes`: a passage is hundreds of
characters where an id is a few, and XXH3 hashes them ~8x faster.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import xxhash

from gearag import setops
from gearag.model import Passage
from gearag.store.collection import load_array
from gearag.store.index import passage_of_record, stored_offsets
from gearag.store.rows import JsonlRows

#: The hashes of the passages' titles and texts, in row order (int64), under an index directory.
CONTENT_HASHES = "arrays/passage_content_hashes.npy"

#: A passage's content as an add compares it: its title and its text, as the corpus loader left them.
Content = tuple[str, str]


def content_hash(title: str, text: str) -> int:
    """The stored hash of one passage's content (signed 64-bit, as the array holds it)."""
    value = xxhash.xxh3_64_intdigest(f"{title}\n{text}".encode("utf-8", "surrogatepass"))
    return value - (1 << 64) if value >= 1 << 63 else value


def content_hashes(passages: Iterable[Passage]) -> np.ndarray:
    """:func:`content_hash` of each passage, in order (int64)."""
    return np.fromiter((content_hash(p.title, p.text) for p in passages), dtype=np.int64)


def find_contents(path: Path, listed: Iterable[str], wanted: Sequence[Passage], dead: np.ndarray | None = None,
                  passages: Sequence[Passage] | None = None) -> dict[Content, str]:
    """The id of a live row holding each content of ``wanted`` in the index (or shard) at ``path``: ``listed``,
    the files its manifest lists; ``dead``, its deleted rows; ``passages``, its rows if loaded (else read from
    its file where needed). Contents it does not hold are absent; where several rows hold one, the first."""
    contents = {(p.title, p.text) for p in wanted}
    listed = set(listed)
    dead_rows = set(np.asarray(dead if dead is not None else (), dtype=np.int64).tolist())
    if passages is None:
        passages = JsonlRows(path / "passages.jsonl", passage_of_record, stored_offsets(path, listed, "passages.jsonl"))
    candidates: Iterable[tuple[int, Passage]]
    if CONTENT_HASHES in listed:
        rows = np.flatnonzero(setops.isin(load_array(path, CONTENT_HASHES), content_hashes(wanted)))
        candidates = ((r, passages[r]) for r in rows.tolist())
    else:  # written before the hashes were kept: every passage read, in order
        candidates = enumerate(passages)
    found: dict[Content, str] = {}
    for row, p in candidates:
        if (p.title, p.text) in contents and row not in dead_rows:
            found.setdefault((p.title, p.text), p.id)
    return found


__all__ = ["CONTENT_HASHES", "Content", "content_hash", "content_hashes", "find_contents"]
