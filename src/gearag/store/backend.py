"""Opening an index by location: the embedded directory layout or a Lance index (registry kind ``backend``).

A location that is an object-store URI (``s3://...``) or a directory holding a Lance ``meta`` table
opens with the ``lance`` backend; anything else is an embedded index directory. Both give an
:class:`~gearag.store.index.Index`, so every method runs unchanged on either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gearag.registry import REGISTRY
from gearag.store.index import Index


def backend_of(location: str | Path) -> str:
    """``lance`` for Lance locations (and any other ``scheme://`` URI, which it rejects by name), else ``embedded``."""
    from gearag.store.lance.storage import is_lance_location

    return "lance" if is_lance_location(location) or "://" in str(location) else "embedded"


def open_index(location: str | Path, *, verify: bool = False) -> Index:
    """The index at ``location``, by the backend its location names."""
    loader: Any = REGISTRY.entry("backend", backend_of(location)).load()
    index: Index = loader(location, verify=verify)
    return index


def index_summary(location: str | Path, *, verify: bool = False) -> dict[str, Any]:
    """The manifest of the index at ``location`` (checked: files for embedded, tables for Lance)."""
    if backend_of(location) == "embedded":
        from gearag.store.index import check_index

        return check_index(location, full=verify)
    return dict(open_index(location, verify=verify).manifest)
