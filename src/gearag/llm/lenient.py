"""A tolerant reader for the structures LLM replies almost contain.

LLM replies are often *almost* structured: JSON inside code fences or after
a sentence of prose, single quotes, Python tuples, trailing or missing
commas, doubled template braces, unquoted words, comments, replies cut off
by the token limit. :func:`scan_structures` reads such text with a lenient
literal parser (a superset of JSON and Python literals that closes whatever
a truncated reply left open) and returns every structure it finds;
:func:`loads_lenient` picks the one value a reply most likely meant.
Nothing here raises on any input string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_OPENERS = {"{": "}", "[": "]", "(": ")"}
_CLOSERS = set(")]}")
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d\"", "\u2018": "\u2019'", "\u201e": "\u201c\u201d\"", "`": "`"}
#: Every character a model may quote with.
ALL_QUOTES = set('"\'`\u201c\u201d\u2018\u2019\u201e')
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERAL = re.compile(r"(?:true|false|null|True|False|None)\b")
_LITERALS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
#: Deeper nesting is read as plain characters (and bounds every recursive walk over parsed values).
MAX_DEPTH = 64
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'"}


class Bare(str):
    """A string that was not quoted in the reply (an unquoted word or phrase)."""


class _TruncatedError(Exception):
    """The text ended inside a value."""


@dataclass(slots=True)
class Found:
    """A top-level structure found in a reply."""

    value: Any
    start: int
    end: int
    repaired: bool
    truncated: bool


class _Reader:
    def __init__(self, text: str) -> None:
        self.s = text
        self.n = len(text)
        self.repaired = False
        self.truncated = False
        self.depth = 0

    def skip(self, i: int) -> int:
        s, n = self.s, self.n
        while i < n:
            c = s[i]
            if c.isspace():
                i += 1
            elif s.startswith("//", i) or c == "#":
                j = s.find("\n", i)
                i = n if j < 0 else j + 1
                self.repaired = True
            else:
                break
        return i

    def _delimited(self, i: int) -> bool:
        """After a closing-quote candidate at ``i - 1``: does a delimiter (or the end) follow?"""
        s, n = self.s, self.n
        while i < n and s[i] in " \t":
            i += 1
        return i >= n or s[i] in ",:)]}\n\r" or s[i] in ALL_QUOTES

    def string(self, i: int) -> tuple[str, int]:
        s, n = self.s, self.n
        opener = s[i]
        closers = _QUOTES[opener]
        if opener != '"':
            self.repaired = True
        i += 1
        out: list[str] = []
        first_candidate: tuple[int, int] | None = None  # (index in out, position after the quote)
        while i < n:
            c = s[i]
            if c == "\\" and i + 1 < n:
                nxt = s[i + 1]
                if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2:i + 6]):
                    out.append(chr(int(s[i + 2:i + 6], 16)))
                    i += 6
                    continue
                out.append(_ESCAPES.get(nxt, "\\" + nxt))
                i += 2
                continue
            if c in closers:
                if self._delimited(i + 1):
                    return "".join(out), i + 1
                if first_candidate is None:
                    first_candidate = (len(out), i + 1)
                self.repaired = True  # an unescaped quote inside the string
                out.append(c)
                i += 1
                continue
            if c == "\n":
                # Strings do not span lines: close at the first quote seen, else at the line end.
                self.repaired = True
                if first_candidate is not None:
                    return "".join(out[: first_candidate[0]]), first_candidate[1]
                return "".join(out).rstrip(), i
            out.append(c)
            i += 1
        raise _TruncatedError

    def value(self, i: int, *, key: bool = False) -> tuple[Any, int]:
        s, n = self.s, self.n
        i = self.skip(i)
        if i >= n:
            raise _TruncatedError
        c = s[i]
        if c in _OPENERS:
            if self.depth >= MAX_DEPTH:  # absurd nesting: read the bracket as a plain character
                self.repaired = True
                return Bare(c), i + 1
            return self.container(i)
        if c in _QUOTES:
            return self.string(i)
        m = _NUMBER.match(s, i) or _LITERAL.match(s, i)
        if m and m.end() < n and self._delimited(m.end()):
            raw = m.group(0)
            if raw in _LITERALS:
                if raw[0].isupper():
                    self.repaired = True
                return _LITERALS[raw], m.end()
            return (float(raw) if any(ch in raw for ch in ".eE") else int(raw)), m.end()
        stops = ",)]}\n:" if key else ",)]}\n"
        j = i
        while j < n and s[j] not in stops:
            j += 1
        if j >= n:
            raise _TruncatedError  # a bare token running into the end may be cut off
        self.repaired = True
        return Bare(s[i:j].strip()), j

    def container(self, i: int) -> tuple[Any, int]:
        self.depth += 1
        try:
            return self._container(i)
        finally:
            self.depth -= 1

    def _container(self, i: int) -> tuple[Any, int]:
        s, n = self.s, self.n
        opener = s[i]
        if opener == "(":
            self.repaired = True
        is_obj = opener == "{"
        obj: dict[Any, Any] = {}
        items: list[Any] = []
        i += 1
        need_comma = False
        after_comma = False
        while True:
            i = self.skip(i)
            if i >= n:
                self.truncated = True
                return (obj if is_obj else items), n
            c = s[i]
            if c in _CLOSERS:
                if c != _OPENERS[opener] or after_comma:
                    self.repaired = True
                return (obj if is_obj else items), i + 1
            if c == ",":
                if not need_comma:
                    self.repaired = True
                need_comma, after_comma = False, True
                i += 1
                continue
            if c in ":=" and not is_obj:
                self.repaired = True
                i += 1
                continue
            if need_comma:
                self.repaired = True  # missing comma
            after_comma = False
            if is_obj:
                try:
                    k, i = self.value(i, key=True)
                except _TruncatedError:
                    self.truncated = True
                    return obj, n
                if isinstance(k, (list, dict)):
                    k = json.dumps(k, ensure_ascii=False)
                i = self.skip(i)
                if i < n and s[i] in ":=":
                    try:
                        v, i = self.value(i + 1)
                    except _TruncatedError:
                        self.truncated = True
                        return obj, n
                elif i >= n:
                    self.truncated = True
                    return obj, n
                else:  # a set-like {"a", "b"}: keys without values
                    self.repaired = True
                    v = None
                obj[k] = v
            else:
                try:
                    v, i = self.value(i)
                except _TruncatedError:
                    self.truncated = True
                    return items, n
                items.append(v)
            need_comma = True


_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)


def strip_fences(text: str) -> str:
    """The contents of Markdown code fences if there are any, else the text unchanged."""
    blocks = [b for b in _FENCE.findall(text) if b.strip()]
    return "\n".join(blocks) if blocks else text


_THINK = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)


def prepare(text: object) -> str:
    """A reply as text, without the ``<think>...</think>`` blocks reasoning models prepend."""
    if not isinstance(text, str):
        return ""
    if "<" in text:
        text = _THINK.sub("", text)
    return text


def scan_structures(text: str) -> list[Found]:
    """Every top-level ``{...}``, ``[...]`` and ``(...)`` structure in ``text``, leniently parsed.

    Doubled template braces (``{{ ... }}``) are undone first. Never raises.
    """
    if not isinstance(text, str) or not text:
        return []
    doubled = "{{" in text
    if doubled:
        text = text.replace("{{", "{").replace("}}", "}")
    found: list[Found] = []
    i = 0
    n = len(text)
    while i < n:
        j = min((p for p in (text.find(o, i) for o in _OPENERS) if p >= 0), default=-1)
        if j < 0:
            break
        reader = _Reader(text)
        value, end = reader.container(j)
        found.append(Found(value, j, end, reader.repaired or doubled, reader.truncated))
        i = max(end, j + 1)
    return found


def loads_lenient(text: str) -> tuple[Any, bool, bool]:
    """Best-effort single value from a reply: ``(value, repaired, truncated)``; ``(None, True, False)`` if none.

    Strict JSON (optionally in code fences) comes back unrepaired; otherwise
    the largest structure :func:`scan_structures` finds.
    """
    body = strip_fences(text).strip() if isinstance(text, str) else ""
    strict, value = _json(body)
    if strict:
        return value, False, False
    found = scan_structures(body)
    if not found:
        return None, True, False
    best = max(found, key=lambda f: f.end - f.start)
    return best.value, True, best.truncated


def loads_strict(text: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``text`` (the contents of its code fences, if any) is strict JSON.

    Else ``(False, None)``.
    """
    return _json(strip_fences(text).strip())


def _json(body: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(body)
    except (ValueError, RecursionError):
        return False, None


def unquote(text: str) -> str:
    """``text`` stripped of any number of matching outer quotes."""
    text = text.strip()
    while len(text) >= 2 and text[0] in ALL_QUOTES and text[-1] in ALL_QUOTES:
        text = text[1:-1].strip()
    return text
