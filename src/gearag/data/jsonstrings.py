"""Lists of strings kept as their JSON text: read, reordered and written without a Python object per string.

A generation of a million-passage index reads the union's two vocabularies
(7M endpoint keys, 6.7M names: ``union/``), reorders them into entity order
and writes them as ``entities.json`` and ``graph/entities.json``. As Python
lists that is ~14M string objects made by a parse that holds the GIL
(~0.9 s each), then gathered and dumped again, while only the few strings a
generation compares or scans are ever read as strings. :class:`JsonStrings`
keeps a list's JSON text and each string's byte span instead: a string is
decoded where it is read, a reordering is a gather of bytes (numpy, without
the GIL), and writing is a copy. The text is the one orjson writes, so a
generation's files are byte for byte those a list would give.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np
import orjson

from gearag import setops
from gearag.arrays import offsets, ranges

#: Bytes scanned for quotes at a time (a bound on the scan's temporaries).
SCAN_BYTES = 1 << 26
#: Strings gathered at a time by :meth:`JsonStrings.take` (a bound on its index arrays).
GATHER_STRINGS = 1 << 20
_QUOTE, _BACKSLASH, _COMMA = 0x22, 0x5C, 0x2C
_GAP = np.frombuffer(b", \n\r\t", dtype=np.uint8)


def string_spans(data: np.ndarray, n: int | None = None, *, compact: bool = False) -> np.ndarray | None:
    """Where each string of ``data`` (bytes of a JSON list of strings, as uint8) starts and ends: an (n, 2) int64
    array of byte offsets, quotes included; None when ``data`` is not a flat list of strings (of ``n`` of them;
    with ``compact``, not one as orjson writes it: one comma, no whitespace, between strings).

    The unescaped quotes of such a list are exactly its strings' two ends; a
    quote after backslashes is escaped when they are odd in number (rare:
    looked at one by one). Between two strings there must be one comma and
    whitespace only, around them ``[`` and ``]``.
    """
    parts, backslash = [np.zeros(0, dtype=np.int64)], False
    for at in range(0, len(data), SCAN_BYTES):
        chunk = data[at : at + SCAN_BYTES]
        parts.append(np.flatnonzero(chunk == _QUOTE).astype(np.int64) + at)
        backslash = backslash or bool(np.any(chunk == _BACKSLASH))
    quotes = np.concatenate(parts)
    if backslash:  # some quote may be escaped (a file with no backslash at all has none)
        maybe = quotes[(quotes > 0) & (data[np.maximum(quotes - 1, 0)] == _BACKSLASH)]
        escaped = [q for q in maybe.tolist() if _backslashes_before(data, q) % 2]
        if escaped:
            quotes = np.setdiff1d(quotes, np.asarray(escaped, dtype=np.int64), assume_unique=True)
    if len(quotes) % 2 or (n is not None and len(quotes) != 2 * n):
        return None
    spans = quotes.reshape(-1, 2).copy()
    spans[:, 1] += 1
    if not len(spans):  # no strings: "[" and "]" around whitespace
        text = bytes(data).strip()
        return spans if text[:1] == b"[" and text[-1:] == b"]" and not text[1:-1].strip() else None
    head, tail = bytes(data[: spans[0, 0]]), bytes(data[spans[-1, 1] :])
    if head.strip() != b"[" or tail.strip() != b"]":
        return None
    if np.array_equal(spans[1:, 0], spans[:-1, 1] + 1) and bool(np.all(data[spans[:-1, 1]] == _COMMA)):
        return spans  # compact, as orjson writes it: one comma between strings
    if compact:
        return None
    lengths = spans[1:, 0] - spans[:-1, 1]
    if np.any(lengths < 1):
        return None
    gap = data[ranges(spans[:-1, 1], lengths)]
    if not setops.isin(gap, _GAP).all() or np.any(
            np.add.reduceat((gap == _COMMA).astype(np.int64), np.cumsum(lengths) - lengths) != 1):
        return None
    return spans


def _backslashes_before(data: np.ndarray | bytes, at: int) -> int:
    """How many backslashes directly precede byte ``at``."""
    k = at - 1
    while k >= 0 and data[k] == _BACKSLASH:
        k -= 1
    return at - 1 - k


class JsonStrings(Sequence[str]):
    """A list of strings as compact JSON text (``"a","b"``: one comma between strings, one byte after the last)
    and each string's span in it. Reading one string decodes it; iterating decodes the whole list at once."""

    def __init__(self, data: np.ndarray, spans: np.ndarray) -> None:
        self.data, self.spans = data, spans  #: uint8 text; (n, 2) int64 start and end of each string

    @classmethod
    def parse(cls, raw: bytes | mmap.mmap) -> JsonStrings | None:
        """The strings of ``raw``, a compact JSON list of strings (as orjson writes it); None when it is not one
        (the caller parses it as JSON)."""
        data = np.frombuffer(raw, dtype=np.uint8)
        spans = string_spans(data, compact=True)
        return None if spans is None else cls(data, spans)

    @classmethod
    def of(cls, strings: Sequence[str]) -> JsonStrings:
        """``strings`` as JSON text."""
        if isinstance(strings, JsonStrings):
            return strings
        made = cls.parse(orjson.dumps(list(strings)))
        assert made is not None  # orjson's compact list of strings
        return made

    def __len__(self) -> int:
        return len(self.spans)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> JsonStrings: ...

    def __getitem__(self, i: int | slice) -> str | JsonStrings:
        if isinstance(i, slice):
            if i.step not in (None, 1):
                return self.take(np.arange(len(self))[i])
            return JsonStrings(self.data, self.spans[i])
        start, end = self.spans[i]
        return str(orjson.loads(self.data[int(start) : int(end)].tobytes()))

    def __iter__(self) -> Iterator[str]:
        return iter(self.strings())

    def __eq__(self, other: object) -> bool:
        """Equal to the same strings, as text or as a list (or tuple)."""
        if isinstance(other, JsonStrings):
            return self.json() == other.json()
        if isinstance(other, list | tuple):
            return self.strings() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, as a list

    def __repr__(self) -> str:
        return f"JsonStrings({len(self)} strings)"

    def strings(self) -> list[str]:
        """Every string, decoded (one parse of the whole text)."""
        return list(orjson.loads(self.json()))

    def json(self) -> bytes:
        """The list as JSON text (what ``orjson.dumps`` of the list gives)."""
        if not len(self.spans):
            return b"[]"
        return b"[" + self.data[int(self.spans[0, 0]) : int(self.spans[-1, 1])].tobytes() + b"]"

    def take(self, ids: np.ndarray) -> JsonStrings:
        """The strings at ``ids``, in that order: their bytes gathered (by :data:`GATHER_STRINGS` at a time)."""
        ids = np.asarray(ids, dtype=np.int64)
        starts, ends = self.spans[ids, 0], self.spans[ids, 1]
        sizes = ends - starts + 1  # each string with the byte after it, made a comma below
        where = offsets(sizes)
        out = np.empty(int(where[-1]), dtype=np.uint8)
        for at in range(0, len(ids), GATHER_STRINGS):
            part = slice(at, at + GATHER_STRINGS)
            out[where[at] : where[min(at + GATHER_STRINGS, len(ids))]] = self.data[ranges(starts[part], sizes[part])]
        out[where[1:] - 1] = _COMMA
        return JsonStrings(out, np.stack([where[:-1], where[1:] - 1], axis=1))

    @classmethod
    def concat(cls, parts: Sequence[Sequence[str]]) -> JsonStrings:
        """The strings of ``parts`` (lists or :class:`JsonStrings`) one after the other."""
        made = [cls.of(p) for p in parts if len(p)]
        if len(made) == 1:
            return made[0]
        texts, spans, at = [], [], 0
        for m in made:
            lo, hi = int(m.spans[0, 0]), int(m.spans[-1, 1])
            texts.append(m.data[lo : hi + 1])
            spans.append(m.spans - lo + at)
            at += hi + 1 - lo
        data = np.concatenate(texts) if texts else np.zeros(0, dtype=np.uint8)
        if len(data):
            data[np.cumsum([len(t) for t in texts]) - 1] = _COMMA
        return cls(data, np.concatenate(spans) if spans else np.zeros((0, 2), dtype=np.int64))


