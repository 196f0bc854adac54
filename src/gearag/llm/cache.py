"""SQLite cache of chat-completion replies.

A reply is stored under a hash of everything that determines it: the
endpoint, the model, the messages and the request parameters (temperature,
max_tokens, stop...). The API key is not part of the key. Rerunning the same
work therefore sends no requests at all.

The database runs in WAL mode with a busy timeout, one connection per thread
and per process, and every write is its own short transaction, so several
threads and several processes (parallel benchmark workers, an indexing run
next to an agent run) can share one cache file. A committed reply survives a
``kill -9`` of the writer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self, TypeVar

from gearag.errors import ConfigError
from gearag.llm.usage import Usage

T = TypeVar("T")

log = logging.getLogger("gearag.llm")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    estimated INTEGER NOT NULL,
    finish_reason TEXT,
    created REAL NOT NULL
)
"""

#: Seconds a writer waits for another writer's lock before giving up.
BUSY_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class CachedReply:
    """What the cache keeps of a reply."""

    text: str
    usage: Usage
    model: str
    finish_reason: str | None = None


def cache_key(endpoint: str, model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> str:
    """Hex digest identifying a request: endpoint, model, messages and parameters."""
    blob = json.dumps(
        {"endpoint": endpoint, "model": model, "messages": list(messages), "params": dict(params)},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """A persistent ``key -> reply`` map in one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the LLM cache directory {self.path.parent}: {exc}") from None
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        conn = self._conn()  # create the schema now, so that a bad path fails early
        try:
            _retry_locked(lambda: conn.execute(_SCHEMA))
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"LLM cache {self.path} is not usable ({exc}); delete it or set GEARAG_CACHE_DIR"
            ) from None

    def _conn(self) -> sqlite3.Connection:
        pid = os.getpid()
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == pid:
            return conn
        # New thread, or a forked child: never reuse a connection across fork.
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
            _retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot open the LLM cache {self.path}: {exc}") from None
        self._local.conn = conn
        self._local.pid = pid
        with self._lock:
            self._all.append(conn)
        return conn

    def get(self, key: str) -> CachedReply | None:
        """The stored reply, or ``None``. A broken cache reads as a miss (and logs a warning)."""
        try:
            row = _retry_locked(
                lambda: self._conn().execute(
                    "SELECT text, prompt_tokens, completion_tokens, estimated, model, finish_reason "
                    "FROM replies WHERE key = ?",
                    (key,),
                ).fetchone()
            )
        except sqlite3.Error as exc:
            log.warning("LLM cache read failed (%s); treating as a miss", exc)
            return None
        if row is None:
            return None
        text, prompt, completion, estimated, model, finish = row
        return CachedReply(text, Usage(prompt, completion, bool(estimated)), model, finish)

    def put(self, key: str, reply: CachedReply) -> None:
        """Store a reply (committed before returning). A failed write logs a warning and is skipped."""
        row = (key, reply.model, reply.text, reply.usage.prompt_tokens, reply.usage.completion_tokens,
               int(reply.usage.estimated), reply.finish_reason, time.time())
        try:
            _retry_locked(
                lambda: self._conn().execute(
                    "INSERT OR REPLACE INTO replies (key, model, text, prompt_tokens, completion_tokens, "
                    "estimated, finish_reason, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
            )
        except sqlite3.Error as exc:
            log.warning("LLM cache write failed (%s); the reply is not cached", exc)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return int(_retry_locked(lambda: self._conn().execute("SELECT COUNT(*) FROM replies").fetchone()[0]))

    def clear(self) -> None:
        """Delete every stored reply."""
        _retry_locked(lambda: self._conn().execute("DELETE FROM replies"))

    def close(self) -> None:
        """Close every connection this object opened in this process."""
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            with contextlib.suppress(sqlite3.Error):  # closing from another thread
                conn.close()
        self._local = threading.local()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _retry_locked(fn: Callable[[], T], attempts: int = 20) -> T:
    """Run ``fn``; retry briefly if SQLite still reports a lock after its busy timeout."""
    for attempt in range(attempts - 1):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            time.sleep(0.05 * (attempt + 1))
    return fn()  # the last attempt: its error, if any, is the caller's
