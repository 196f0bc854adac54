"""A delta add's text scan through the previous delta add's equals scanning everything again."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gearag.derive.delta_scan import TextScan, scan_texts
from gearag.derive.token_index import TokenIndex
from gearag.derive.union_resolve import GrownLexicon, grown_lexicon
from gearag.graph.trie import NameLookup
from gearag.model import Passage
from gearag.store.writer import IndexWriter

BASE = [Passage("b0", "Alpha", "Alpha Beta met Gamma in Delta City."), Passage("b1", "Nil", "Nothing here at all."),
        Passage("b2", "Delta City", "Delta City Hall is old, near Epsilon Road.")]
SHARD_A = [Passage("a0", "Gamma", "Gamma visited Delta City Hall."),
           Passage("a1", "Epsilon", "Epsilon wrote of Delta.")]
SHARD_B = [Passage("c0", "Delta City Hall", "Delta City Hall is a building."),
           Passage("c1", "Alpha Beta", "Alpha Beta is a duo from Epsilon Road.")]
BASE_NAMES = ["alpha", "nil", "delta city", "delta"]
A_NAMES = ["gamma", "epsilon"]  # new with shard A
B_NAMES = ["delta city hall", "alpha beta", "epsilon road"]  # new with shard B: longer names hide shorter matches


def _indices(shards: list[list[Passage]]) -> list[tuple[TokenIndex, np.ndarray]]:
    out, at = [], 0
    for shard in shards:
        out.append((TokenIndex.compute([p.text for p in shard]), np.arange(at, at + len(shard))))
        at += len(shard)
    return out


def _lexicon(names: list[str], n_base: int) -> GrownLexicon:
    """A lexicon of ``names`` (the base's first); its entries do not matter to the scan."""
    none = (np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0))
    return GrownLexicon(names, {k: i for i, k in enumerate(names)}, n_base, none)


def _pairs(scan: TextScan) -> set[tuple[int, int]]:
    return set(zip(scan.match_rows.tolist(), scan.match_names.tolist(), strict=True))


def test_a_scan_through_the_previous_one_is_the_scan_of_everything(tmp_path: Path) -> None:
    new_from = len(BASE)
    first_names = BASE_NAMES + A_NAMES
    first = scan_texts(BASE + SHARD_A, new_from, _indices([BASE, SHARD_A]), _lexicon(first_names, len(BASE_NAMES)),
                       NameLookup(first_names))
    assert first.again.tolist() == [0, 2]  # base rows holding "gamma" or "epsilon"
    with IndexWriter(tmp_path / "g") as w:  # kept in the delta generation, read back by the next add
        first.write(w)
        w.commit({"kind": "test"})
    kept = TextScan.read(tmp_path / "g")
    assert kept is not None and _pairs(kept) == _pairs(first) and kept.passages == len(BASE + SHARD_A)
    assert kept.new_names == A_NAMES
    names = first_names + B_NAMES
    passages, indices = BASE + SHARD_A + SHARD_B, _indices([BASE, SHARD_A, SHARD_B])
    lexicon = _lexicon(names, len(BASE_NAMES))
    through = scan_texts(passages, new_from, indices, lexicon, NameLookup(names), kept)
    again = scan_texts(passages, new_from, indices, lexicon, NameLookup(names))
    assert through.again.tolist() == again.again.tolist() == [0, 2]
    assert _pairs(through) == _pairs(again)
    # "delta city hall" hides "delta city" in a base row and in a row of shard A, both scanned again.
    hall, city = names.index("delta city hall"), names.index("delta city")
    assert {(2, hall), (3, hall)} <= _pairs(through) and not {(2, city), (3, city)} & _pairs(through)
    # A scan of another base, or of more names than there are now, is not used: everything is scanned.
    other = kept._replace(base_names=len(BASE_NAMES) + 1, match_names=kept.match_names + 1)  # misread if used
    assert _pairs(scan_texts(passages, new_from, indices, lexicon, NameLookup(names), other)) == _pairs(again)
    assert TextScan.read(tmp_path / "nothing") is None


def test_a_lexicon_grown_through_an_earlier_one_is_the_lexicon_grown_at_once() -> None:
    """The names new since the old lexicon get the same ids, and the passages the same entries, whether the
    passages since it are read at once or after an earlier call over the first of them."""
    from gearag.derive.union_resolve import LexiconSince, ResolveState

    passages = BASE + SHARD_A + SHARD_B
    old = ResolveState(BASE_NAMES, (np.zeros(0, np.int64),) * 3, (np.zeros(0, np.int64),) * 2, None)
    at_once = grown_lexicon(passages, old, len(BASE))
    first = grown_lexicon(passages[: len(BASE + SHARD_A)], old, len(BASE))
    since = LexiconSince(first.names[first.n_prior :], first.added, len(BASE + SHARD_A))
    through = grown_lexicon(passages, old, len(BASE), since)
    assert through.names == at_once.names and through.ids == at_once.ids and through.n_prior == len(BASE_NAMES)
    entries = [set(zip(*(a.tolist() for a in g.added), strict=True)) for g in (through, at_once)]
    assert entries[0] == entries[1] and len(through.added[0]) == len(at_once.added[0])
    assert len(at_once.names) > len(first.names) > len(BASE_NAMES)  # each shard brings names
