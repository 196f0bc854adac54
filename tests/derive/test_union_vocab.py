"""The union's vocabulary, extended from a stored one, equals the vocabulary computed over every shard."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gearag.data.jsonstrings import JsonStrings
from gearag.derive.union_vocab import UnionVocab, common_prefix
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
    assert os.path.samefile(tmp_path / "g2/union/keys/s0.spans.npy", tmp_path / "g1/union/keys/s0.spans.npy")
    again = UnionVocab.read(tmp_path / "g2", "keys", ["s0", "s1", "s2"], [3, 2, 4])
    assert again is not None and again.items == full.items
    # A prefix reads as the vocabulary of those shards alone.
    head = UnionVocab.read(tmp_path / "g2", "keys", ["s0"], [3])
    assert head is not None and head.items == ["b", "a", "c"]


def test_stored_spans_are_read_instead_of_a_scan_and_written_where_a_generation_lacked_them(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    odd = [["plain", 'say "hi"', "ends in \\", "é ü 日本"], ['\\"', "a,b"]]
    _write(tmp_path / "g1", UnionVocab.extend(None, odd), ["s0", "s1"])
    for shard in ("s0", "s1"):
        (tmp_path / f"g1/union/keys/{shard}.spans.npy").unlink()  # as a generation written before spans were kept
    scanned = UnionVocab.read(tmp_path / "g1", "keys", ["s0", "s1"], [4, 2], chained=True)
    assert scanned is not None and list(scanned.items) == odd[0] + odd[1]
    _write(tmp_path / "g2", scanned, ["s0", "s1"], tmp_path / "g1", 2)  # the next generation stores them
    assert (tmp_path / "g2/union/keys/s0.spans.npy").is_file()
    from gearag.data import jsonstrings

    def no_scan(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("scanned")

    monkeypatch.setattr(jsonstrings, "string_spans", no_scan)
    for chained in (True, False):
        read = UnionVocab.read(tmp_path / "g2", "keys", ["s0", "s1"], [4, 2], chained=chained)
        assert read is not None and list(read.items) == odd[0] + odd[1]
        assert read.find(["a,b", "say \"hi\"", "nope"]).tolist() == [5, 1, -1]
    monkeypatch.undo()
    # Spans that do not fit the text (another writer's) are not trusted: the text is scanned.
    (tmp_path / "g2/union/keys/s1.json").write_text(r'["\\\"",  "a,b"]', encoding="utf-8")
    again = UnionVocab.read(tmp_path / "g2", "keys", ["s0", "s1"], [4, 2])
    assert again is not None and list(again.items) == odd[0] + odd[1]


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
    from gearag.derive import union_vocab

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
