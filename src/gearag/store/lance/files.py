"""Arrays a Lance index's queries read by position, memory-mapped from a local cache (issue 14).

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

The cache directory is :attr:`LanceSearchConfig.cache_dir`, else
``$GEARAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/gearag`` (``~/.cache/gearag``),
one sub-directory per exported index (by its identity), so a new export
never meets an old export's files. Nothing in it is needed again once its
index is gone: deleting the directory is always safe.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gearag.errors import IndexFormatError

FILES_TABLE = "files"
#: Bytes per row of the ``files`` table: what an export or a cache fill holds of one file at a time.
PART_BYTES = 32 << 20


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
    """A Lance index's ``files``, each copied once into the local cache and memory-mapped."""

    def __init__(self, db: Any, where: str, listing: dict[str, dict[str, Any]], directory: Path) -> None:
        self.db, self.where, self.listing, self.directory = db, where, listing, directory

    def __contains__(self, name: str) -> bool:
        return name in self.listing

    def array(self, name: str) -> np.ndarray:
        """The array stored as ``name``, memory-mapped read-only from its local copy."""
        try:
            return np.load(self.path(name), mmap_mode="r", allow_pickle=False)
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
