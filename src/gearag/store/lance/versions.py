"""The table versions of a Lance export: what its ``meta`` pins, what an update appends, what is pruned.

Lance keeps every version of a table until it is cleaned up. An export
records, in its ``meta`` row (written last), the version of each table it
wrote (:data:`VERSIONS`), and every reader opens those versions
(:func:`pinned`). So:

* a re-export, or an update, that fails halfway leaves the previous ``meta``,
  which still names the previous versions: the previous export stays
  loadable, whole (an export before pinning dropped ``meta`` first);
* a replica reading one export never sees the tables of the next one half
  written; it moves to the next export when ``meta`` changes
  (:func:`meta_version`, watched by ``gearag serve``).

``gearag export --update`` appends, instead of rewriting, the rows of the
shards added since the export (:func:`appendable`: the previous export's
rows must be the first rows of the index, shard for shard, none deleted);
the tables derived from the whole union (entities, memory-mapped files) are
written anew. The versions a newer export replaced are kept
``keep_hours`` for the replicas still reading them, then removed by the next
export (:func:`prune`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gearag.store.collection import PASSAGES, TRIPLES
from gearag.store.index import Index
from gearag.store.lance.files import FILES_TABLE
from gearag.store.lance.storage import ARRAYS_TABLE, ENTITIES_TABLE, META_TABLE, OWNER_TABLE, LanceDb, table_names

if TYPE_CHECKING:
    from lancedb.table import Table

#: Meta key: table name → the version this export wrote (absent: an export before pinning; read the latest).
VERSIONS = "versions"
#: Meta key: the source's rows shard by shard (:func:`lineage`), to tell whether a later index only appended.
LINEAGE = "lineage"
#: Meta key: when the export was committed (seconds since the epoch).
EXPORTED_AT = "exported_at"


def pinned(db: LanceDb, name: str, meta: dict[str, Any]) -> Table:
    """Table ``name`` at the version ``meta`` recorded (the latest if it recorded none)."""
    table = db.open_table(name)
    version = (meta.get(VERSIONS) or {}).get(name)
    if isinstance(version, int) and table.version != version:
        table.checkout(version)
    return table


class PinnedDb:
    """A LanceDB connection whose tables open at the versions an export's ``meta`` pins (:func:`pinned`)."""

    def __init__(self, db: LanceDb, meta: dict[str, Any]) -> None:
        self.db, self.meta = db, meta

    def open_table(self, name: str) -> Table:
        """Table ``name`` at the version the export pinned (:func:`pinned`)."""
        return pinned(self.db, name, self.meta)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def meta_version(db: Any) -> int:
    """The version of the ``meta`` table: it changes exactly when an export is committed."""
    return int(db.open_table(META_TABLE).version)


def lineage(index: Index) -> list[dict[str, Any]]:
    """The index's rows as runs of immutable sources: per shard (name, manifest hash, live passages).

    A plain index is one run, named as its first ``gearag add`` names the shard it becomes
    (:func:`gearag.indexing.incremental._convert_plain`), with no hash (it is known once converted).
    """
    from gearag.store.shards import is_sharded, kept_state, shard_refs

    manifest = index.manifest
    if not is_sharded(manifest):
        state = kept_state(manifest)
        name = state["shard"] if state is not None else f"s-{index.identity[:16]}"
        return [{"name": name, "sha256": None, "passages": len(index.passages)}]
    refs = shard_refs(index.path, manifest)
    offsets = index.passages.live_parts.offsets  # type: ignore[attr-defined]  # ConcatRows of the shards
    return [{"name": r.name, "sha256": r.manifest_sha256, "passages": int(offsets[i + 1] - offsets[i])}
            for i, r in enumerate(refs)]


@dataclass(frozen=True)
class Appendable:
    """The first rows of each appendable collection that the previous export already holds."""

    rows: dict[str, int]


