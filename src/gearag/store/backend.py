"""Opening an index by location: the embedded directory layout or a Lance index (registry kind ``backend``).

A location that is an object-store URI (``s3://...``) or a directory holding a Lance ``meta`` table
opens with the ``lance`` backend; anything else is an embedded index directory. Both give an
:class:`~gearag.store.interface.IndexStore` (:class:`~gearag.store.index.Index`,
:class:`~gearag.store.lance.index.LanceIndex`), so every method runs unchanged on either. The Lance backend's
query-time settings (:class:`~gearag.store.lance.collection.LanceSearchConfig`) are ignored for an
embedded index; :func:`check_lance_settings` refuses them there for callers (the CLI) whose user
asked for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gearag.errors import ConfigError
from gearag.registry import REGISTRY
from gearag.store.interface import IndexStore

if TYPE_CHECKING:
    from gearag.store.lance.collection import LanceSearchConfig


def backend_of(location: str | Path) -> str:
    """``lance`` for Lance locations (and any other ``scheme://`` URI, which it rejects by name), else ``embedded``."""
    from gearag.store.lance.storage import is_lance_location

    return "lance" if is_lance_location(location) or "://" in str(location) else "embedded"


def check_lance_settings(location: str | Path, lance: LanceSearchConfig | None) -> None:
    """A one-line ConfigError naming the options when ``lance`` sets any (away from its default) but
    ``location`` is an embedded index, which would ignore them."""
    from gearag.options import changed_options

    given = changed_options(lance) if lance is not None else {}
    if given and backend_of(location) == "embedded":
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise ConfigError(f"{flags}: only a Lance index takes Lance settings; {location} is an index directory")


def open_index(location: str | Path, *, verify: bool = False, lance: LanceSearchConfig | None = None) -> IndexStore:
    """The index at ``location``, by the backend its location names; ``lance`` (default: its defaults) sets a
    Lance index's query-time settings and is ignored for an embedded one."""
    backend = backend_of(location)
    loader: Any = REGISTRY.entry("backend", backend).load()
    settings = {"config": lance} if backend == "lance" and lance is not None else {}
    index: IndexStore = loader(location, verify=verify, **settings)
    return index


def index_summary(location: str | Path, *, verify: bool = False,
                  lance: LanceSearchConfig | None = None) -> dict[str, Any]:
    """The manifest of the index at ``location`` (checked: files for embedded, tables for Lance)."""
    if backend_of(location) == "embedded":
        from gearag.store.index import check_index

        return check_index(location, full=verify)
    return dict(open_index(location, verify=verify, lance=lance).manifest)
