"""The union's vocabulary of endpoint keys (or names), kept by each generation for the next.

A from-scratch generation numbers the distinct strings of every shard's
endpoint table shard by shard, in first-appearance order (a dict's
``setdefault`` over shard 0's strings, then shard 1's, ...). That numbering
of a shard's strings depends only on the shards before it, so a generation
stores each shard's map from its table's ids to union ids; the next generation
over the same leading shards reuses them, and only the shards after them are
looked up — an add's own strings, not every shard's (6.7M strings, ~20 s of
dict merges in a million-passage add). The strings are stored with the shard
that holds them first (``union/<what>/<shard>.json``), so a generation
hard-links the earlier shards' files instead of rewriting every string.
"""

from __future__ import annotations

import mmap
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gearag.data.jsonio import parse_json
from gearag.data.jsonstrings import ChainedStrings, JsonStrings, strings_at
from gearag.errors import GearagError
from gearag.hashing import stable_hashes
from gearag.store.collection import load_array
from gearag.store.npy import kept_arrays
from gearag.store.rows import map_bytes
from gearag.store.writer import IndexWriter

#: Beside each shard's strings (``union/<what>/<shard>.json``): where each is in that file, an (n, 2) int64
#: array of byte offsets, quotes included (reading it instead of scanning the text: the vocabularies of a 1M
#: index are ~14M strings).
SPANS = ".spans.npy"
_QUOTE = 0x22

UNION_DIR = "union"


