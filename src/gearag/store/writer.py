"""Writing an index directory safely: an OS lock per build, overwrite checks, and an atomic commit.

:class:`IndexWriter` builds everything in a sibling temporary directory,
writes the manifest last and renames the directory into place, so a crash
never leaves a loadable half-index. While it builds it holds an OS lock
(``flock``) on ``.NAME.lock`` beside the index (:class:`IndexLock`), so a
second build of the same directory fails at once, and clean-up of leftovers
only ever happens under that lock. The lock belongs to the directory, not to
the name it was reached by: every writer first resolves symlinks in its path
(:func:`index_location`), so ``gearag add LINK`` and ``gearag add TARGET``
take one lock, and the directory is replaced where it is (the link stays a
link). ``overwrite`` replaces only a directory
that is a gearag index by its manifest and holds nothing the index did not
write (:func:`check_replaceable`). Reading and verifying an index is
:mod:`gearag.store.index`.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import socket
import tempfile
import threading
import time
from array import array
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from gearag.data.jsonio import dump_json, jsonl_line
from gearag.errors import BusyError, IndexFormatError, OutputError
from gearag.outputs import check_output_dir
from gearag.store import checksum
from gearag.store.fsync import fsync_dir as _fsync_dir
from gearag.store.index import FORMAT, FORMAT_VERSION, MANIFEST, SHARDED, read_manifest
from gearag.store.lease import LEASES_DIR
from gearag.store.npy import save_npy
from gearag.store.rows import offsets_rel
from gearag.version import __version__


def swap_directory(tmp: Path, out: Path) -> None:
    """Put the finished directory ``tmp`` at ``out``: the old ``out`` (if any) is renamed aside first,
    so ``out`` is at every moment either the old directory or the new one, then removed."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.old-"))
        os.replace(out, old)
    os.replace(tmp, out)
    _fsync_dir(out.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


#: The errors of a write that found no room: a full disk, a quota, a file-size limit (``ulimit -f``).
STORAGE_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def storage_full(exc: OSError) -> bool:
    """Whether ``exc`` is a write that found no room (:data:`STORAGE_FULL`, or numpy's short write, which
    carries no errno: "N requested and M written")."""
    if exc.errno is None and not exc.filename:
        return re.fullmatch(r"\d+ requested and \d+ written", str(exc)) is not None
    return exc.errno in STORAGE_FULL


def index_location(out: str | Path) -> Path:
    """Where the index directory ``out`` really is: every symlink in its path resolved.

    Each writer resolves its index's path once, on entry, and then locks, builds
    beside and renames only that path. Locking ``.NAME.lock`` beside the name it
    was given let ``gearag add LINK`` and ``gearag add TARGET`` hold two locks on
    one index, and the second commit dropped the first's shard; renaming over a
    symlink failed (``IsADirectoryError``) and left ``.NAME.old-*`` behind.
    """
    return Path(os.path.realpath(out))


def lock_path(out: Path) -> Path:
    """The lock file of index directory ``out``: ``.NAME.lock`` beside where it really is (symlinks resolved),
    present while a build runs."""
    real = index_location(out)
    return real.parent / f".{real.name}.lock"


class IndexLock:
    """An exclusive ``flock`` on ``.NAME.lock`` beside an index directory, held while it is built.

    The OS drops the lock when the holder exits, even on ``kill -9``, so a
    lock never outlives its build (a file left by a killed build is simply
    locked again). The file records the holder's pid, host and start time
    for the message a second build gets. The holder unlinks the file before
    releasing it; a process that locked a file which is no longer at the
    path retries with the new one, so two builds never both hold the lock.
    """

    def __init__(self, out: Path) -> None:
        self.path = lock_path(out)
        self.out = Path(out)  # as given: the name a busy error shows
        self._fd: int | None = None

    def acquire(self) -> None:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                busy = _busy(self.out, fd)
                os.close(fd)
                raise busy from None
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the previous holder removed this file as we locked it: lock the new one
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                self.path.unlink(missing_ok=True)
            finally:
                os.close(fd)  # closing drops the flock


def check_unlocked(out: Path) -> None:
    """A one-line BusyError now if another process holds ``out``'s :class:`IndexLock`, so that a command
    fails before reading its inputs (a million-passage corpus takes minutes), not when it takes the lock.

    Only a check: the lock itself is taken later and is what excludes a second writer. The probe holds a
    shared lock for an instant; a build starting in that instant is told the index is busy. Call it before
    looking into ``out``: a running build's work files there are not the user's.
    """
    try:
        fd = os.open(lock_path(Path(out)), os.O_RDONLY)
    except OSError:
        return  # no lock file: nobody holds it (an unreadable one: the real lock reports it)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _busy(out, fd) from None
    finally:
        os.close(fd)


def _busy(out: Path, fd: int) -> BusyError:
    """The error for an index whose lock (open as ``fd``) another process holds, naming the holder."""
    return BusyError(f"{out}: another gearag build is writing this index ({_lock_holder(fd)}); wait for it to "
                     "finish or stop it, then retry")


def _lock_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']}, started {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


def foreign_entries(path: Path, manifest: dict[str, Any]) -> list[str]:
    """Entries of index directory ``path`` that its build did not write (user files, symlinks, ...)."""
    listed = set(manifest.get("files") or {}) | {MANIFEST}
    if manifest.get("layout") == SHARDED:  # its shards' and generation's files too
        from gearag.store.shards import owned_entries

        listed |= owned_entries(path, manifest)
    dirs = {p.rsplit("/", 1)[0] for p in listed if "/" in p}
    dirs |= {d.rsplit("/", i)[0] for d in list(dirs) for i in range(1, d.count("/") + 1)}
    foreign = []
    for root, dirnames, filenames in os.walk(path):
        rel_root = Path(root).relative_to(path).as_posix()
        if rel_root == ".":  # readers' lease files (gearag.store.lease) are gearag's, never listed
            dirnames[:] = [d for d in dirnames if d != LEASES_DIR or os.path.islink(os.path.join(root, d))]
        for name in sorted(dirnames):
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            if os.path.islink(os.path.join(root, name)) or rel not in dirs:
                foreign.append(rel + "/")
        dirnames[:] = [d for d in dirnames if (d if rel_root == "." else f"{rel_root}/{d}") in dirs
                       and not os.path.islink(os.path.join(root, d))]
        for name in sorted(filenames):
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            full = os.path.join(root, name)
            if rel not in listed or os.path.islink(full) or not os.path.isfile(full):
                foreign.append(rel)
    return foreign


def check_replaceable(out: Path) -> None:
    """Raise unless ``out`` is absent, empty, or a gearag index holding only what its build wrote."""
    if not out.exists():
        return
    if not out.is_dir():
        raise OutputError(f"{out}: is a file, not an index directory; refusing to replace it")
    if not any(out.iterdir()):
        return
    try:
        manifest = read_manifest(out)
    except IndexFormatError as exc:  # its message names the directory or manifest and says what is wrong
        raise IndexFormatError(f"{exc}; --overwrite only replaces a gearag index, refusing to delete it") from None
    foreign = foreign_entries(out, manifest)
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise IndexFormatError(
            f"{out}: holds files the index did not write ({', '.join(foreign[:3])}{more}); "
            "refusing to delete them with --overwrite — move them away first"
        )


def _seal(path: Path) -> tuple[tuple[int, int, int], dict[str, Any]] | None:
    """Flush ``path`` to disk and checksum it: its listing in the manifest, with the (inode, size, mtime)
    it was computed for; None if the file changed meanwhile (then the commit does it again)."""
    before = path.stat()
    with path.open("rb") as fh:
        os.fsync(fh.fileno())
    meta = checksum.entry(path, before.st_size)
    after = path.stat()
    key = (after.st_ino, after.st_size, after.st_mtime_ns)
    return (key, meta) if key == (before.st_ino, before.st_size, before.st_mtime_ns) else None


class IndexWriter:
    """Builds an index directory in a temporary sibling and renames it into place on commit.

    Holds :class:`IndexLock` from construction to :meth:`close` (or the end
    of the ``with`` block), so the whole build — including the work
    directory its stages use — belongs to one process at a time. A file
    written through ``write_*`` is flushed and checksummed by one background
    thread while the build goes on (hashing and ``fsync`` release the GIL:
    3.3 s of every add at a million passages were spent on them at commit);
    the commit checks each result against the file's inode, size and mtime
    and does the work itself for any other file.
    """

    def __init__(self, out: Path, *, overwrite: bool = False) -> None:
        self.out = index_location(check_output_dir(Path(out)))  # a symlink's target is built, the link kept
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._listed: dict[Path, dict[str, Any]] = {}  # manifests' file listings of the indices linked from
        self._linked: dict[str, tuple[int, dict[str, Any]]] = {}  # rel → (inode, listed size and checksums)
        self._sealing: dict[str, Future[tuple[tuple[int, int, int], dict[str, Any]] | None]] = {}
        self._sealer: ThreadPoolExecutor | None = None
        self._sealer_lock = threading.Lock()
        # The lock first, then the checks (before the work): what another build writes is not the user's.
        self.lock = IndexLock(self.out)
        self.lock.acquire()
        try:
            if self.out.exists() and not overwrite:
                if self.out.is_dir():
                    raise IndexFormatError(f"{self.out}: already exists (pass --overwrite to replace it)")
                raise OutputError(f"--out {self.out}: is a file, not a directory")
            check_replaceable(self.out)
            self._remove_stale()
            self.tmp = Path(tempfile.mkdtemp(dir=self.out.parent, prefix=f".{self.out.name}.tmp-"))
        except BaseException:
            self.lock.release()
            raise

    def _remove_stale(self) -> None:
        """Temporary directories of builds that were killed (-9): safe to delete only under the lock."""
        for pattern in (f".{self.out.name}.tmp-*", f".{self.out.name}.old-*"):
            for stale in self.out.parent.glob(pattern):
                if stale.is_dir() and not stale.is_symlink():
                    shutil.rmtree(stale, ignore_errors=True)

    def path(self, rel: str) -> Path:
        """Where ``rel`` is written (a caller may write it itself: its background checksum, if any, is dropped)."""
        self._sealing.pop(rel, None)
        p = self.tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def link(self, rel: str, source: Path, index: Path) -> None:
        """Hard-link ``source``, a file of the committed index (or shard, generation) at ``index``, as ``rel``.

        Its size and checksums are taken from that index's manifest at commit
        instead of reading the file again (an add links the earlier shards'
        tables, gigabytes at a million passages, into every generation).
        """
        self.path(rel).hardlink_to(source)
        listed = self._listed.get(index)
        if listed is None:
            listed = self._listed[index] = read_manifest(index).get("files") or {}
        meta = listed.get(source.relative_to(index).as_posix())
        if isinstance(meta, dict) and checksum.algorithm(meta) is not None:
            self._linked[rel] = (source.stat().st_ino, meta)

    def discard(self, rel_dir: str) -> None:
        """Leave the directory ``rel_dir`` (and what this build wrote or linked into it) out of the index."""
        prefix = rel_dir.rstrip("/") + "/"
        for rel in [r for r in self._sealing if r.startswith(prefix)]:
            future = self._sealing.pop(rel)
            if not future.cancel():
                future.exception()  # its checksum is being taken: waited for, not raced by the removal
        for rel in [r for r in self._linked if r.startswith(prefix)]:
            del self._linked[rel]
        shutil.rmtree(self.tmp / rel_dir, ignore_errors=True)

    def write_jsonl(self, rel: str, rows: Iterable[Any], *, offsets: bool = False) -> None:
        """One JSON record per line; with ``offsets``, each line's start is stored too (:func:`offsets_rel`),
        so that loading the file needs no scan for its newlines."""
        ends = array("q", [0])
        with self.path(rel).open("wb") as fh:
            for row in rows:
                line = jsonl_line(row)
                fh.write(line)
                if offsets:
                    ends.append(ends[-1] + len(line))
        self._seal_later(rel)
        if offsets:
            self.write_array(offsets_rel(rel), np.frombuffer(ends, dtype=np.int64))

    def write_json(self, rel: str, value: Any) -> None:
        self.path(rel).write_bytes(dump_json(value))
        self._seal_later(rel)

    def write_array(self, rel: str, array: np.ndarray) -> None:
        save_npy(self.path(rel), array)
        self._seal_later(rel)

    def write_files(self, files: Mapping[str, Any]) -> None:
        """Write each of ``files`` (path → value): JSON where the path ends in ``.json``, else an array."""
        for rel, value in files.items():
            if rel.endswith(".json"):
                self.write_json(rel, value)
            else:
                self.write_array(rel, np.asarray(value))

    def _seal_later(self, rel: str) -> None:
        """Flush and checksum ``rel`` (just written) in the background (class docstring)."""
        with self._sealer_lock:
            if self._sealer is None:
                self._sealer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gearag-seal")
            self._sealing[rel] = self._sealer.submit(_seal, self.tmp / rel)

    def _sealed(self, rel: str, stat: os.stat_result) -> dict[str, Any] | None:
        """The background result for ``rel`` if it is for the file as it is now."""
        future = self._sealing.get(rel)
        try:
            done = future.result() if future is not None else None
        except OSError as exc:
            if exc.errno in STORAGE_FULL:  # its fsync found no room: a second fsync may not say so again
                raise
            return None
        if done is None or done[0] != (stat.st_ino, stat.st_size, stat.st_mtime_ns):
            return None
        return done[1]

    def _stop_sealing(self) -> None:
        if self._sealer is not None:
            self._sealer.shutdown(wait=True, cancel_futures=True)
            self._sealer = None

    def commit(self, manifest: dict[str, Any]) -> Path:
        """Checksum every file, write the manifest, fsync, and swap the directory into place."""
        files: dict[str, dict[str, Any]] = {}
        for p in sorted(self.tmp.rglob("*")):
            if p.is_file():
                rel = p.relative_to(self.tmp).as_posix()
                linked = self._linked.get(rel)
                stat = p.stat()
                if linked is not None and linked[0] == stat.st_ino and linked[1]["bytes"] == stat.st_size:
                    files[rel] = {k: v for k, v in linked[1].items() if k in ("bytes", "sample", *checksum.ALGORITHMS)}
                    continue  # a committed index's file, linked: durable and checksummed already
                sealed = self._sealed(rel, stat)
                if sealed is None:
                    done = _seal(p)
                    if done is None:
                        raise OutputError(f"{p}: changed while the index was being committed")
                    sealed = done[1]
                files[rel] = sealed
        self._stop_sealing()
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "gearag_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **manifest,
            "files": files,
        }
        mpath = self.tmp / MANIFEST
        with mpath.open("w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        _fsync_dir(self.tmp)
        check_replaceable(self.out)  # again: files may have appeared while we built
        swap_directory(self.tmp, self.out)
        return self.out

    def abort(self) -> None:
        self._stop_sealing()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def close(self) -> None:
        """Remove the temporary directory if it was not committed, and release the lock."""
        try:
            if self.tmp.exists():  # not committed (a commit stops the checksum thread itself)
                self.abort()
        finally:
            self.lock.release()

    def __enter__(self) -> IndexWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

