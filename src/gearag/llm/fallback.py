"""Weak models degrade, never break: a role whose reply yields nothing usable is played offline for that call.

A small model (SmolLM2-135M, issue 40) often writes prose where triples were
asked, restates the question where a new one was, or answers "Title: …".
Its roles then stop the pipeline from working at all: an empty gist memory,
a rewrite that is the prompt text. With fallbacks on (the default,
``EngineConfig.llm_fallback``), such a reply is replaced, for that call
only, by the offline engine's answer to the same inputs, and counted.
``--no-llm-fallback`` shows the raw model.

A reply is *unusable* when its parser found no structure (``Parsed.ok`` is
false) or the role's value is empty (no facts, no question, no answer). A
reasoner that parsed and said "not answerable" is a usable reply.

Counts: per question (:func:`fallback_scope`, as the token counts' usage
scope), per role: ``{"read": {"replies": 8, "offline": 5}}``, in the agent's
trace (``fallbacks``), the run file, ``eval``/``bench`` and the service's
step stream; :func:`describe` writes "read: 5 of 8 replies unusable,
offline used".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")


class FallbackCounts:
    """Replies and offline substitutions per role (thread-safe; nested scopes add to their parents)."""

    def __init__(self, parent: FallbackCounts | None = None) -> None:
        self.parent = parent
        self._counts: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def add(self, role: str, offline: bool) -> None:
        scope: FallbackCounts | None = self
        while scope is not None:
            with scope._lock:
                counts = scope._counts.setdefault(role, [0, 0])
                counts[0] += 1
                counts[1] += int(offline)
            scope = scope.parent

    def to_dict(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {role: {"replies": n, "offline": m} for role, (n, m) in sorted(self._counts.items())}


_SCOPE: ContextVar[FallbackCounts | None] = ContextVar("gearag_fallback_scope", default=None)
#: Counts outside any scope (a whole run's, e.g. the CLI summary).
TOTAL = FallbackCounts()


@contextmanager
def fallback_scope() -> Iterator[FallbackCounts]:
    """Count the replies and fallbacks of the calls made in this context (one question's)."""
    scope = FallbackCounts(_SCOPE.get() or TOTAL)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def note(role: str, offline: bool) -> None:
    """Count one reply of ``role``, and whether the offline engine played it."""
    (_SCOPE.get() or TOTAL).add(role, offline)


def played(role: str, value: T, usable: bool, offline: Callable[[], T] | None) -> T:
    """``value`` when ``usable`` (or no ``offline`` fallback is given), else ``offline()``; counted either way."""
    use_offline = not usable and offline is not None
    note(role, use_offline)
    return offline() if use_offline and offline is not None else value


def totals(traces: Iterable[Mapping[str, Any] | None]) -> dict[str, dict[str, int]]:
    """The ``fallbacks`` of many run-file traces added up per role (``{}`` when none has any)."""
    out: dict[str, dict[str, int]] = {}
    for trace in traces:
        for role, counts in ((trace or {}).get("fallbacks") or {}).items():
            mine = out.setdefault(role, {"replies": 0, "offline": 0})
            mine["replies"] += int(counts.get("replies", 0))
            mine["offline"] += int(counts.get("offline", 0))
    return dict(sorted(out.items()))


def describe(counts: Mapping[str, Mapping[str, int]]) -> list[str]:
    """One line per role that fell back: ``read: 5 of 8 replies unusable, offline used``."""
    return [f"{role}: {c['offline']} of {c['replies']} replies unusable, offline used"
            for role, c in counts.items() if c.get("offline")]
