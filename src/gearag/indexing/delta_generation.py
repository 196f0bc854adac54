"""An add written as a *delta generation*: the last full generation linked as its base, the add's delta beside it.

:func:`write_delta_generation` applies the add's delta (:func:`~gearag.indexing.generation.generation_delta`) to
the base's prepared graph and writes it as layers over the base (:func:`_write_layers`) or, ``flat``, whole (the
next add's base); :class:`Declined` where no delta can say the add. When an add is written as a delta is
:class:`DeltaConfig` (:func:`why_whole`); a full generation's manifest records why it is one (:data:`WHOLE_BECAUSE`).
docs/delta.md has the design ("Generations", "When a delta declines", "The bound").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from gearag.config import IndexConfig
from gearag.derive.union_files import prepared_files, write_flat
from gearag.errors import ConfigError, GearagError
from gearag.graph.delta_apply import apply_delta
from gearag.graph.passage_graph import GRAPH_DIR
from gearag.graph.prepared import PREPARED, PreparedGraph, load_prepared
from gearag.indexing.generation import (
    NO_PREPARED,
    Written,
    commit_generation,
    delta_base,
    finished_generation,
    generation_delta,
    generation_name,
)
from gearag.options import setting
from gearag.store.graph import LayeredTripleGraph, layered_graph_files
from gearag.store.index import BASE_DIR, MANIFEST, Index, manifest_identity, read_manifest
from gearag.store.shards import DELTA, DELTA_BASE, GENERATIONS_DIR, ShardRef, Union
from gearag.store.writer import IndexWriter

#: How ``gearag add`` writes its generation (:attr:`DeltaConfig.write`).
WRITE_MODES = ("auto", "delta", "full")


class Declined(NamedTuple):
    """No delta can say the add (docs/delta.md, "When a delta declines"): why, as a clause ("because ...")."""

    reason: str


@dataclass(frozen=True)
class DeltaConfig:
    """When an add is written as a delta generation and when in full (docs/delta.md, "The bound": the choice reads
    only passage and shard counts)."""

    write: str = setting("auto", "How the add's generation is written: auto (a delta over the last full generation "
                                 "while the passages added since it are at most --delta-share of it, else in full), "
                                 "delta (wherever a delta can say it) or full (always in full)", name="generation",
                         choices=WRITE_MODES)
    #: 1% at 1M passages: ten adds of 1,000 passages between full generations (docs/benchmarks-log.md, "The bound").
    max_share: float = setting(0.01, "auto writes a delta while the passages added since the last full "
                                     "generation are at most this share of its passages", name="delta_share",
                               min=0.0)
    #: Where the mean add of 10 passages onto 1M over a cycle is least (docs/benchmarks-log.md, "A bound on the
    #: shards since the base").
    max_shards: int = setting(32, "auto writes a delta while at most this many shards were added since the last "
                                  "full generation (this add's included)", name="delta_shards", min=1)

    def __post_init__(self) -> None:
        if self.write not in WRITE_MODES:
            raise ConfigError(f"--generation: unknown value {self.write!r} (choose from {', '.join(WRITE_MODES)})")
        if not self.max_share >= 0:
            raise ConfigError(f"--delta-share must be at least 0, got {self.max_share}")
        if isinstance(self.max_shards, bool) or not isinstance(self.max_shards, int) or self.max_shards < 1:
            raise ConfigError(f"--delta-shards must be a whole number of at least 1, got {self.max_shards!r}")


def why_whole(config: DeltaConfig, root: Path, previous: str, n_passages: int, n_shards: int) -> str | None:
    """Why an add that leaves ``n_passages`` passages and ``n_shards`` shards (the union's) after generation
    ``previous`` of the index at ``root`` is written in full, as a clause ("because ..."); None: as a delta. By
    ``config`` (:class:`DeltaConfig`; ``auto`` compares the passages and shards since the last full generation
    with its own)."""
    if config.write != "auto":
        return None if config.write == "delta" else "--generation full was asked for"
    try:
        base = read_manifest(delta_base(root / GENERATIONS_DIR / previous))
        n_base, base_shards = int((base.get("counts") or {})["passages"]), len(base["shards"])
    except (GearagError, KeyError, TypeError, ValueError):
        return "the last full generation cannot be read"  # the add writes one
    since, shards_since = n_passages - n_base, n_shards - base_shards
    if since > config.max_share * n_base:
        return (f"{since:,} passages were added since the last full generation, more than --delta-share "
                f"{config.max_share:g} of its {n_base:,}")
    if shards_since > config.max_shards:
        return (f"{shards_since} shards were added since the last full generation, more than --delta-shards "
                f"{config.max_shards}")
    return None


def write_delta_generation(root: Path, refs: list[ShardRef], shards: list[Index], tombstones: dict[str, np.ndarray],
                           config: IndexConfig, previous: str, union: Union, flat: bool = False,
                           why: str | None = None) -> Written | Declined:
    """The generation of ``shards`` as the base of generation ``previous`` plus a delta (module docstring); its
    name, manifest hash and counts. :class:`Declined`: no delta can say it (the caller writes a full generation).
    ``flat``: the same delta written as a full generation (:func:`~gearag.derive.union_files.write_flat`), the
    next add's base; ``why``: why an add's is (recorded as :data:`WHOLE_BECAUSE`)."""
    name = generation_name(refs, tombstones) + ("" if flat else f"-{DELTA}")
    out = root / GENERATIONS_DIR / name
    found = finished_generation(root, name, refs)  # written by an interrupted run
    if found is not None:
        return found
    previous_dir = root / GENERATIONS_DIR / previous
    base_dir = delta_base(previous_dir)
    base = load_prepared(base_dir / GRAPH_DIR / PREPARED)
    if base is None:
        return Declined(NO_PREPARED)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    with IndexWriter(out, overwrite=out.exists()) as w:
        delta = generation_delta(w, refs, shards, tombstones, config, base_dir, base, union, previous_dir,
                                 keep_state=flat)
        if delta.resolution is None or delta.triples is None or (
                not flat and not isinstance(delta.triples, LayeredTripleGraph)):
            # Not committed: the writer removes what it wrote.
            return Declined(delta.declined or "the base's key statistics do not number its triple graph")
        timings["resolve"] = round(time.perf_counter() - started, 3)
        layered = apply_delta(base, delta.resolution)  # the terms by scale it reads: the resolve half's
        if layered is None:
            return Declined("the base's prepared graph is not one a delta extends (an edge kind it left out, or "
                            "another layout)")
        timings["apply"] = round(time.perf_counter() - started - timings["resolve"], 3)
        counts = {"passages": len(union.passages), "triples": len(union.triples),
                  "entities": delta.triples.n_entities}
        if flat:
            kept = write_flat(w, layered, delta.triples, delta.resolution.deletion)
        else:
            assert isinstance(delta.triples, LayeredTripleGraph)
            kept = _write_layers(w, base_dir, layered, delta.triples)
        timings["write"] = round(time.perf_counter() - started - timings["resolve"] - timings["apply"], 3)
        commit_generation(w, refs, tombstones, counts, timings, {**kept, "edges": delta.edges}, why)
    return name, manifest_identity(out), counts


def _write_layers(w: IndexWriter, base_dir: Path, layered: PreparedGraph,
                  triples: LayeredTripleGraph) -> dict[str, Any]:
    """Write a delta generation: every file of the base generation ``base_dir`` hard-linked under ``base/``
    (its prepared graph's under ``graph/prepared/base/`` too), the delta's prepared graph and triple graph
    beside them; the manifest's entry that names the base."""
    base_manifest = read_manifest(base_dir)
    for rel in sorted(base_manifest.get("files") or {}):
        w.link(f"{DELTA_BASE}/{rel}", base_dir / rel, base_dir)
    w.link(f"{DELTA_BASE}/{MANIFEST}", base_dir / MANIFEST, base_dir)
    prepared = f"{GRAPH_DIR}/{PREPARED}"
    for f in sorted((base_dir / prepared).iterdir()):
        w.link(f"{prepared}/{BASE_DIR}/{f.name}", f, base_dir)
    w.write_files(prepared_files(layered))
    w.write_files(layered_graph_files(triples))
    return {DELTA: {"base": DELTA_BASE, "shards": base_manifest.get("shards")}}
