"""Where a Lance index lives and how to reach it: URIs, object-store options, connecting.

A location is a local directory or an object-store URI (``s3://bucket/prefix``, ``gs://``, ``az://``).
Object-store options come from the usual environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION``, ``AWS_ENDPOINT_URL``) and may be given in the URI's query string, which every command
that takes an index accepts unchanged, e.g. ``s3://bucket/idx?endpoint=http://127.0.0.1:9000``.

Every object-store call is bounded: a connect timeout, a request timeout and a capped number of
retries within a capped time (Lance's ``storage_options``), so an unreachable endpoint is a
one-line :class:`~gearag.errors.IndexFormatError` after at most about ``retry_timeout`` seconds.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from gearag.errors import ConfigError, IndexFormatError
from gearag.options import setting

if TYPE_CHECKING:
    from lancedb.table import Table

#: URI schemes that name object storage (anything else is a local path).
REMOTE_SCHEMES = ("s3", "s3a", "gs", "az", "abfs")
#: The table every Lance index has; its presence makes a local directory a Lance index.
META_TABLE = "meta"
#: Written before any other table and kept: the location is gearag's even when ``meta`` is missing.
OWNER_TABLE = "gearag"
#: The export's tables besides its collections' (``c_<pool>``) and ``files``: the pre-format-2 integer arrays and
#: the entity names.
ARRAYS_TABLE = "arrays"
ENTITIES_TABLE = "entities"
INSTALL_HINT = "pip install 'gearag[lance]'"


class TablesPage(Protocol):
    """One page of a connection's table names (``list_tables``)."""

    @property
    def tables(self) -> Sequence[str]: ...

    @property
    def page_token(self) -> str | None: ...


class LanceDb(Protocol):
    """What gearag calls on a LanceDB connection: ``lancedb.DBConnection`` (:func:`connect`), or the one that opens
    tables at an export's versions (:class:`~gearag.store.lance.versions.PinnedDb`)."""

    def open_table(self, name: str) -> Table: ...

    def list_tables(self, *, page_token: str | None = None) -> TablesPage: ...

    def create_table(self, name: str, data: Any = None, schema: Any = None, mode: str = "create") -> Table: ...

    def drop_table(self, name: str) -> None: ...


@dataclass(frozen=True)
class StoreOptions:
    """How to reach an object store (ignored for local directories). Query parameters of the URI."""

    endpoint: str | None = setting(None, "S3-compatible endpoint URL (default: AWS_ENDPOINT_URL, else AWS)")
    region: str | None = setting(None, "object-store region (default: AWS_REGION, else us-east-1)")
    timeout: float = setting(30.0, "seconds one object-store request may take")
    connect_timeout: float = setting(5.0, "seconds to connect to the object store")
    max_retries: int = setting(3, "retries of a failed object-store request")
    retry_timeout: float = setting(20.0, "seconds all retries of one request may take")

    def storage_options(self, scheme: str) -> dict[str, str]:
        """Lance/object_store ``storage_options`` for a URI with ``scheme``."""
        opts = {
            "timeout": f"{self.timeout:g}s",
            "connect_timeout": f"{self.connect_timeout:g}s",
            "client_max_retries": str(self.max_retries),
            "client_retry_timeout": str(max(1, round(self.retry_timeout))),
        }
        if scheme in ("s3", "s3a"):
            endpoint = self.endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            opts["aws_region"] = self.region or os.environ.get("AWS_REGION") or os.environ.get(
                "AWS_DEFAULT_REGION") or "us-east-1"
            if endpoint:
                opts["aws_endpoint"] = endpoint
                if endpoint.startswith("http://"):
                    opts["allow_http"] = "true"
            for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
                if os.environ.get(key):
                    opts[key.lower()] = os.environ[key]
        return opts


@dataclass(frozen=True)
class Location:
    """A parsed Lance location: the URI Lance opens, its scheme and the store options."""

    uri: str
    scheme: str
    options: StoreOptions

    @property
    def remote(self) -> bool:
        return self.scheme in REMOTE_SCHEMES

    def storage_options(self) -> dict[str, str]:
        return self.options.storage_options(self.scheme)

    def __str__(self) -> str:
        return self.uri


