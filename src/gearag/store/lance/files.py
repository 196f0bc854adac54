"""Arrays a Lance index's queries read by position, memory-mapped from a local cache.

The integer graph arrays (triple → entity, CSR offsets) and the prepared
passage graph (:mod:`gearag.graph.prepared`: the PPR operator by columns,
the entity-name hashes) are read a few entries per query, at positions no
table scan can predict. Read whole into each process they grew its memory
with the corpus (~1.3 GB at a million passages). Instead, ``gearag export``
writes them as ``.npy`` bytes in parts of :data:`PART_BYTES` to the
``files`` table (``name, part, data``), with each file's size and SHA-256 in
the ``meta`` row; a process that opens the index copies each file once into
a local cache directory (part by part, checked against its hash, renamed
into place: a replica never reads a half-written file) and memory-maps it.
The process then keeps in memory only the pages its queries touched, and
those are page cache: shared by every process on the machine and dropped by
the kernel under pressure.

The cache directory is :attr:`LanceSearchConfig.cache_dir` (``--lance-cache-dir``),
else ``$GEARAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/gearag`` (``~/.cache/gearag``);
its ``lance/`` holds one sub-directory per exported index (the first 32 hex
digits of its identity), so a new export never meets an old export's files.
Nothing in it is needed again once its index is gone: deleting the directory
is always safe.

Pruning. Each open touches the sub-directory's marker file (:data:`MARKER`),
whose mtime is when the export was last opened on this machine. A replica
that follows re-exports would otherwise keep one sub-directory per export
forever, so a process that creates a new sub-directory (the first open of a
new export) also deletes the siblings not opened for
:attr:`LanceSearchConfig.cache_keep_days` (``--lance-cache-keep-days``, 7;
0 never prunes). It deletes only what gearag wrote: a real directory (no
symlink is followed or deleted through) under ``lance/`` whose name is 32 hex
digits and which holds nothing but the marker, ``.npy`` files and partial
copies (one filled before markers existed counts as last used when its newest
file was written), and one an interrupted prune left; never one this process opened. A directory
is first renamed (atomically) to ``.prune-NAME-PID``, then deleted, so another
process sees it whole or not at all; a process that opens it meanwhile simply
copies the files again, and one that already mapped them keeps reading them
(an unlinked file stays mapped). Races with other processes (a directory
renamed or deleted first by another, a file vanishing) are ignored, and
pruning never fails an open. The marker is touched on open, not while a
process serves: a long-running replica's copy can be pruned under it, which
costs it only a second copy of the files it maps later.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import re
import shutil
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gearag.errors import IndexFormatError
from gearag.store.npy import load_npy

FILES_TABLE = "files"
#: Bytes per row of the ``files`` table: what an export or a cache fill holds of one file at a time.
PART_BYTES = 32 << 20
#: The file in each export's cache directory whose mtime is when the export was last opened here.
MARKER = ".gearag-lance-files"
#: Names of the cache's sub-directories: an export's (its identity's first 32 hex digits), and one being pruned.
EXPORT_DIR = re.compile(r"[0-9a-f]{32}")
PRUNING_DIR = re.compile(r"\.prune-([0-9a-f]{32})-[0-9]+")

log = logging.getLogger("gearag.store")
#: Cache directories this process opened: never pruned by it.
_IN_USE: set[Path] = set()


def cache_root(configured: str = "") -> Path:
    """Where local copies of Lance indices' files go (module docstring)."""
    if configured:
        return Path(configured).expanduser()
    if os.environ.get("GEARAG_CACHE_DIR"):
        return Path(os.environ["GEARAG_CACHE_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "gearag"


def npy_bytes(array: np.ndarray) -> bytes:
    """``array`` as ``np.save`` writes it."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def file_batches(sources: Iterable[tuple[str, Path | np.ndarray]], pa: Any,
                 listing: dict[str, dict[str, Any]]) -> Any:
    """The ``files`` table as a stream of one-part batches; fills ``listing`` (name → parts, bytes, sha256)
    as the stream is read. A source is a stored ``.npy`` file (read part by part) or an array."""
    schema = pa.schema([pa.field("name", pa.string()), pa.field("part", pa.int32()),
                        pa.field("data", pa.large_binary())])

    def chunks(source: Path | np.ndarray) -> Iterator[bytes]:
        if isinstance(source, Path):
            with source.open("rb") as fh:
                while part := fh.read(PART_BYTES):
                    yield part
        else:
            data = memoryview(npy_bytes(np.asarray(source)))
            for start in range(0, len(data), PART_BYTES):
                yield bytes(data[start : start + PART_BYTES])

    def rows() -> Iterator[Any]:
        for name, source in sources:
            digest, size, parts = hashlib.sha256(), 0, 0
            for data in chunks(source):
                digest.update(data)
                size += len(data)
                yield pa.record_batch([pa.array([name]), pa.array([parts], pa.int32()),
                                       pa.array([data], pa.large_binary())], schema=schema)
                parts += 1
            listing[name] = {"parts": parts, "bytes": size, "sha256": digest.hexdigest()}

    return pa.RecordBatchReader.from_batches(schema, rows())


class LocalFiles:
    """A Lance index's ``files``, each copied once into the local cache and memory-mapped.

    Opening marks ``directory`` as used now; creating it prunes its stale siblings when ``keep_days`` > 0.
    """

    def __init__(self, db: Any, where: str, listing: dict[str, dict[str, Any]], directory: Path,
                 keep_days: float = 0.0) -> None:
        self.db, self.where, self.listing, self.directory = db, where, listing, directory
        _IN_USE.add(directory.resolve())
        if _mark_used(directory) and keep_days > 0:
            prune_cache(directory.parent, keep_days)

    def __contains__(self, name: str) -> bool:
        return name in self.listing

    def array(self, name: str) -> np.ndarray:
        """The array stored as ``name``, memory-mapped read-only from its local copy."""
        try:
            try:
                return load_npy(self.path(name))
            except FileNotFoundError:  # another process pruned the directory meanwhile: copy the file again
                return load_npy(self.path(name))
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"{self.where}: cannot map {name} from the local cache {self.directory} "
                                   f"({type(exc).__name__}); delete that directory and open again") from None

    def path(self, name: str) -> Path:
        """The local copy of ``name``: fetched, checked and renamed into place when missing."""
        info = self.listing.get(name)
        if info is None:
            raise IndexFormatError(f"{self.where}: the {FILES_TABLE} table lacks {name}; export the index again")
        dest = self.directory / name
        if dest.is_file() and dest.stat().st_size == info["bytes"]:
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
        digest = hashlib.sha256()
        try:
            table = self.db.open_table(FILES_TABLE).to_lance()
            quoted = name.replace("'", "''")
            with tmp.open("wb") as fh:
                for part in range(int(info["parts"])):
                    got = table.to_table(columns=["data"], filter=f"name = '{quoted}' AND part = {part}")
                    if got.num_rows != 1:
                        raise IndexFormatError(f"{self.where}: part {part} of {name} is missing from the "
                                               f"{FILES_TABLE} table; export the index again")
                    data = got.column("data")[0].as_py()
                    digest.update(data)
                    fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if digest.hexdigest() != info["sha256"]:
                raise IndexFormatError(f"{self.where}: {name} does not match its checksum; export the index again")
            os.replace(tmp, dest)  # atomic: another process sees the whole file or none
        finally:
            tmp.unlink(missing_ok=True)
        return dest


def _mark_used(directory: Path) -> bool:
    """Create ``directory`` if missing and touch its :data:`MARKER`; whether this call created it.

    Best effort: a cache this process cannot write (read-only, filled beforehand) is still read, and an
    unwritable root fails later, where a file is copied, with that error.
    """
    try:
        directory.mkdir(parents=True)
        created = True
    except FileExistsError:
        created = False
    except OSError:
        return False
    with contextlib.suppress(OSError):  # a read-only cache filled beforehand is still read
        (directory / MARKER).touch()
    return created


def _raise(exc: OSError) -> None:
    raise exc


def _last_used(directory: Path) -> float | None:
    """When ``directory`` was last opened (its marker's mtime; without one, its newest entry's), or None
    when it is not gearag's: anything but real directories, the marker, ``.npy`` files and partial copies."""
    marker: float | None = None
    try:
        newest = directory.lstat().st_mtime
        for root, dirs, files in os.walk(directory, onerror=_raise, followlinks=False):
            for name in dirs:
                if stat.S_ISLNK(os.lstat(os.path.join(root, name)).st_mode):
                    return None  # a symlink: not something gearag wrote
            for name in files:
                info = os.lstat(os.path.join(root, name))
                if not stat.S_ISREG(info.st_mode):
                    return None
                if root == str(directory) and name == MARKER:
                    marker = info.st_mtime
                elif not (name.endswith(".npy") or (name.startswith(".") and name.endswith(".part"))):
                    return None
                newest = max(newest, info.st_mtime)
    except FileNotFoundError:
        return None  # deleted meanwhile
    return marker if marker is not None else newest


def prune_cache(lance_dir: Path, keep_days: float, *, now: float | None = None) -> list[str]:
    """Delete the export directories under ``lance_dir`` not opened for ``keep_days`` days (module
    docstring: only gearag's, never one this process opened, races ignored); the names deleted."""
    if keep_days <= 0:
        return []
    cutoff = (time.time() if now is None else now) - keep_days * 86_400
    try:
        entries = list(os.scandir(lance_dir))
    except OSError:
        return []
    removed = []
    for entry in entries:
        path = Path(entry.path)
        try:
            if not entry.is_dir(follow_symlinks=False) or path.resolve() in _IN_USE:
                continue
            interrupted = PRUNING_DIR.fullmatch(entry.name)  # a prune that stopped part-way: finish it
            if not (interrupted or EXPORT_DIR.fullmatch(entry.name)):
                continue
            used = _last_used(path)
            if used is None or (not interrupted and used >= cutoff):
                continue
            doomed = path if interrupted else lance_dir / f".prune-{entry.name}-{os.getpid()}"
            if not interrupted:
                os.rename(path, doomed)  # atomic: other processes see the whole directory or none
        except OSError:  # renamed, deleted or refilled by another process meanwhile
            continue
        shutil.rmtree(doomed, ignore_errors=True)
        if doomed.exists():
            log.warning("could not delete all of %s from the Lance file cache", doomed)
        elif not interrupted:
            removed.append(entry.name)
    return removed
