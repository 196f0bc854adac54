"""``gearag export``: an index to Lance tables, with the prepared passage graph's files.

Storage (:mod:`gearag.store.lance.export`) writes the tables and copies files; it does not
derive graphs. The prepared passage graph (:mod:`gearag.graph.prepared`) an export carries
comes from here: the index's stored one, file by file, when it serves the default query
settings; else derived now (:func:`~gearag.derive.graph_for.passage_graph_for`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gearag.derive.graph_for import passage_graph_for
from gearag.graph.passage_graph import PassageGraphConfig
from gearag.graph.prepared import PreparedGraph, stored_prepared
from gearag.store.index import BASE_DIR, PREPARED, Index
from gearag.store.lance import export as lance_export
from gearag.store.lance.export import ExportConfig, PreparedFiles, graph_dir


def prepared_files(index: Index) -> PreparedFiles:
    """The prepared passage graph's files (name under ``graph/``, stored file or array) and its meta."""
    config = PassageGraphConfig()
    stored = stored_prepared(index)
    if stored is not None and stored.serves(config):  # copied file by file, part by part
        directory = graph_dir(index) / PREPARED
        names = list(stored.files())
        if (directory / BASE_DIR).is_dir():  # a delta generation's: its base's arrays too (docs/delta.md)
            names += [f"{BASE_DIR}/{f.name}" for f in sorted((directory / BASE_DIR).glob("*.npy"))]
        return [(f"graph/{PREPARED}/{name}", directory / name) for name in names], stored.meta()
    prepared: PreparedGraph = passage_graph_for(index, config).prepared
    return [(f"graph/{PREPARED}/{name}", a) for name, a in prepared.files().items()], prepared.meta()


def export_index(index_dir: str | Path, location: str | Path, config: ExportConfig = ExportConfig(),
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write the embedded index at ``index_dir`` to Lance tables at ``location`` (or, with ``config.update``, bring
    the export there up to date); returns a summary (:func:`gearag.store.lance.export.export_index`)."""
    return lance_export.export_index(index_dir, location, config, progress, prepared=prepared_files)
