"""A base's and a delta's rows and names gathered into one plain layer (``gearag.graph.flatten``)."""

from __future__ import annotations

import numpy as np
import pytest

from gearag.arrays import Csr, LayeredCsr
from gearag.graph.flatten import flat_rows, merged_names
from gearag.graph.layered import LayeredNames
from gearag.graph.trie import HashedNames


def _rows(m: Csr | LayeredCsr) -> list[list[tuple[int, float, int]]]:
    """Each row's entries as (target, weight, scale id), in stored order."""
    counts, idx, data, sids = m.gather(np.arange(m.n_rows, dtype=np.int64))
    sids = np.zeros(len(idx), np.int64) if sids is None else sids
    out, at = [], 0
    for c in counts.tolist():
        out.append(list(zip(np.asarray(idx[at : at + c]).tolist(), np.asarray(data[at : at + c]).tolist(),
                            np.asarray(sids[at : at + c]).tolist(), strict=True)))
        at += c
    return out


@pytest.mark.parametrize("by_target", [True, False])
def test_flat_rows_read_as_the_layers_do(by_target: bool) -> None:
    """Rows the delta left alone are the base's as stored; an appended row is the base's entries then the delta's,
    a replaced row the delta's, a new row the delta's; sorted by target where asked."""
    base = Csr(np.asarray([0, 2, 3, 5, 6]), np.asarray([1, 4, 0, 2, 3, 4], np.int32),
               np.asarray([1, 2, 3, 4, 5, 6], np.float32), np.asarray([0, 1, 0, 2, 0, 1], np.int32))
    # Row 0 gains target 0 (appended); row 2 is replaced; rows 4 and 5 are new (5 empty).
    layered = LayeredCsr.over(base, 6, np.asarray([2]), np.asarray([0, 2, 4, 4]), np.asarray([0, 1, 3, 0]),
                              np.asarray([7.0, 8.0, 9.0, 1.5]), np.asarray([2, 0, 1, 0]))
    flat = flat_rows(layered, by_target)
    assert isinstance(flat, Csr) and flat.n_rows == 6
    got, want = _rows(flat), _rows(layered)
    for r, (g, w) in enumerate(zip(got, want, strict=True)):
        if by_target:
            assert g == sorted(w, key=lambda e: e[0]), r
        else:
            assert g == w, r
    assert got[1] == _rows(base)[1] and got[3] == _rows(base)[3]  # left alone
    assert flat.indices.dtype == np.int32 and flat.data.dtype == np.float32 and flat.sids is not None
    assert flat_rows(base, by_target) is base  # plain rows stay as they are


def test_merged_names_scan_as_the_two_layers_do() -> None:
    base = HashedNames.from_keys(["alpha", "beta gamma", "delta"], np.asarray([0, 1, 2]))
    delta = HashedNames.from_keys(["beta", "epsilon zeta"], np.asarray([3, 4]))
    layered, merged = LayeredNames(base, delta), merged_names(LayeredNames(base, delta))
    assert not isinstance(merged, LayeredNames) and merged.size == layered.size == 5
    for text in (["alpha", "and", "beta", "gamma"], ["beta", "epsilon", "zeta", "delta"], ["epsilon"]):
        assert [(m.start, m.end, m.name) for m in merged.scan(text)] == \
            [(m.start, m.end, m.name) for m in layered.scan(text)], text
    assert [(m.start, m.end, m.name) for m in merged.scan(["beta", "epsilon", "zeta", "delta"])] == \
        [(0, 1, 3), (1, 3, 4), (3, 4, 2)]  # a name of each layer, a two-token one among them
    assert merged_names(base) is base