class ChainedStrings(Sequence[str]):
    """Lists of strings one after the other, each read where it is: no copy of their text (a delta's add reads a
    vocabulary of millions of strings for the few it looks up)."""

    def __init__(self, parts: Sequence[Sequence[str]]) -> None:
        self.parts = list(parts)
        self.bounds = np.cumsum([0, *(len(p) for p in self.parts)]).astype(np.int64)

    def __len__(self) -> int:
        return int(self.bounds[-1])

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        part = int(np.searchsorted(self.bounds, i, side="right")) - 1
        return self.parts[part][i - int(self.bounds[part])]

    def __iter__(self) -> Iterator[str]:
        """Each part's strings in one pass (a stored list is read once, not string by string)."""
        for part in self.parts:
            yield from part

    def plus(self, more: Sequence[str]) -> ChainedStrings:
        """These strings, then ``more``."""
        return ChainedStrings([*self.parts, more])

    def at(self, ids: np.ndarray) -> list[str]:
        """``[self[i] for i in ids]``: each part's strings gathered at once (:func:`strings_at`), not located
        one by one."""
        ids = np.asarray(ids, dtype=np.int64)
        part = np.searchsorted(self.bounds, ids, side="right") - 1
        out: list[str] = [""] * len(ids)
        for p in setops.unique(part).tolist():
            mine = np.flatnonzero(part == p)
            for i, text in zip(mine.tolist(), strings_at(self.parts[p], ids[mine] - self.bounds[p]), strict=True):
                out[i] = text
        return out


def strings_at(strings: Sequence[str], ids: np.ndarray) -> list[str]:
    """``[strings[i] for i in ids]``, decoded at once when ``strings`` is :class:`JsonStrings`."""
    picked = taken(strings, ids)
    return picked.strings() if isinstance(picked, JsonStrings) else list(picked)


def taken(strings: Sequence[str], ids: np.ndarray) -> Sequence[str]:
    """The strings at ``ids``: gathered as text when ``strings`` is :class:`JsonStrings`, else a list (of a
    :class:`ChainedStrings`, gathered part by part)."""
    if isinstance(strings, JsonStrings):
        return strings.take(ids)
    if isinstance(strings, ChainedStrings):
        return strings.at(ids)
    return [strings[i] for i in np.asarray(ids).tolist()]


def default(value: object) -> orjson.Fragment:
    """orjson's ``default`` for :class:`JsonStrings`: its text, as it stands."""
    if isinstance(value, JsonStrings):
        return orjson.Fragment(value.json())
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
