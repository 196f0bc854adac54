"""Reading one array of a large JSON file element by element (the standard library's decoder, one element at a time).

:func:`iter_array` yields the elements of the file's top-level array, or of
the array under one key of its top-level object, while only the element being
decoded (and a read buffer) is in memory: ``json.loads`` of a whole file holds
every element as Python objects at once (an OpenIE results file of 1M passages
is ~1.3 GB of JSON, ~10 GB parsed). Each element is decoded with
``json.JSONDecoder.raw_decode``, so the values are exactly those ``json.loads``
gives; the other keys' values are decoded and dropped one at a time.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import IO, Any

#: Bytes read at a time.
CHUNK = 1 << 20

_WS = " \t\n\r"
#: What may follow the part of a number the buffer holds, up to the buffer's end.
_NUMBER_TAIL = re.compile(r"[0-9+\-.eE]*\Z")


class JSONStreamError(ValueError):
    """Invalid JSON (``msg``, ``lineno``, ``colno`` as in :class:`json.JSONDecodeError`), or not the expected shape."""

    def __init__(self, msg: str, lineno: int = 0, colno: int = 0) -> None:
        super().__init__(msg)
        self.msg, self.lineno, self.colno = msg, lineno, colno


class ArrayNotFoundError(LookupError):
    """The file's top level is not an array, nor an object with the key (``found``: the top level's JSON type)."""

    def __init__(self, found: str) -> None:
        super().__init__(found)
        self.found = found


class _Reader:
    """A text buffer over a binary file: decoded as ``json.loads`` decodes bytes, hashed as read."""

    def __init__(self, fh: IO[bytes], digest: Any | None, chunk: int) -> None:
        self.fh, self.digest, self.chunk = fh, digest, chunk
        self.buf, self.pos, self.eof = "", 0, False
        self.lines, self.col = 0, 0  # newlines before buf, characters after the last of them
        self.decoder: codecs.IncrementalDecoder | None = None
        self.json = json.JSONDecoder()

    def more(self, at_least: int = 1) -> bool:
        """Append at least ``at_least`` more characters (fewer at the end of the file); False at its end."""
        if self.eof:
            return False
        if self.pos > self.chunk:  # drop what is consumed, keeping line numbers right
            done = self.buf[: self.pos]
            newlines = done.count("\n")
            self.lines += newlines
            self.col = len(done) - done.rfind("\n") - 1 if newlines else self.col + len(done)
            self.buf, self.pos = self.buf[self.pos :], 0
        added = 0
        while added < at_least and not self.eof:
            raw = self.fh.read(max(self.chunk, at_least - added))
            if self.digest is not None:
                self.digest.update(raw)
            if self.decoder is None:
                # The encoding json.loads detects for bytes (UTF-8, with or without BOM, UTF-16 or UTF-32).
                self.decoder = codecs.getincrementaldecoder(json.detect_encoding(raw))()
            text = self.decoder.decode(raw, final=not raw)
            if not raw:
                self.eof = True
            self.buf += text
            added += len(text)
        return added > 0

    def error(self, msg: str, pos: int) -> JSONStreamError:
        line = self.buf.count("\n", 0, pos)
        col = pos - self.buf.rfind("\n", 0, pos) if line else pos + 1 + self.col
        return JSONStreamError(msg, self.lines + line + 1, col)

    def peek(self) -> str:
        """The next character that is not white space ('' at the end of the file), not consumed."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def expect(self, chars: str, msg: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise self.error(msg, self.pos)
        self.pos += 1
        return c

    def value(self) -> Any:
        """Decode the next value (as ``json`` builds it: dict, list, str, number, bool or None, of a shape only
        the caller knows); read more while it may be cut off by the buffer's end."""
        self.peek()
        while True:
            # (``more`` may move the buffer: positions are used only when nothing more can be read)
            try:
                obj, end = self.json.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if not self.eof:
                    self.more(len(self.buf) - self.pos)  # doubling: a long value costs linear time
                    continue
                raise self.error(exc.msg, exc.pos) from None
            if not self.eof and _NUMBER_TAIL.match(self.buf, end):  # a number ("1.5e-7") may go on in the next chunk
                self.more()
                continue
            self.pos = end
            return obj


def _type(c: str) -> str:
    return {"{": "object", "[": "array", '"': "string"}.get(c, "number" if c in "-0123456789" else "literal")


def iter_array(fh: IO[bytes], key: str, *, digest: Any | None = None, chunk: int = CHUNK) -> Iterator[Any]:
    """The elements of the top-level array of ``fh``, or of the array at ``key`` of its top-level object.

    ``digest`` (a :mod:`hashlib` object) is updated with every byte of the
    file. Raises :class:`JSONStreamError` for invalid JSON anywhere in the
    file (the elements before the error have been yielded) and
    :class:`ArrayNotFoundError` when the top level is neither an array nor an object
    whose ``key`` holds an array. A key given twice is an error (``json.loads``
    would silently keep the last).
    """
    r = _Reader(fh, digest, chunk)
    first = r.peek()
    if first == "[":
        yield from _elements(r)
    elif first == "{":
        r.pos += 1
        found = False
        if r.peek() == "}":
            r.pos += 1
        else:
            while True:
                at = r.pos
                if r.peek() != '"':
                    raise r.error("Expecting property name enclosed in double quotes", r.pos)
                name = r.value()
                r.expect(":", "Expecting ':' delimiter")
                if name == key:
                    if found:
                        raise r.error(f"{key!r} given twice", at)
                    found = True
                    if r.peek() != "[":
                        raise ArrayNotFoundError(f"object whose {key!r} is a {_type(r.peek())}")
                    yield from _elements(r)
                else:
                    r.value()  # another key's value: decoded and dropped
                if r.expect(",}", "Expecting ',' delimiter") == "}":
                    break
        if not found:
            raise ArrayNotFoundError(f"object without {key!r}")
    else:
        r.value()  # raises for invalid JSON (an empty file too)
        raise ArrayNotFoundError(_type(first))
    if r.peek():
        raise r.error("Extra data", r.pos)


def _elements(r: _Reader) -> Iterator[Any]:
    r.pos += 1  # the "["
    if r.peek() == "]":
        r.pos += 1
        return
    while True:
        yield r.value()
        if r.expect(",]", "Expecting ',' delimiter") == "]":
            return