class UnionVocab:
    """Distinct strings over shards' tables, shard by shard in first-appearance order, and each shard's map.

    Strings are found by their sorted :func:`stable_hashes` (a candidate is
    compared with the string before it counts), so extending a stored
    vocabulary looks up the new shards' strings alone instead of building a
    dict of every string.
    """

    def __init__(self, items: Sequence[str], remaps: list[np.ndarray], hashes: np.ndarray | None = None,
                 hash_ids: np.ndarray | None = None, spans: Sequence[np.ndarray | None] = ()) -> None:
        #: union id → string: a list, or the stored vocabulary's JSON text (:class:`JsonStrings`: strings are
        #: decoded where one is compared, and gathered as text where the generation writes them in entity order)
        self.items = items
        self.remaps = remaps  #: per shard: table id → union id
        if hashes is None or hash_ids is None:
            hashes = stable_hashes(items)
            hash_ids = np.argsort(hashes, kind="stable")
            hashes = hashes[hash_ids]
        self.hashes, self.hash_ids = hashes, hash_ids  #: sorted hashes and the union id of each
        #: per leading shard read from a generation: where its strings are in its file (:data:`SPANS`), when a
        #: generation that stores none was read (so the next one writes them)
        self.spans = list(spans)

    def find(self, strings: Sequence[str]) -> np.ndarray:
        """The union id of each string (-1: not in the vocabulary)."""
        hashes = stable_hashes(strings)
        at = np.searchsorted(self.hashes, hashes)
        out = np.full(len(strings), -1, dtype=np.int64)
        n = len(self.hashes)
        hit = np.flatnonzero(at < n)
        hit = hit[self.hashes[at[hit]] == hashes[hit]]
        # The first string of each hash, compared at once; a string that is not it (a hash two strings share)
        # is looked for among the others of its hash.
        first = self.hash_ids[at[hit]]
        stored = strings_at(self.items, first)
        for i, s, found, pos in zip(hit.tolist(), stored, first.tolist(), at[hit].tolist(), strict=True):
            if strings[i] == s:
                out[i] = found
                continue
            h, pos = int(hashes[i]), pos + 1
            while pos < n and int(self.hashes[pos]) == h:
                if self.items[int(self.hash_ids[pos])] == strings[i]:
                    out[i] = int(self.hash_ids[pos])
                    break
                pos += 1
        return out

    def taken(self, ids: np.ndarray) -> UnionVocab:
        """The vocabulary of one shard whose table holds strings ``ids`` of this one, in that order (its map the
        identity), with the hashes this one has for them (none computed again)."""
        by_id = np.empty_like(self.hashes)
        by_id[self.hash_ids] = self.hashes
        hashes = by_id[ids]
        order = np.argsort(hashes, kind="stable")
        return UnionVocab(strings_at(self.items, ids), [np.arange(len(ids), dtype=np.int64)], hashes[order],
                          order.astype(self.hash_ids.dtype))

    @classmethod
    def extend(cls, prior: UnionVocab | None, vocabs: Sequence[Sequence[str]]) -> UnionVocab:
        """``prior`` (the leading shards' vocabulary, or none) extended by shards after it with tables'
        strings ``vocabs``."""
        if prior is None:
            lookup: dict[str, int] = {}
            remaps = [np.fromiter((lookup.setdefault(k, len(lookup)) for k in vocab), dtype=np.int64,
                                  count=len(vocab)) for vocab in vocabs]
            return cls(list(lookup), remaps)
        remaps, fresh = list(prior.remaps), dict[str, int]()
        n_prior = len(prior.items)
        for vocab in vocabs:
            ids = prior.find(vocab)
            for i in np.flatnonzero(ids < 0).tolist():
                ids[i] = fresh.setdefault(vocab[i], n_prior + len(fresh))
            remaps.append(ids)
        if not fresh:
            return cls(prior.items, remaps, prior.hashes, prior.hash_ids, prior.spans)
        # The new strings' hashes merged into the sorted ones: what a stable sort of the prior's, then theirs, gives
        # (a new hash after the prior's equal ones; new ones in id order), without sorting 7M hashes again.
        new = stable_hashes(fresh)
        order = np.argsort(new, kind="stable")
        new, new_ids = new[order], n_prior + order.astype(np.int64)
        at = np.searchsorted(prior.hashes, new, side="right")
        hashes, hash_ids = np.insert(prior.hashes, at, new), np.insert(prior.hash_ids, at, new_ids)
        items: Sequence[str]
        if isinstance(prior.items, ChainedStrings):
            items = prior.items.plus(list(fresh))
        elif isinstance(prior.items, JsonStrings):
            items = JsonStrings.concat([prior.items, list(fresh)])
        else:
            items = [*prior.items, *fresh]
        return cls(items, remaps, hashes, hash_ids, prior.spans)

    def bounds(self) -> list[int]:
        """Union ids ``bounds[i]:bounds[i+1]`` are the strings shard ``i`` holds first."""
        out = [0]
        for remap in self.remaps:
            out.append(max(out[-1], int(remap.max()) + 1 if len(remap) else 0))
        return out

    def write(self, w: IndexWriter, what: str, shards: Sequence[str], previous: Path | None = None,
              reused: int = 0) -> None:
        """Per shard, its map and the strings it holds first (``union/<what>/<shard>.npy``/``.json``); the
        first ``reused`` shards' files are hard-linked from ``previous`` (the generation they were read from)."""
        bounds = self.bounds()
        for i, (shard, remap) in enumerate(zip(shards, self.remaps, strict=True)):
            rel = f"{UNION_DIR}/{what}/{shard}"
            if previous is not None and i < reused:
                for suffix in (".npy", ".json"):
                    w.link(rel + suffix, previous / (rel + suffix), previous)
                if (previous / (rel + SPANS)).is_file():
                    w.link(rel + SPANS, previous / (rel + SPANS), previous)
                elif (spans := self.spans[i] if i < len(self.spans) else None) is not None:
                    w.write_array(rel + SPANS, spans)  # found by a scan when read: stored for the next reader
                continue
            w.write_array(f"{rel}.npy", remap)
            text = JsonStrings.of(self.items[bounds[i] : bounds[i + 1]])
            w.write_json(f"{rel}.json", text)
            w.write_array(rel + SPANS, _file_spans(text))
        w.write_array(f"{UNION_DIR}/{what}_hashes.npy", self.hashes)
        w.write_array(f"{UNION_DIR}/{what}_hash_ids.npy", self.hash_ids)

    @classmethod
    def read(cls, directory: Path, what: str, shards: Sequence[str], sizes: Sequence[int],
             chained: bool = False) -> UnionVocab | None:
        """The vocabulary of leading shards ``shards`` stored in ``directory``; None when absent or inconsistent.

        ``sizes``: per shard, how many table ids its map must cover. ``chained``: the shards' strings are kept
        where they were read (:class:`ChainedStrings`), not joined into one text (for a reader that looks a
        few up and writes none).
        """
        parts: list[Sequence[str]] = []
        remaps = []
        scanned: list[np.ndarray | None] = []
        n = 0
        try:
            for shard, size in zip(shards, sizes, strict=True):
                remap = np.asarray(load_array(directory, f"{UNION_DIR}/{what}/{shard}.npy"))
                rel = f"{UNION_DIR}/{what}/{shard}"
                # Mapped, not read: the vocabularies' text (~600 MB at 1M) stays file pages, not the add's own memory.
                raw = map_bytes(directory / f"{rel}.json")
                first: Sequence[str] | None = _stored_text(directory, rel, raw)
                scanned.append(None)
                if first is None:  # no spans stored: the text scanned for them (kept as text, decoded where read)
                    first = JsonStrings.parse(raw)
                    if first is not None:
                        scanned[-1] = first.spans
                if first is None:  # not as orjson writes it: parsed
                    parsed = parse_json(bytes(raw))
                    first = parsed if isinstance(parsed, list) and all(isinstance(x, str) for x in parsed) else None
                if (first is None or remap.ndim != 1 or len(remap) < size
                        or (len(remap) and (int(remap.min()) < 0 or int(remap.max()) >= n + len(first)))):
                    return None
                parts.append(first)
                n += len(first)
                remaps.append(remap)
        except (OSError, ValueError, GearagError):
            return None
        items = ChainedStrings(parts) if chained else JsonStrings.concat(parts)
        # The sorted hashes, when stored for exactly these strings (else computed again).
        hashed = kept_arrays(directory, f"{UNION_DIR}/{what}_hashes.npy", f"{UNION_DIR}/{what}_hash_ids.npy")
        if hashed is None or any(len(a) != len(items) for a in hashed):
            return cls(items, remaps, spans=scanned)
        return cls(items, remaps, hashed[0], hashed[1], scanned)


