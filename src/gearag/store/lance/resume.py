"""A full export that was interrupted resumes at the collection table it reached.

Writing a collection's table and its indexes is most of an export (at 1M passages: 112 s for the
passages, 709 s for the triples of an 848 s export; docs/benchmarks-log.md, "Updating a Lance export").
Each finished one is recorded in the :data:`PROGRESS_TABLE` (source index identity, the export
settings that shape it, the table version and what ``meta`` says of it). An export of the same
index with the same settings that finds such a record, and the table at that version with as many
rows, keeps it instead of writing it again. The export's commit drops the record. Table versions
are immutable, so what is kept is exactly what was written.
"""

from __future__ import annotations

import json
from typing import Any

from gearag.store.lance.storage import table_names

#: Written by a full export as it finishes each collection table; dropped when the export commits.
PROGRESS_TABLE = "export_progress"


def settings_key(config: Any) -> str:
    """The export settings a collection table depends on (its vector index)."""
    return json.dumps({k: getattr(config, k) for k in ("ann_min_rows", "ann_index", "ann_partitions")},
                      sort_keys=True)


def finished(db: Any, identity: str, settings: str) -> dict[str, tuple[int, dict[str, Any]]]:
    """Collection tables an interrupted export of this index with these settings finished: table → (version,
    its ``meta`` entry), each checked to still hold that version with its rows."""
    if PROGRESS_TABLE not in table_names(db):
        return {}
    rows = db.open_table(PROGRESS_TABLE).to_arrow().to_pylist()
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for row in rows:
        if row.get("identity") != identity or row.get("settings") != settings:
            continue
        name, version, info = row["table"], int(row["version"]), json.loads(row["info"])
        try:
            table = db.open_table(name)
            table.checkout(version)
            if int(table.count_rows()) != int(info["rows"]):
                continue
        except (OSError, RuntimeError, ValueError, KeyError):
            continue  # pruned or damaged: written again
        out[name] = (version, info)
    return out


def record(db: Any, identity: str, settings: str, table: str, version: int, info: dict[str, Any]) -> None:
    """Note that ``table`` is finished at ``version`` (``info``: its ``meta`` entry)."""
    import pyarrow as pa

    row = pa.table({"identity": [identity], "settings": [settings], "table": [table], "version": [version],
                    "info": [json.dumps(info)]})
    if PROGRESS_TABLE in table_names(db):
        db.open_table(PROGRESS_TABLE).add(row)
    else:
        db.create_table(PROGRESS_TABLE, row)


def clear(db: Any) -> None:
    """Drop the record (the export committed: nothing is left to resume)."""
    if PROGRESS_TABLE in table_names(db):
        db.drop_table(PROGRESS_TABLE)
