"""Output paths that are checked before work starts, and files replaced atomically.

Every file or directory gearag writes for a user (``retrieve --out``,
``eval --json``, ``index --out``, ``demo --dir``) goes through here:

* :func:`check_output_file` / :func:`check_output_dir` refuse, with a
  one-line :class:`~gearag.errors.OutputError`, a path that is a special
  file (device, FIFO, socket: ``/dev/stdout``), a directory where a file is
  expected (or the reverse), one of the command's input files, or a place
  the process cannot write — before any computation;
* :func:`atomic_write` writes into a uniquely named temporary file beside
  the target (``mkstemp``), fsyncs it and renames it over the target only
  if the target is absent or a regular file; the temporary file is removed
  on any failure.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

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


def _refuse_special_trees(path: Path, what: str) -> None:
    absolute = os.path.abspath(path)
    for root in _SPECIAL_TREES:
        if absolute == root or absolute.startswith(root + "/"):
            raise OutputError(f"{what} {path}: is a special file (under {root}); give the path of a file to write")


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
