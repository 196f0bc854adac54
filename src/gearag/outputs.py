"""Output paths that are checked before work starts, and files replaced atomically.

Every file or directory gearag writes for a user (``retrieve --out``,
``eval --json``, ``index --out``, ``demo --dir``, ``bench --out``, ``synth --out``)
goes through here:

* :func:`check_output_file` / :func:`check_output_dir` refuse, with a
  one-line :class:`~gearag.errors.OutputError`, a path that is a special
  file (device, FIFO, socket: ``/dev/stdout``), a directory where a file is
  expected (or the reverse), one of the command's input files, or a place
  the process cannot write — before any computation;
* :func:`atomic_write` writes into a uniquely named temporary file beside
  the target (``mkstemp``), fsyncs it and renames it over the target only
  if the target is absent or a regular file; the temporary file is removed
  on any failure;
* :class:`OutputFolder` is a folder the user names (``bench --out``) that gearag
  writes a few named files into, beside files of the user's own: it keeps a
  record of what it wrote there, and refuses (before any work) to replace a
  file of one of those names that it did not write.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from gearag.errors import OutputError


def _describe(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise OutputError(f"{path}: a parent of this path is a file, not a directory") from None
    except OSError as exc:
        raise OutputError(f"{path}: cannot use as output ({exc.strerror or exc})") from None


def _nearest_existing_parent(path: Path) -> Path:
    parent = path.parent
    while True:
        st = _stat(parent)
        if st is not None:
            if not stat.S_ISDIR(st.st_mode):
                raise OutputError(f"{path}: {parent} is not a directory")
            return parent
        if parent.parent == parent:
            return parent
        parent = parent.parent


def _check_writable_dir(path: Path, directory: Path) -> None:
    """Prove ``directory`` accepts new files by creating (and removing) one."""
    try:
        fd, name = tempfile.mkstemp(dir=directory, prefix=".gearag-probe-")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            reason = "permission denied" if exc.errno != errno.EROFS else "read-only file system"
        raise OutputError(f"{path}: cannot write in {directory} ({reason})") from None
    os.close(fd)
    os.unlink(name)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


#: Pseudo file systems whose entries are devices, processes or kernel settings, never output files.
_SPECIAL_TREES = ("/dev", "/proc", "/sys")


def _refuse_special_trees(path: Path, what: str, wanted: str = "the path of a file to write") -> None:
    absolute = os.path.abspath(path)
    for root in _SPECIAL_TREES:
        if absolute == root or absolute.startswith(root + "/"):
            raise OutputError(f"{what} {path}: is a special file (under {root}); give {wanted}")


def check_output_file(path: str | Path, *, inputs: Iterable[str | Path | None] = (), what: str = "--out") -> Path:
    """The path to write for ``path`` if a regular file may be written there; otherwise a one-line OutputError.

    Refuses directories, devices, FIFOs and sockets (and anything under
    ``/dev``, ``/proc`` or ``/sys``, such as ``/dev/stdout``), any of
    ``inputs`` (the same file under another name too), a parent that is a
    file, and directories the process cannot create files in. A symlink is
    followed: its target is returned, so the link itself is never replaced.
    """
    path = Path(path)
    _refuse_special_trees(path, what)
    if path.is_symlink():
        path = Path(os.path.realpath(path))  # write the link's target; never replace the link itself
        _refuse_special_trees(path, what)
    st = _stat(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{what} {path}: is {_describe(st.st_mode)}; give the path of a file to write")
    if str(path).endswith(os.sep) or path.name in ("", ".", ".."):
        raise OutputError(f"{what} {path}: is a directory; give the path of a file to write")
    for src in inputs:
        if src is not None and (_same_file(path, Path(src)) or Path(src).resolve() == path.resolve()):
            raise OutputError(f"{what} {path}: is an input file of this command; choose another output path")
    _check_writable_dir(path, _nearest_existing_parent(path))
    return path


def check_output_dir(path: str | Path, *, what: str = "--out") -> Path:
    """``path`` if a directory may be created (or replaced) there; otherwise a one-line OutputError."""
    path = Path(path)
    _refuse_special_trees(path, what)
    st = _stat(path)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{what} {path}: is {'a file' if stat.S_ISREG(st.st_mode) else _describe(st.st_mode)},"
                          " not a directory")
    resolved = path.resolve()
    if resolved == resolved.parent:
        raise OutputError(f"{what} {path}: is the file-system root; choose a directory to create")
    if st is not None and resolved == Path.cwd().resolve():
        raise OutputError(f"{what} {path}: is the current directory; name a new directory instead")
    _check_writable_dir(path, _nearest_existing_parent(resolved))
    return path


def replace_file(tmp: str | Path, target: str | Path) -> None:
    """Rename ``tmp`` over ``target``, only if ``target`` is absent or a regular file."""
    target = Path(target)
    st = _stat(target)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{target}: became {_describe(st.st_mode)} while gearag was working; not replaced")
    os.replace(tmp, target)


@contextlib.contextmanager
def atomic_write(path: str | Path, *, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """Write ``path`` through a uniquely named temporary sibling, renamed into place on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="\n") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(name, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the file the usual mode
        replace_file(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: Read once at import (reading the umask means setting it, which is not thread-safe).
_UMASK = _read_umask()


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_write(path) as fh:
        fh.write(text)


#: The record an :class:`OutputFolder` keeps of the files gearag wrote into it.
RECORD = ".gearag-written.json"
_RECORD_FORMAT = "gearag-written"

#: What identifies a file gearag wrote: its size and modification time (ns). A rename keeps both, so
#: the record can name a file before it is renamed into place; an edit, a copy over it or a new file
#: under its name changes them (``cp -a`` of the whole folder keeps them).
Fingerprint = tuple[int, int]


def _fingerprint(st: os.stat_result) -> Fingerprint:
    return (st.st_size, st.st_mtime_ns)


class OutputFolder:
    """A folder the user names that gearag writes the files ``names`` into, and nothing else.

    Why: ``--out DIR`` names a folder, not the files in it. The folder may be
    an old one of the user's holding a ``results.md`` of their own; replacing
    it because gearag happens to use the same name would lose their work
    without a word. So the folder keeps a record (:data:`RECORD`) of each
    file gearag wrote there, and a file of one of ``names`` that is not in
    the record as it is now (a file of the user's, one edited since, a
    symbolic link, a FIFO, a directory) is refused — by :meth:`claim`, before
    any work, and again just before each write. Files of other names are
    never touched, so writing into a folder of the user's own is fine, and so
    is writing again into a folder gearag wrote before (a rerun, a resumed
    run). A file is written atomically; the record names it before it is
    renamed into place, so an interruption never leaves a file of gearag's
    that the next run refuses.
    """

    def __init__(self, path: Path, names: Sequence[str], what: str) -> None:
        self.path = path
        self.names = tuple(names)
        self.what = what

    @classmethod
    def claim(cls, path: str | Path, names: Sequence[str], *, what: str = "--out",
              inputs: Iterable[str | Path | None] = ()) -> OutputFolder:
        """The folder at ``path`` if gearag may write ``names`` there; otherwise a one-line OutputError.

        Refuses a path that is a file, a device, a FIFO or under ``/dev``, ``/proc`` or ``/sys``;
        a folder the process cannot write in; one of ``names`` that is one of ``inputs`` (under any name)
        or that gearag did not write there (see the class). Creates nothing.
        """
        path = Path(path)
        wanted = "a directory to write into"
        _refuse_special_trees(path, what, wanted)
        _refuse_special_trees(Path(os.path.realpath(path)), what, wanted)  # a link to /dev/fd/1
        st = _stat(path)
        if st is not None and not stat.S_ISDIR(st.st_mode):
            kind = "a file" if stat.S_ISREG(st.st_mode) else _describe(st.st_mode)
            raise OutputError(f"{what} {path}: is {kind}, not a directory; give {wanted}")
        folder = cls(path, names, what)
        sources = [Path(p) for p in inputs if p is not None]
        for name in folder.names:
            target = path / name
            for src in sources:
                if _same_file(target, src) or src.resolve() == target.resolve():
                    raise OutputError(f"{what} {path}: its {name} would be {src}, an input file of this "
                                      f"command; choose another {what}")
        if st is not None:
            folder.check()
        _check_writable_dir(path, _nearest_existing_parent(path.resolve()) if st is None else path)
        return folder

    # -- the record -----------------------------------------------------------

    def _read_record(self) -> dict[str, list[Fingerprint]]:
        record = self.path / RECORD
        try:
            st = record.lstat()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise OutputError(f"{self.what} {self.path}: cannot read {RECORD} ({exc.strerror or exc})") from None
        bad = f"{self.what} {self.path}: its {RECORD} is not a record gearag wrote; choose another {self.what}"
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(bad)
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            if data.get("format") != _RECORD_FORMAT:
                raise ValueError(data.get("format"))
            return {str(name): [(int(a), int(b)) for a, b in prints] for name, prints in data["files"].items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            raise OutputError(bad) from None

    def _write_record(self, record: dict[str, list[Fingerprint]]) -> None:
        body = {"format": _RECORD_FORMAT,
                "note": "The files gearag wrote in this folder (size, mtime in ns): gearag replaces these and no "
                        "other file. Without this record it refuses to replace them.",
                "files": {name: [list(p) for p in prints] for name, prints in sorted(record.items())}}
        write_text_atomic(self.path / RECORD, json.dumps(body, indent=1) + "\n")

    def _foreign(self, name: str, record: dict[str, list[Fingerprint]]) -> str | None:
        """Why ``name`` in the folder is not gearag's to replace; None if it is absent or gearag's."""
        try:
            st = (self.path / name).lstat()
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return f"{name} is a symbolic link, which gearag does not write"
        if not stat.S_ISREG(st.st_mode):
            return f"{name} is {_describe(st.st_mode)}"
        if _fingerprint(st) not in record.get(name, []):
            return f"holds {name}, which gearag did not write there (or which was changed since)"
        return None

    def check(self) -> None:
        """A one-line OutputError if a file of one of :attr:`names` in the folder is not gearag's."""
        record = self._read_record()
        for name in self.names:
            why = self._foreign(name, record)
            if why is not None:
                raise OutputError(f"{self.what} {self.path}: {why}; choose another {self.what} or move it away")

    # -- writing ------------------------------------------------------------------

    @contextlib.contextmanager
    def open(self, name: str, *, binary: bool = False) -> Iterator[IO[Any]]:
        """Write ``name`` through a temporary sibling: recorded, then renamed into place on success."""
        if name not in self.names:
            raise ValueError(f"{name!r} is not one of this folder's files {self.names}")
        self.path.mkdir(parents=True, exist_ok=True)
        target = self.path / name
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=f".{name}.", suffix=".tmp")
        try:
            fh: IO[Any]
            with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")) as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_UMASK)
            record = self._read_record()
            why = self._foreign(name, record)
            if why is not None:  # appeared or changed while gearag was working
                raise OutputError(f"{self.what} {self.path}: {why}; not replaced")
            new = _fingerprint(os.stat(tmp))
            try:
                record[name] = [_fingerprint(target.lstat()), new]  # both while the rename is under way
            except FileNotFoundError:
                record[name] = [new]
            self._write_record(record)
            replace_file(tmp, target)
            record[name] = [new]
            self._write_record(record)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def write_text(self, name: str, text: str) -> Path:
        with self.open(name) as fh:
            fh.write(text)
        return self.path / name

    def write_bytes(self, name: str, data: bytes) -> Path:
        with self.open(name, binary=True) as fh:
            fh.write(data)
        return self.path / name

    def remove(self, name: str) -> bool:
        """Delete ``name`` if gearag wrote it here (a stale output of an earlier run); True if it did.

        A file of that name that gearag did not write is refused, as a write would be.
        """
        if name not in self.names:
            raise ValueError(f"{name!r} is not one of this folder's files {self.names}")
        record = self._read_record()
        why = self._foreign(name, record)
        if why is not None:
            raise OutputError(f"{self.what} {self.path}: {why}; not removed")
        try:
            (self.path / name).unlink()
        except FileNotFoundError:
            return False
        record.pop(name, None)
        self._write_record(record)
        return True