def _scheme(location: str) -> str:
    scheme = urlsplit(location).scheme.lower()
    return scheme if len(scheme) > 1 else ""  # "C:" is a drive, not a scheme


def is_lance_location(location: str | Path) -> bool:
    """Whether ``location`` names a Lance index: an object-store URI, or a directory of Lance tables."""
    text = str(location)
    if _scheme(text) in REMOTE_SCHEMES:
        return True
    path = Path(text.split("?", 1)[0])
    if not path.is_dir() or (path / "manifest.json").exists():
        return False
    # The meta table, or other Lance tables without it (an interrupted export: a clear error, not "no manifest").
    return (path / f"{META_TABLE}.lance").is_dir() or any(path.glob("*.lance"))


def parse_location(location: str | Path) -> Location:
    """Split ``location`` into the URI and its store options; a bad option is a one-line ConfigError."""
    text = str(location)
    parts = urlsplit(text)
    scheme = _scheme(text)
    if scheme and scheme not in REMOTE_SCHEMES and scheme != "file":
        raise ConfigError(f"{text}: unsupported URI scheme {scheme!r} (use a directory or "
                          f"{', '.join(s + '://' for s in REMOTE_SCHEMES)})")
    names = {f.name: f.type for f in fields(StoreOptions)}
    options = StoreOptions()
    if scheme in REMOTE_SCHEMES:
        if not parts.netloc:
            raise ConfigError(f"{text}: no bucket in the URI (expected {scheme}://BUCKET/PREFIX)")
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            key = key.replace("-", "_")
            if key not in names:
                raise ConfigError(f"{text}: unknown option {key!r} in the URI (known: {', '.join(names)})")
            try:
                kind = str(names[key])
                parsed: Any = float(value) if "float" in kind else int(value) if "int" in kind else value
                options = replace(options, **{key: parsed})
            except ValueError:
                raise ConfigError(f"{text}: option {key}={value!r} is not a number") from None
        uri = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    else:
        uri = str(Path(parts.path if scheme == "file" else text).expanduser().absolute())
    return Location(uri, scheme if scheme in REMOTE_SCHEMES else "", options)


def import_lancedb() -> ModuleType:
    """The ``lancedb`` module (``lance`` imported too), or a one-line ConfigError naming the extra to install."""
    os.environ.setdefault("LANCE_LOG", "error")  # Lance's Rust warnings would otherwise go to stderr
    os.environ.setdefault("LANCEDB_LOG", "error")
    try:
        import lance  # noqa: F401  (pylance: random access by row)
        import lancedb
    except ImportError:
        raise ConfigError(f"the Lance backend needs the 'lance' extra: {INSTALL_HINT}") from None
    return lancedb


def connect(location: Location, session: Any = None) -> LanceDb:
    """A LanceDB connection to ``location`` with its bounded storage options (and ``session``'s caches)."""
    lancedb = import_lancedb()
    extra = {"session": session} if session is not None else {}
    return lancedb.connect(location.uri, storage_options=location.storage_options() or None, **extra)


def table_names(db: Any) -> list[str]:
    """Every table of a LanceDB connection (``list_tables`` pages)."""
    names: list[str] = []
    token = None
    while True:
        page = db.list_tables(page_token=token)
        names.extend(page.tables)
        token = page.page_token
        if not token:
            return names


def store_error(location: Location | str, exc: BaseException, what: str = "cannot read") -> IndexFormatError:
    """One line for a failed store call: the location and the first line of the cause."""
    text = str(exc)
    first = (text.strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(location, Location) and location.remote and any(
            s in text for s in ("RetryError", "error sending request", "Connection refused", "timed out")):
        endpoint = location.storage_options().get("aws_endpoint", location.scheme + "://")
        status = re.search(r"status: (\d{3})", text)
        reason = f"HTTP {status.group(1)}" if status else "no answer within the timeouts and retries"
        return IndexFormatError(f"{location}: {what} the Lance index: the object store at {endpoint} failed "
                                f"({reason}; options: timeout, connect_timeout, max_retries, retry_timeout)")
    if len(first) > 200:
        first = first[:200] + "..."
    return IndexFormatError(f"{location}: {what} the Lance index ({type(exc).__name__}: {first})")
