"""What an update of a sharded index removes, and what it keeps for the readers still using it.

After ``gearag add``, ``delete`` or ``compact`` commits a manifest,
:func:`remove_unlisted` removes the generations and shards it no longer
lists, and the leftovers of killed runs, except where a reader holds a lease
(:mod:`gearag.store.lease`): a leased generation stays, with every shard its
own manifest lists, until an update finds it free. The first update of a plain
index moves its files into a shard and a generation; if a reader of the plain
index holds its lease, :func:`keep_plain_files` links them back at their
paths, and the manifest lists them (:data:`RETAINED`) until they are free.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gearag.errors import IndexFormatError
from gearag.store.index import MANIFEST, read_manifest
from gearag.store.lease import LEASES_DIR, PLAIN, claimed, lease_files
from gearag.store.shards import (
    GENERATIONS_DIR,
    RETAINED,
    SHARDS_DIR,
    generation_ref,
    shard_refs,
    write_manifest_atomic,
)


def keep_plain_files(root: Path, new_root: Path, files: Iterable[str]) -> list[str]:
    """Hard-link the plain index's ``files`` (and its lease file) from ``root`` into ``new_root``, the
    directory that replaces it, at the same paths; returns them, sorted, for the manifest's :data:`RETAINED`."""
    kept = sorted(f for f in files if f != MANIFEST)
    for rel in [*kept, f"{LEASES_DIR}/{PLAIN}"]:
        target = new_root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(root / rel, target)
    return kept


def remove_unlisted(root: Path, manifest: dict[str, Any]) -> None:
    """Remove what ``manifest`` (just committed) does not list, except what a reader's lease holds."""
    current = generation_ref(root, manifest)[0]
    leased: set[str] = set()
    generations = root / GENERATIONS_DIR
    if generations.is_dir():
        for entry in sorted(generations.iterdir()):
            if entry.name == current:
                continue
            with claimed(root, entry.name) as free:
                if free:
                    _remove(entry)
                else:
                    leased.add(entry.name)
    keep = {r.name for r in shard_refs(root, manifest)}
    for name in leased:
        keep.update(_listed_shards(generations / name))
    shards = root / SHARDS_DIR
    if shards.is_dir():
        for entry in shards.iterdir():
            if entry.name not in keep:
                _remove(entry)
    retained = manifest.get(RETAINED)
    if isinstance(retained, list) and retained:
        with claimed(root, PLAIN) as free:
            if free:
                _remove_files(root, [str(f) for f in retained])
        if free:
            write_manifest_atomic(root, {k: v for k, v in manifest.items() if k != RETAINED})
            retained = None
    for name in lease_files(root):  # lease files of what is gone (their readers let go)
        if name != current and name not in leased and not (name == PLAIN and retained):
            with claimed(root, name):
                pass
    for stale in root.glob(f".{MANIFEST}.tmp-*"):
        stale.unlink(missing_ok=True)


def _listed_shards(gdir: Path) -> list[str]:
    try:
        shards = read_manifest(gdir).get("shards")
    except IndexFormatError:
        return []
    return [s for s in shards if isinstance(s, str)] if isinstance(shards, list) else []


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def _remove_files(root: Path, files: list[str]) -> None:
    """Unlink ``files`` (relative to ``root``) and then the directories they leave empty."""
    parents: set[Path] = set()
    for rel in files:
        path = root / rel
        path.unlink(missing_ok=True)
        parents.update(p for p in path.parents if p != root and root in p.parents)
    for directory in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):  # not empty (a file something else lists) or gone
            directory.rmdir()
