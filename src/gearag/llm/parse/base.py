"""What every reply parser returns, running totals over many replies, and the one never-raise wrapper.

Every parser returns :class:`Parsed`: the typed ``value`` plus ``ok`` (the
expected structure was found), ``repaired`` (leniency was needed),
``truncated``, and counts of ``valid`` and ``invalid`` items. Parsers are
wrapped in :func:`never_raise`, so they never raise on any input: a reply
with nothing usable gives the parser's safe fallback value and ``ok=False``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from gearag.llm.lenient import prepare

T = TypeVar("T")

#: Bumped whenever parsing output could change (part of extraction checkpoint keys).
PARSER_VERSION = "1"


@dataclass(slots=True)
class Parsed(Generic[T]):
    """A parsed reply."""

    value: T
    #: The expected structure was found (possibly after repairs).
    ok: bool = True
    #: Leniency was needed: not clean JSON / not the exact requested format.
    repaired: bool = False
    #: The reply looked cut off (unclosed string, list or object).
    truncated: bool = False
    #: Items kept, and items found but dropped as unusable.
    valid: int = 0
    invalid: int = 0
    #: Short notes on what was wrong, for logs.
    problems: list[str] = field(default_factory=list)


@dataclass
class ParseStats:
    """Running totals over many parsed replies (thread-safe)."""

    replies: int = 0
    ok: int = 0
    failed: int = 0
    repaired: int = 0
    truncated: int = 0
    valid_items: int = 0
    invalid_items: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, parsed: Parsed[Any]) -> None:
        with self._lock:
            self.replies += 1
            self.ok += int(parsed.ok)
            self.failed += int(not parsed.ok)
            self.repaired += int(parsed.repaired)
            self.truncated += int(parsed.truncated)
            self.valid_items += parsed.valid
            self.invalid_items += parsed.invalid

    def merge(self, counts: Mapping[str, int]) -> None:
        """Add counts from another :meth:`to_dict` (a worker process's)."""
        with self._lock:
            for name in ("replies", "ok", "failed", "repaired", "truncated", "valid_items", "invalid_items"):
                setattr(self, name, getattr(self, name) + int(counts.get(name, 0)))

    def to_dict(self) -> dict[str, int]:
        return {
            "replies": self.replies, "ok": self.ok, "failed": self.failed, "repaired": self.repaired,
            "truncated": self.truncated, "valid_items": self.valid_items, "invalid_items": self.invalid_items,
        }

    def summary(self) -> str:
        return (f"{self.replies:,} replies parsed: {self.repaired:,} repaired, {self.truncated:,} truncated, "
                f"{self.failed:,} unusable; {self.valid_items:,} items kept, {self.invalid_items:,} dropped")


#: A reply parser: any object in (``None``, a non-string, a reply), a :class:`Parsed` out.
Parser = Callable[[object], Parsed[T]]


def never_raise(fallback: Callable[[object], T]) -> Callable[[Callable[[str], Parsed[T]]], Parser[T]]:
    """Decorate a parser of prepared reply text into one that takes any object and never raises.

    The wrapped parser sees the reply as text without the ``<think>`` blocks
    of reasoning models (:func:`~gearag.llm.lenient.prepare`; a non-string is
    ``""``). Any exception becomes ``Parsed(fallback(reply), ok=False,
    repaired=True)``; ``fallback`` gets the original reply and must not raise.
    """

    def wrap(parse: Callable[[str], Parsed[T]]) -> Parser[T]:
        @functools.wraps(parse)
        def safe(reply: object) -> Parsed[T]:
            try:
                return parse(prepare(reply))
            except Exception as exc:  # the guarantee is "never raise"
                return Parsed(fallback(reply), ok=False, repaired=True, problems=[f"parser error: {exc!r}"])

        return safe

    return wrap
