"""Append-only, crash-safe checkpoints of per-item results (extraction, SiReRAG propositions and summaries).

Long extractions (an LLM over tens of thousands of passages) must survive a
``kill -9`` and never pay twice for a passage. Each finished passage is one
JSON line ``{"h": <passage hash>, "t": [[s, p, o], ...]}`` appended and
flushed as soon as it is done. On restart, lines are read back as
:class:`~gearag.model.Fact` values; a torn last line (the process died
mid-write) is ignored and truncated away. A triple is stored as a plain JSON
list of its three strings (a fact's ``source`` is not kept: raw triples have
none), so checkpoints from every version of gearag resume.

The file name carries the extractor key, so switching extractor or its
settings starts a fresh checkpoint instead of mixing outputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, Self

from gearag.model import Fact, Passage


def passage_hash(passage: Passage) -> str:
    """Content hash of a passage (title and text); ids may change between runs."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(passage.title.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(passage.text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def checkpoint_name(extractor_key: str) -> str:
    """File name for an extractor's checkpoint: readable prefix plus a short hash of the key."""
    safe = "".join(c if c.isalnum() else "-" for c in extractor_key)[:40].strip("-")
    short = hashlib.blake2b(extractor_key.encode(), digest_size=6).hexdigest()
    return f"extract-{safe}-{short}.jsonl"


class KeyedCheckpoint:
    """Append-only ``key → JSON value`` results, one line each, that survive ``kill -9``.

    For any per-item result (a passage's triples, SiReRAG's propositions per
    passage, summaries per cluster): each result is one line
    ``{"h": key, "v": value}`` flushed when done; on restart a torn or
    unreadable last line is dropped and truncated away. A later line for the
    same key wins. Subclasses change the line's encoding (:meth:`_encode`,
    :meth:`_decode`), not the guarantees.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.done: dict[str, Any] = {}
        self._fh: IO[str] | None = None
        self._lock = threading.Lock()
        self._load()

    def _encode(self, key: str, value: Any) -> dict[str, Any]:
        return {"h": key, "v": value}

    def _decode(self, row: Any) -> tuple[str, Any]:
        """(key, value) of one line; ValueError/KeyError/TypeError for a line that is not one."""
        return str(row["h"]), row["v"]

    def _load(self) -> None:
        if not self.path.exists():
            return
        good_bytes = 0
        with self.path.open("rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break  # torn final write
                try:
                    key, value = self._decode(json.loads(raw))
                except (ValueError, KeyError, TypeError):
                    break
                self.done[key] = value
                good_bytes += len(raw)
        if good_bytes != self.path.stat().st_size:
            with self.path.open("r+b") as fh:
                fh.truncate(good_bytes)

    def __contains__(self, key: str) -> bool:
        return key in self.done

    def __len__(self) -> int:
        return len(self.done)

    def get(self, key: str, default: Any = None) -> Any:
        """The value recorded for ``key``, else ``default``. ``Any``: a value is whatever JSON the caller added
        (as :meth:`_decode` reads it back: :class:`ExtractionCheckpoint`'s are lists of facts), its shape the
        caller's to know."""
        return self.done.get(key, default)

    def add(self, key: str, value: Any) -> None:
        """Record one result durably (flushed to the OS before returning); thread-safe."""
        line = json.dumps(self._encode(key, value), ensure_ascii=False)
        with self._lock:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("a", encoding="utf-8")
            self._fh.write(line + "\n")
            self._fh.flush()
            self.done[key] = value

    def sync(self) -> None:
        """fsync the file: call at batch boundaries to survive power loss, not just kill -9."""
        with self._lock:
            if self._fh is not None:
                self._fh.flush()
                os.fsync(self._fh.fileno())

    def close(self) -> None:
        self.sync()
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ExtractionCheckpoint(KeyedCheckpoint):
    """Per-passage triples of one extractor: ``{"h": <passage hash>, "t": [[s, p, o], ...]}`` a line."""

    done: dict[str, list[Fact]]

    def _encode(self, key: str, value: Any) -> dict[str, Any]:
        return {"h": key, "t": [list(t) for t in value]}

    def _decode(self, row: Any) -> tuple[str, list[Fact]]:
        if any(len(t) != 3 for t in row["t"]):
            raise ValueError("triple of wrong arity")
        return str(row["h"]), [Fact(*t) for t in row["t"]]

    def add(self, key: str, triples: Iterable[Fact]) -> None:
        """Record a passage's triples durably (flushed to the OS before returning)."""
        super().add(key, list(triples))


def text_key(*parts: str, size: int = 16) -> str:
    """Content hash of one or more texts (a cluster's input, a prompt's values), ``size`` bytes as hex."""
    digest = hashlib.blake2b(digest_size=size)
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()