def appendable(previous: dict[str, Any], index: Index, now: list[dict[str, Any]]) -> Appendable | str:
    """Whether the export ``previous`` (its meta) holds the first rows of ``index`` (lineage ``now``), so that an
    update only appends the rest; else why not (the caller exports everything)."""
    before = previous.get(LINEAGE)
    if not isinstance(before, list) or not isinstance(previous.get(VERSIONS), dict):
        return "the export records no lineage (written by an older gearag)"
    if len(before) > len(now):
        return "the index has fewer sources than the export (compacted or rebuilt)"
    for old, new in zip(before, now, strict=False):
        if old.get("name") != new["name"] or old.get("sha256") not in (None, new["sha256"]):
            return f"source {old.get('name')} is not in the index at the same place (compacted or rebuilt)"
        if old.get("passages") != new["passages"]:
            return f"passages of source {new['name']} were deleted since"
    if previous.get("manifest", {}).get("config") != index.manifest.get("config"):
        return "the index's settings differ from the exported index's"
    collections = previous.get("collections") or {}
    if set(collections) != set(index.collections):
        return "the index's collections differ from the exported ones"
    n_passages = sum(int(old["passages"]) for old in before)
    rows: dict[str, int] = {}
    for name, info in collections.items():
        coll = index.collections[name]
        if bool(info.get("weights")) != (coll.weights is not None):
            return f"collection {name} changed its weights"
        old_rows = int(info["rows"])
        if name == PASSAGES and old_rows != n_passages:
            return "the export's passages are not its recorded sources'"
        if name == TRIPLES:
            owner = index.triples.passage
            if old_rows > len(owner) or (old_rows and int(owner[old_rows - 1]) >= n_passages) or (
                    old_rows < len(owner) and int(owner[old_rows]) < n_passages):
                return "the export's triples are not the first triples of the index"
        elif name != PASSAGES:
            return f"collection {name} is not made of appended rows"
        rows[name] = old_rows
    return Appendable(rows)


def _written_by_export(name: str) -> bool:
    """Whether an export writes a table of this name (its collections', ``c_<pool>``, and the graph's), or an older
    gearag's did (``arrays``: :func:`prune` removes it, as a table the live export does not list)."""
    return name in (PASSAGES, TRIPLES, ENTITIES_TABLE, ARRAYS_TABLE, FILES_TABLE) or name.startswith("c_")


def prune(db: Any, meta: dict[str, Any], keep_hours: float, now: float | None = None,
          resumed: frozenset[str] = frozenset()) -> int:
    """Remove what the live export ``meta`` does not read, once it has been live ``keep_hours``: the versions of its
    tables before the ones it reads (those it replaced), and the tables an earlier export wrote that it does not
    list (a table gearag never writes stays, and so do the ``resumed`` ones an interrupted export finished).
    Returns how many versions and tables went (0 before then, or for an export that pins nothing)."""
    versions = meta.get(VERSIONS)
    exported = meta.get(EXPORTED_AT)
    if not isinstance(versions, dict) or not isinstance(exported, (int, float)):
        return 0
    if (now if now is not None else time.time()) - exported < keep_hours * 3600:
        return 0
    removed = 0
    for name in table_names(db):
        if name == OWNER_TABLE or (name != META_TABLE and name not in versions and not _written_by_export(name)):
            continue  # never what gearag did not write
        if name != META_TABLE and name not in versions:
            if name not in resumed:
                db.drop_table(name)  # written by an earlier export, read by none since this one went live
                removed += 1
            continue
        dataset = db.open_table(name).to_lance()
        listed = [int(v["version"]) for v in dataset.versions()]
        live = listed[-1] if name == META_TABLE else int(versions[name])
        # Only versions before the live one: a later one (an interrupted export's) may be the table's latest,
        # which Lance never removes; the next update writes past it and a later prune takes it.
        old = [v for v in listed if v < live]
        if old:
            dataset.cleanup_old_versions(versions=old)
            removed += len(old)
    return removed