def _file_spans(text: JsonStrings) -> np.ndarray:
    """Where each string of ``text`` is in the file :func:`~gearag.data.jsonio.dump_json` writes of it."""
    if not len(text):
        return np.zeros((0, 2), dtype=np.int64)
    return np.asarray(text.spans) - int(text.spans[0, 0]) + 1  # after the "["


def _stored_text(directory: Path, rel: str, raw: bytes | mmap.mmap) -> JsonStrings | None:
    """The strings of ``raw`` (the file ``rel``.json) where their spans are stored beside it (:data:`SPANS`), so
    the text need not be scanned for its quotes (~1.2 s for a 1M index's vocabularies); None when absent or
    not this file's."""
    if not (directory / (rel + SPANS)).is_file():
        return None
    kept = kept_arrays(directory, rel + SPANS)
    if kept is None:
        return None
    spans, data = kept[0], np.frombuffer(raw, dtype=np.uint8)
    if spans.ndim != 2 or spans.shape[1] != 2 or spans.dtype != np.int64:
        return None
    if not len(spans):
        return JsonStrings(data, spans) if bytes(raw).strip() == b"[]" else None
    # Every span inside the text, in order, from a quote to a quote (~0.1 s for 14M strings: a damaged or
    # stale file is parsed instead of misread).
    if int(spans[0, 0]) < 1 or int(spans[-1, 1]) > len(data) - 1 or np.any(spans[:, 1] <= spans[:, 0]) \
            or np.any(spans[1:, 0] <= spans[:-1, 1]) or not np.all(data[spans[:, 0]] == _QUOTE) \
            or not np.all(data[spans[:, 1] - 1] == _QUOTE):
        return None
    return JsonStrings(data, spans)


def common_prefix(done: Sequence[str], shards: Sequence[str]) -> int:
    """How many leading shards the lists ``done`` (a previous generation's) and ``shards`` share."""
    return next((i for i, (a, b) in enumerate(zip(done, shards, strict=False)) if a != b), min(len(done), len(shards)))
