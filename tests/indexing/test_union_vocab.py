"""The union's vocabulary, extended from a stored one, equals the vocabulary computed over every shard."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gearag.data.jsonstrings import JsonStrings
from gearag.indexing.union_vocab import UnionVocab, common_prefix
from gearag.store.writer import IndexWriter

SHARDS = [["b", "a", "c"], ["c", "d"], ["a", "e", "b", "f"]]


def _write(path: Path, vocab: UnionVocab, names: list[str], previous: Path | None = None, reused: int = 0) -> None:
    with IndexWriter(path) as w:
        vocab.write(w, "keys", names, previous, reused)
        w.commit({"kind": "test"})


def test_extending_a_stored_prefix_equals_the_vocabulary_of_every_shard(tmp_path: Path) -> None:
    full = UnionVocab.extend(None, SHARDS)
    assert full.items == ["b", "a", "c", "d", "e", "f"]
    assert [r.tolist() for r in full.remaps] == [[0, 1, 2], [2, 3], [1, 4, 0, 5]]
    first = UnionVocab.extend(None, SHARDS[:2])
    _write(tmp_path / "g1", first, ["s0", "s1"])
    stored = UnionVocab.read(tmp_path / "g1", "keys", ["s0", "s1"], [3, 2])
    assert stored is not None and stored.items == first.items
    assert isinstance(stored.items, JsonStrings)  # read as text: no string is parsed until one is read
    grown = UnionVocab.extend(stored, SHARDS[2:])  # the shards after the stored ones
    assert grown.items == full.items and isinstance(grown.items, JsonStrings)
    assert all(np.array_equal(a, b) for a, b in zip(grown.remaps, full.remaps, strict=True))
    # The next generation hard-links the leading shards' files; only the new shard's are written.
    _write(tmp_path / "g2", grown, ["s0", "s1", "s2"], tmp_path / "g1", 2)
    assert os.path.samefile(tmp_path / "g2/union/keys/s0.json", tmp_path / "g1/union/keys/s0.json")
    again = UnionVocab.read(tmp_path / "g2", "keys", ["s0", "s1", "s2"], [3, 2, 4])
    assert again is not None and again.items == full.items
    # A prefix reads as the vocabulary of those shards alone.
    head = UnionVocab.read(tmp_path / "g2", "keys", ["s0"], [3])
    assert head is not None and head.items == ["b", "a", "c"]


def test_a_vocabulary_another_writer_spaced_out_is_parsed(tmp_path: Path) -> None:
    _write(tmp_path / "g", UnionVocab.extend(None, SHARDS[:2]), ["s0", "s1"])
    (tmp_path / "g/union/keys/s0.json").write_text('["b", "a", "c"]', encoding="utf-8")  # not orjson's text
    read = UnionVocab.read(tmp_path / "g", "keys", ["s0", "s1"], [3, 2])
    assert read is not None and read.items == ["b", "a", "c", "d"]


def test_a_map_that_does_not_fit_its_shard_is_not_trusted(tmp_path: Path) -> None:
    _write(tmp_path / "g", UnionVocab.extend(None, SHARDS[:2]), ["s0", "s1"])
    assert UnionVocab.read(tmp_path / "g", "keys", ["s0", "s1"], [3, 5]) is None  # other table sizes
    assert UnionVocab.read(tmp_path / "g", "keys", ["s0", "sX"], [3, 2]) is None  # a shard it does not hold
    assert common_prefix(["s0", "s1", "s2"], ["s0", "s1", "s9"]) == 2


def test_extended_hashes_are_the_sorted_hashes_of_every_string(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The new strings' hashes are merged in as a stable sort of all of them would place them, equal hashes
    included (forced here by a hash of the length), and every string is found."""
    from gearag.indexing import union_vocab

    monkeypatch.setattr(union_vocab, "stable_hashes", lambda strings: np.array([len(s) for s in strings],
                                                                               dtype=np.uint64))
    rng = np.random.default_rng(4)
    words = ["".join(rng.choice(list("abcdef"), int(rng.integers(1, 6)))) for _ in range(300)]
    shards = [words[i:i + 50] for i in range(0, 300, 50)]
    vocab = UnionVocab.extend(None, shards[:2])
    for shard in shards[2:]:
        vocab = UnionVocab.extend(vocab, [shard])
        fresh = UnionVocab(vocab.items, vocab.remaps)  # hashed and sorted from scratch
        assert np.array_equal(vocab.hashes, fresh.hashes) and np.array_equal(vocab.hash_ids, fresh.hash_ids)
    assert vocab.find(vocab.items).tolist() == list(range(len(vocab.items)))
