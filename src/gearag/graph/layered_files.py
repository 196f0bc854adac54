"""A prepared graph that is a base's and a delta's, as files (docs/delta.md).

A generation written as a delta keeps the base generation's prepared files
as they are, hard-linked under ``prepared/base/`` (with the base's own
``prepared.json`` copied into the delta's, under ``delta.base``), and writes
beside them only what the delta holds: per source of the transition, the
delta's rows (``delta_<source>_*.npy``), which row each layered row reads
there (``where_<source>.npy``, -1: the base's alone) and whether it follows
the base's row or replaces it (``appends_<source>.npy``); the names the
delta adds; the triples' ends it appends; and the per-node and per-entity
vectors (column sums, degrees, dangling nodes, specificity, the scale),
which are small and written whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from gearag.graph.layered import AppendedRows, LayeredCsr, LayeredNames, NodeLayout
from gearag.graph.scaled import ABOUT_SOURCE, Scaled
from gearag.graph.transition import Csr
from gearag.graph.trie import HashedNames
from gearag.store.index import BASE_DIR as BASE_DIR

if TYPE_CHECKING:
    from gearag.graph.prepared import PreparedGraph

_NAMES = ("nodes", "name_hashes", "name_ids")


def _rows_files(prefix: str, rows: LayeredCsr) -> dict[str, np.ndarray]:
    out = {f"delta_{prefix}_{k}.npy": v for k, v in rows.delta.arrays().items()}
    out[f"where_{prefix}.npy"] = np.asarray(rows.where, dtype=np.int32)
    appends = rows.appends if rows.appends is not None else np.zeros(rows.n_rows, dtype=bool)
    out[f"appends_{prefix}.npy"] = np.asarray(appends, dtype=bool)
    return out


def layered_files(g: PreparedGraph) -> dict[str, np.ndarray]:
    """The files of a base's and a delta's prepared graph ``g`` that are the delta's (module docstring)."""
    columns, about, names, ends = g.columns, g.about, g.names, g.triple_ends
    if not (isinstance(columns, Scaled) and isinstance(about, LayeredCsr) and isinstance(names, LayeredNames)
            and isinstance(ends, AppendedRows)):
        raise TypeError("only a graph kept as its sources is stored as a base's and a delta's")
    out: dict[str, np.ndarray] = {}
    for src in columns.sources:
        if not isinstance(src.rows, LayeredCsr):
            raise TypeError(f"source {src.name} is not a base's and a delta's")
        if src.name != ABOUT_SOURCE:  # the about terms: stored once, as the about rows
            out |= _rows_files(src.name, src.rows)
    out |= _rows_files("about", about)
    out |= {f"names_{k}.npy": v for k, v in names.delta.arrays().items()}
    out |= {"scale.npy": columns.scale, "sums.npy": columns.sums, "degree.npy": columns.degree,
            "dangling.npy": g.dangling, "specificity.npy": g.specificity, "triple_ends_tail.npy": ends.tail}
    return out


def open_layered(cls: type[PreparedGraph], meta: dict[str, Any], read: Callable[[str], np.ndarray]) -> PreparedGraph:
    """The base's and the delta's prepared graph stored under ``meta`` (``read(name)``: a file of the delta's
    directory, ``base/…`` for the base's)."""
    delta = meta["delta"]
    base = cls.open(delta["base"], lambda name: read(f"{BASE_DIR}/{name}"))
    b_cols, b_about = base.columns, base.about
    if not (isinstance(b_cols, Scaled) and isinstance(b_about, Csr)):
        raise ValueError("a delta's base must be kept as its sources")
    n_p, n_e = int(meta["n_passages"]), int(meta["n_entities"])
    layout = NodeLayout(n_p, n_e, int(delta["base_passages"]), int(delta["base_entities"]))

    def layered(prefix: str, on: Csr) -> LayeredCsr:
        indptr, indices, data = (read(f"delta_{prefix}_{k}.npy") for k in ("indptr", "indices", "data"))
        sids = read(f"delta_{prefix}_sids.npy") if on.sids is not None else None
        return LayeredCsr(on, Csr(indptr, indices, data, sids), read(f"where_{prefix}.npy"),
                          read(f"appends_{prefix}.npy"))

    about = layered("about", b_about)
    sources = []
    for src in b_cols.sources:
        assert isinstance(src.rows, Csr)
        sources.append(src._replace(rows=about if src.name == ABOUT_SOURCE else layered(src.name, src.rows)))
    columns = Scaled(layout, tuple(sources), read("scale.npy"), read("sums.npy"), read("degree.npy"))
    names = LayeredNames(base.names, HashedNames.from_arrays(*(read(f"names_{k}.npy") for k in _NAMES)))
    usable = meta.get("usable_keys")
    return cls(n_p, n_e, dict(meta["settings"]), columns, read("dangling.npy"), read("specificity.npy"), about,
               AppendedRows(np.asarray(base.triple_ends), read("triple_ends_tail.npy")), names,
               int(meta["n_mention_keys"]), usable if isinstance(usable, int) else None, delta_layout=layout,
               base_meta=dict(delta["base"]), holds_ner=base.holds_ner)
