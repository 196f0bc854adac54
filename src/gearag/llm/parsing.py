"""Parsers for every role's replies: salvage what is valid, count what is not, never raise.

LLM replies are often *almost* structured: JSON inside code fences or after
a sentence of prose, single quotes, Python tuples, trailing or missing
commas, doubled template braces, unquoted words, comments, replies cut off
by the token limit. :func:`scan_structures` reads such text with a lenient
literal parser (a superset of JSON and Python literals that closes whatever
a truncated reply left open) and returns every structure it finds.
The role parsers then pick out what they need.

Every parser returns :class:`Parsed`: the typed ``value`` plus ``ok`` (the
expected structure was found), ``repaired`` (leniency was needed),
``truncated``, and counts of ``valid`` and ``invalid`` items. Parsers never
raise on any input string; a reply with nothing usable gives an empty value
and ``ok=False``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")
Triple3 = tuple[str, str, str]

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

    def to_dict(self) -> dict[str, int]:
        return {
            "replies": self.replies, "ok": self.ok, "failed": self.failed, "repaired": self.repaired,
            "truncated": self.truncated, "valid_items": self.valid_items, "invalid_items": self.invalid_items,
        }

    def summary(self) -> str:
        return (f"{self.replies:,} replies parsed: {self.repaired:,} repaired, {self.truncated:,} truncated, "
                f"{self.failed:,} unusable; {self.valid_items:,} items kept, {self.invalid_items:,} dropped")


# ---------------------------------------------------------------------------
# Lenient literal reader
# ---------------------------------------------------------------------------

_OPENERS = {"{": "}", "[": "]", "(": ")"}
_CLOSERS = set(")]}")
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d\"", "\u2018": "\u2019'", "\u201e": "\u201c\u201d\"", "`": "`"}
_ALL_QUOTES = set('"\'`\u201c\u201d\u2018\u2019\u201e')
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERAL = re.compile(r"(?:true|false|null|True|False|None)\b")
_LITERALS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_MAX_DEPTH = 64
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'"}


class Bare(str):
    """A string that was not quoted in the reply (an unquoted word or phrase)."""


class _Truncated(Exception):
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
        return i >= n or s[i] in ",:)]}\n\r" or s[i] in _ALL_QUOTES

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
        raise _Truncated

    def value(self, i: int, *, key: bool = False) -> tuple[Any, int]:
        s, n = self.s, self.n
        i = self.skip(i)
        if i >= n:
            raise _Truncated
        c = s[i]
        if c in _OPENERS:
            if self.depth >= _MAX_DEPTH:  # absurd nesting: read the bracket as a plain character
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
            raise _Truncated  # a bare token running into the end may be cut off
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
                except _Truncated:
                    self.truncated = True
                    return obj, n
                if isinstance(k, (list, dict)):
                    k = json.dumps(k, ensure_ascii=False)
                i = self.skip(i)
                if i < n and s[i] in ":=":
                    try:
                        v, i = self.value(i + 1)
                    except _Truncated:
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
                except _Truncated:
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
    try:
        return json.loads(body), False, False
    except (ValueError, RecursionError):
        pass
    found = scan_structures(body)
    if not found:
        return None, True, False
    best = max(found, key=lambda f: f.end - f.start)
    return best.value, True, best.truncated


# ---------------------------------------------------------------------------
# Triples
# ---------------------------------------------------------------------------

_FILLER = {"...", "\u2026", "etc", "etc."}
_SUBJECT_KEYS = ("subject", "s", "head", "h", "source", "subj", "entity1", "entity_1", "head_entity", "from")
_PREDICATE_KEYS = ("predicate", "p", "relation", "r", "rel", "pred", "relationship", "edge", "property")
_OBJECT_KEYS = ("object", "o", "tail", "t", "target", "obj", "entity2", "entity_2", "tail_entity", "to", "value")
_TRIPLE_KEY = re.compile(r"tripl|relation|facts?$|edges?$|statements?$", re.IGNORECASE)
_ENTITY_KEY = re.compile(r"entit|^ner$|^names?$", re.IGNORECASE)
_SPACES = re.compile(r"\s+")


def clean_element(x: Any) -> str | None:
    """A triple element as a tidy string, or ``None`` if it is unusable."""
    if x is None or isinstance(x, (list, dict, tuple)):
        return None
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    text = _SPACES.sub(" ", str(x)).strip()
    text = text.strip("*_`").strip()
    if len(text) >= 2 and text[0] in _ALL_QUOTES and text[-1] in _ALL_QUOTES:
        text = text[1:-1].strip()
    if not text or text in _FILLER:
        return None
    return text


def _is_scalar(x: Any) -> bool:
    return not isinstance(x, (list, dict, tuple)) and x is not None


def _from_dict(d: dict[Any, Any]) -> Triple3 | None:
    lowered = {str(k).strip().lower(): v for k, v in d.items()}

    def pick(keys: tuple[str, ...]) -> Any:
        for k in keys:
            if k in lowered:
                return lowered[k]
        return None

    parts = [clean_element(pick(keys)) for keys in (_SUBJECT_KEYS, _PREDICATE_KEYS, _OBJECT_KEYS)]
    if all(parts):
        return (parts[0], parts[1], parts[2])  # type: ignore[return-value]
    return None


_SPLITTERS = (re.compile(r"\s*\|\s*"), re.compile(r"\s+(?:->|→|--|—|–)\s+"), re.compile(r"\s*;\s*"))


def _from_string(text: str) -> Triple3 | None:
    for splitter in _SPLITTERS:
        parts = [clean_element(p) for p in splitter.split(text.strip().strip("()<>[]⟨⟩"))]
        if len(parts) == 3 and all(parts):
            return (parts[0], parts[1], parts[2])  # type: ignore[return-value]
    return None


def as_triple(item: Any) -> tuple[Triple3 | None, bool]:
    """``(triple, repaired)`` for one candidate item; ``(None, _)`` when it is not a usable triple."""
    if isinstance(item, (list, tuple)):
        if len(item) == 3 and all(_is_scalar(x) for x in item):
            parts = [clean_element(x) for x in item]
            if all(parts):
                return (parts[0], parts[1], parts[2]), any(isinstance(x, Bare) for x in item)  # type: ignore[return-value]
            return None, False
        if len(item) == 1 and isinstance(item[0], (list, tuple)):
            return as_triple(item[0])
        return None, False
    if isinstance(item, dict):
        return _from_dict(item), True
    if isinstance(item, str):
        return _from_string(item), True
    return None, False


def _is_filler(item: Any) -> bool:
    return isinstance(item, str) and item.strip() in _FILLER


def _triple_lists(value: Any, out: list[list[Any]], entities: list[Any], depth: int = 0) -> None:
    """Collect lists found under triple-like keys, and entity lists under entity-like keys."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            key = str(k)
            if _TRIPLE_KEY.search(key) and isinstance(v, (list, tuple)):
                out.append(list(v))
            elif _ENTITY_KEY.search(key) and isinstance(v, (list, tuple, dict)):
                entities.append(v)
            else:
                _triple_lists(v, out, entities, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, (list, tuple, dict)):
                _triple_lists(v, out, entities, depth + 1)


def _loose_candidates(value: Any, depth: int = 0) -> Iterator[Any]:
    """Sequences anywhere in ``value`` that could be triples (3 scalars, or a near miss)."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, (list, tuple)):
        if value and all(_is_scalar(x) for x in value):
            yield value
            return
        for v in value:
            yield from _loose_candidates(v, depth + 1)
    elif isinstance(value, dict):
        if _from_dict(value) is not None:
            yield value
            return
        for k, v in value.items():
            if not _ENTITY_KEY.search(str(k)):
                yield from _loose_candidates(v, depth + 1)


def _quoted(item: Any) -> int:
    return sum(1 for x in item if isinstance(x, str) and not isinstance(x, Bare))


@dataclass(frozen=True, slots=True)
class TripleExtraction:
    """Output of the triple-extraction role: GEAR's joint named entities + triples."""

    named_entities: list[str]
    triples: list[Triple3]


def _entity_names(values: Iterable[Any]) -> list[str]:
    names: list[str] = []
    for v in values:
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, dict):
                    name = clean_element(x.get("name") or x.get("entity"))
                elif x is None or re.fullmatch(r"[nN]?\d+", str(k)) is None:
                    name = clean_element(k)  # {"Eli Lilly": "Organization"} or a set
                else:
                    name = clean_element(x)
                if name:
                    names.append(name)
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, dict):
                    name = clean_element(x.get("name") or x.get("entity") or x.get("text"))
                elif isinstance(x, (list, tuple)) and x:
                    name = clean_element(x[0])
                else:
                    name = clean_element(x)
                if name:
                    names.append(name)
    return list(dict.fromkeys(names))


def parse_triples(text: str) -> Parsed[TripleExtraction]:
    """Triple-extraction replies: ``{"named_entities": [...], "triples": [[s, p, o], ...]}`` and its many mutations."""
    try:
        return _parse_triples(prepare(text))
    except Exception as exc:  # noqa: BLE001 - the guarantee is "never raise"
        return Parsed(TripleExtraction([], []), ok=False, repaired=True, problems=[f"parser error: {exc!r}"])


def _strict(text: str) -> Any:
    body = strip_fences(text).strip()
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return _NOTHING


_NOTHING = object()


def _collect(
    text: str, *, allow_loose: bool = True
) -> tuple[list[Triple3], list[str], bool, bool, int, bool]:
    """Triples and entities from a reply: (triples, entities, repaired, truncated, invalid, structured)."""
    strict = _strict(text) if isinstance(text, str) else _NOTHING
    if strict is not _NOTHING:
        founds = [Found(strict, 0, len(text), False, False)]
    else:
        founds = scan_structures(text if isinstance(text, str) else "")
    repaired = any(f.repaired for f in founds)
    truncated = any(f.truncated for f in founds)
    lists: list[list[Any]] = []
    entity_values: list[Any] = []
    for f in founds:
        _triple_lists(f.value, lists, entity_values)
    triples: list[Triple3] = []
    invalid = 0
    structured = bool(lists)
    if lists:
        for lst in lists:
            for item in lst:
                if _is_filler(item):
                    continue
                triple, fixed = as_triple(item)
                if triple is None:
                    invalid += 1
                else:
                    triples.append(triple)
                    repaired |= fixed
    elif allow_loose:
        strong: list[Triple3] = []
        weak: list[Triple3] = []
        for f in founds:
            if isinstance(f.value, dict) and any(_ENTITY_KEY.search(str(k)) for k in f.value):
                continue  # an entity list alone: no triples here
            for cand in _loose_candidates(f.value):
                if isinstance(cand, dict):
                    strong.append(_from_dict(cand))  # type: ignore[arg-type]
                    repaired = True
                    continue
                if len(cand) == 3:
                    triple, _ = as_triple(cand)
                    if triple is None:
                        if _quoted(cand) >= 2:
                            invalid += 1
                    elif _quoted(cand) >= 2:
                        strong.append(triple)
                    else:
                        weak.append(triple)
                elif len(cand) >= 2 and _quoted(cand) >= 2 and not all(_is_filler(x) for x in cand):
                    invalid += 1  # a near miss: 2 or 4+ quoted elements
        triples = strong or weak
        if weak and not strong:
            repaired = True
        if not triples and not invalid and isinstance(text, str):
            triples = _line_triples(text)  # "A -> rel -> B" / "A | rel | B" lines
            repaired = repaired or bool(triples)
        structured = bool(triples) or invalid > 0
    entities = _entity_names(entity_values)
    return list(dict.fromkeys(triples)), entities, repaired, truncated, invalid, structured


_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")


def _line_triples(text: str) -> list[Triple3]:
    out = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        if line.count("|") == 2 or re.search(r"\s(?:->|\u2192)\s.*\s(?:->|\u2192)\s", line):
            triple = _from_string(line)
            if triple is not None:
                out.append(triple)
    return out


def _parse_triples(text: str) -> Parsed[TripleExtraction]:
    triples, entities, repaired, truncated, invalid, structured = _collect(text)
    problems = []
    if not structured and not entities:
        problems.append("no triples found")
    if invalid:
        problems.append(f"{invalid} malformed triple(s) dropped")
    if truncated:
        problems.append("reply looks truncated")
    return Parsed(
        TripleExtraction(entities, triples),
        ok=structured or bool(entities),
        repaired=repaired or truncated,
        truncated=truncated,
        valid=len(triples),
        invalid=invalid,
        problems=problems,
    )


_NO_FACTS = re.compile(r"^\W*(none|no (additional |new |relevant |further )?(facts?|information)|n/?a)\b", re.I)


def parse_facts(text: str) -> Parsed[list[Triple3]]:
    """Reader replies: ``("s", "p", "o"), ("s", "p", "o")`` lines, JSON lists, or triples buried in prose."""
    text = prepare(text)
    try:
        triples, _, repaired, truncated, invalid, structured = _collect(text)
    except Exception as exc:  # noqa: BLE001
        return Parsed([], ok=False, repaired=True, problems=[f"parser error: {exc!r}"])
    problems = []
    ok = structured
    if not structured:
        body = text.strip() if isinstance(text, str) else ""
        body = re.sub(r"^\s*(facts?|answer)\s*:\s*", "", body, flags=re.I)
        if body and _NO_FACTS.match(body):
            ok = True  # an explicit "no facts" is a valid, empty answer
        else:
            problems.append("no triples found")
    if invalid:
        problems.append(f"{invalid} malformed triple(s) dropped")
    return Parsed(triples, ok=ok, repaired=repaired or truncated, truncated=truncated,
                  valid=len(triples), invalid=invalid, problems=problems)


# ---------------------------------------------------------------------------
# Labelled text: reasoning, next question, answers
# ---------------------------------------------------------------------------

_MARKUP = re.compile(r"[*_#>`]+")


def _plain(text: str) -> str:
    """Text with Markdown emphasis, headings and quote markers removed, and fences unwrapped."""
    if not isinstance(text, str):
        return ""
    text = text.replace("\r\n", "\n")
    text = re.sub(r"```[\w+-]*", "", text)
    return _MARKUP.sub("", text)


def _unquote(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and text[0] in _ALL_QUOTES and text[-1] in _ALL_QUOTES:
        text = text[1:-1].strip()
    return text


@dataclass(frozen=True, slots=True)
class Reasoning:
    """GEAR's answerability judgement (§5.2): the answer when answerable, else why not."""

    answerable: bool
    answer: str = ""
    why: str = ""

    @property
    def answer_or_why(self) -> str:
        return self.answer if self.answerable else self.why


_ANSWERABLE = re.compile(r"answerable\s*(?:\?|:|-|=|is|\s)\s*\(?([A-Za-z]+)", re.IGNORECASE)
_YES = {"yes", "y", "true", "answerable", "yep", "correct"}
_NO = {"no", "n", "false", "not", "unanswerable", "none", "partially", "partial", "insufficient", "unknown", "nope"}
_LABEL = r"(?im)^[ \t\-\d.)]*{name}[ \t]*[:\-=][ \t]*"
_ANSWER_LABEL = re.compile(_LABEL.format(name=r"(?:final\s+)?answer"))
_WHY_LABEL = re.compile(_LABEL.format(name=r"(?:why|reason(?:ing)?|explanation|because)"))
_ANY_LABEL = re.compile(_LABEL.format(name=r"(?:answerable|(?:final\s+)?answer|why|reason(?:ing)?|explanation|next\s+question)"))
_UNKNOWN_ANSWER = re.compile(
    r"^(unknown|none|n/?a|not (provided|given|available|known|stated|mentioned|enough|specified)|"
    r"cannot be (determined|answered)|insufficient|no answer|unanswerable|\.\.\.|<.*>)\W*$",
    re.IGNORECASE,
)


def _field(text: str, label: re.Pattern[str]) -> str | None:
    """The text after a ``Label:`` up to the next known label; ``None`` if the label is absent."""
    m = label.search(text)
    if not m:
        return None
    rest = text[m.end():]
    nxt = _ANY_LABEL.search(rest)
    value = rest[: nxt.start()] if nxt else rest
    return value.strip()


def parse_reasoning(text: str) -> Parsed[Reasoning]:
    """``Answerable: Yes / Answer: ...`` or ``Answerable: No / Why: ...``; anything unclear is *not answerable*."""
    try:
        return _parse_reasoning(prepare(text))
    except Exception as exc:  # noqa: BLE001
        return Parsed(Reasoning(False, "", str(text)[:500]), ok=False, repaired=True,
                      problems=[f"parser error: {exc!r}"])


def _parse_reasoning(text: str) -> Parsed[Reasoning]:
    raw = text if isinstance(text, str) else ""
    plain = _plain(raw).strip()
    repaired = False
    verdict: bool | None = None
    answer = _field(plain, _ANSWER_LABEL)
    why = _field(plain, _WHY_LABEL)

    m = _ANSWERABLE.search(plain)
    if m:
        word = m.group(1).lower()
        if word in _YES:
            verdict = True
        elif word in _NO:
            verdict = False
        if not re.search(r"(?im)^\s*answerable\s*:\s*(yes|no)\b", raw):
            repaired = True
        if verdict and answer is None:
            tail = plain[m.end():].lstrip(" \t.,:;!-)")
            line = tail.split("\n")[0].strip()
            if line:
                answer, repaired = _ANSWER_PREFIX.sub("", line), True
    if verdict is None:
        value, _, _ = loads_lenient(raw) if "{" in raw else (None, False, False)
        if isinstance(value, dict):
            lowered = {str(k).lower(): v for k, v in value.items()}
            flag = lowered.get("answerable")
            if isinstance(flag, bool):
                verdict = flag
            elif isinstance(flag, str) and flag.strip().lower() in _YES | _NO:
                verdict = flag.strip().lower() in _YES
            if verdict is not None:
                repaired = True
                answer = str(lowered.get("answer") or answer or "").strip() or answer
                why = str(lowered.get("why") or lowered.get("reason") or why or "").strip() or why
    if verdict is None:
        first = re.match(r"\s*(yes|no)\b[\s.,:;!-]*", plain, re.IGNORECASE)
        if first:
            verdict = first.group(1).lower() == "yes"
            repaired = True
            if verdict and answer is None:
                answer = plain[first.end():].strip().split("\n")[0]
            if not verdict and why is None:
                why = plain[first.end():].strip()
    if verdict is None and answer and not _UNKNOWN_ANSWER.match(_unquote(answer)):
        verdict = True  # an "Answer: X" without the Answerable line
        repaired = True

    if verdict is None:
        return Parsed(Reasoning(False, "", plain[:500]), ok=False, repaired=True,
                      problems=["no 'Answerable: Yes/No' verdict; treated as not answerable"])

    problems: list[str] = []
    if verdict:
        ans = clean_answer(answer or "")
        if not ans or _UNKNOWN_ANSWER.match(ans):
            # "Yes" with no usable answer is not trustworthy: keep searching.
            return Parsed(Reasoning(False, "", why or plain[:500]), ok=True, repaired=True,
                          problems=["answerable without an answer; treated as not answerable"])
        return Parsed(Reasoning(True, ans, ""), ok=True, repaired=repaired, valid=1, problems=problems)
    reason = why if why else _strip_verdict(plain)
    return Parsed(Reasoning(False, "", reason.strip()), ok=True, repaired=repaired or why is None, valid=1,
                  problems=problems)


def _strip_verdict(text: str) -> str:
    return re.sub(r"(?im)^\s*answerable\s*[:\-=]?\s*\w+\s*[.,;]?\s*", "", text).strip()


_NEXT_LABEL = re.compile(
    r"(?im)^[ \t\-\d.)]*(?:next|new|follow[- ]?up|sub|rewritten|simpler)[ \t]*(?:question|query)[ \t]*[:\-=][ \t]*"
)
_QUESTION_LABEL = re.compile(r"(?im)^[ \t]*(?:question|query)[ \t]*[:\-=][ \t]*")


def parse_next_question(text: str) -> Parsed[str]:
    """The rewriter's ``Next Question: ...``; empty (``ok=False``) when no question can be found."""
    try:
        return _parse_next_question(prepare(text))
    except Exception as exc:  # noqa: BLE001
        return Parsed("", ok=False, repaired=True, problems=[f"parser error: {exc!r}"])


def _parse_next_question(text: str) -> Parsed[str]:
    plain = _plain(text).strip()
    repaired = False
    candidate = None
    m = _NEXT_LABEL.search(plain)
    if m:
        rest = plain[m.end():].strip()
        candidate = rest.split("\n")[0].strip() or (rest.split("\n") + [""])[1].strip()
        if not re.match(r"(?i)\s*next question\s*:", text.strip()):
            repaired = True
    if not candidate and "{" in plain:
        value, _, _ = loads_lenient(plain)
        if isinstance(value, dict):
            for k, v in value.items():
                if re.search(r"question|query", str(k), re.I) and isinstance(v, str) and v.strip():
                    candidate, repaired = v, True
                    break
    if not candidate:
        m = _QUESTION_LABEL.search(plain)
        if m:
            candidate, repaired = plain[m.end():].split("\n")[0], True
    if not candidate:
        lines = [ln.strip() for ln in plain.split("\n") if ln.strip()]
        asked = [ln for ln in lines if ln.endswith("?")]
        if len(lines) == 1:
            candidate = lines[0]
        elif asked:
            candidate, repaired = asked[0], True
        elif lines:
            candidate, repaired = lines[0], True
    question = _unquote(candidate or "")
    if not question:
        return Parsed("", ok=False, repaired=True, problems=["no next question found"])
    return Parsed(question, ok=True, repaired=repaired, valid=1)


_ANSWER_PREFIX = re.compile(r"(?i)^\s*(?:the\s+)?(?:final\s+|short\s+)?answer\s*(?:is|:|-)\s*")


def clean_answer(text: str) -> str:
    """An answer string without a leading "the answer is", quotes, emphasis or a final period."""
    answer = _plain(text).strip().split("\n")[0].strip()
    answer = _ANSWER_PREFIX.sub("", answer)
    answer = _unquote(answer)
    if answer.endswith(".") and not re.search(r"\b[A-Z]\.$|\b(?:Jr|Sr|St|Dr|Inc|Ltd|Co)\.$", answer):
        answer = answer[:-1].rstrip()
    return _unquote(answer)


def parse_answer(text: str) -> Parsed[str]:
    """A short QA answer: the text after ``Answer:`` on its line, without quotes, emphasis or a final period."""
    try:
        return _parse_answer(prepare(text))
    except Exception as exc:  # noqa: BLE001
        return Parsed("", ok=False, repaired=True, problems=[f"parser error: {exc!r}"])


def _parse_answer(text: str) -> Parsed[str]:
    raw = text if isinstance(text, str) else ""
    plain = _plain(raw).strip()
    repaired = False
    if plain.startswith("{"):
        value, _, _ = loads_lenient(plain)
        if isinstance(value, dict):
            for k, v in value.items():
                if "answer" in str(k).lower() and _is_scalar(v):
                    plain, repaired = str(v), True
                    break
    labels = list(_ANSWER_LABEL.finditer(plain))
    m = labels[-1] if labels else None  # the last one: models sometimes echo the example first
    if m:
        rest = plain[m.end():].strip()
        repaired = repaired or m.start() > 0
    else:
        rest = plain
    lines = [ln.strip() for ln in rest.split("\n") if ln.strip()]
    answer = lines[0] if lines else ""
    cleaned = clean_answer(answer)
    if _ANSWER_PREFIX.match(answer):
        repaired = True
    answer = cleaned
    if not answer:
        return Parsed("", ok=False, repaired=True, problems=["empty answer"])
    return Parsed(answer, ok=True, repaired=repaired or len(lines) > 1, valid=1)


_PREAMBLE = re.compile(
    r"(?i)^\s*(?:(?:sure|certainly|okay|ok)[,!.]?\s*)?(?:here\s+(?:is|are|'s)[^\n:]*:|"
    r"(?:summary|rewritten(?:\s+paragraph)?|output|paragraph|text|result)\s*:)\s*"
)


def parse_text(text: str) -> Parsed[str]:
    """Free-text roles (summaries, coreference rewrites): drop fences, labels and chatty preambles."""
    raw = prepare(text)
    body = strip_fences(raw).strip()
    cleaned = body
    for _ in range(2):
        cleaned = _PREAMBLE.sub("", cleaned, count=1).strip()
    cleaned = _unquote(cleaned) if cleaned.count('"') == 2 else cleaned
    repaired = cleaned != raw.strip()
    if not cleaned:
        return Parsed("", ok=False, repaired=True, problems=["empty reply"])
    return Parsed(cleaned, ok=True, repaired=repaired, valid=1)


# ---------------------------------------------------------------------------
# SiReRAG: entities and propositions
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entity:
    name: str
    type: str = ""


@dataclass(frozen=True, slots=True)
class Proposition:
    """A fact sentence with its semantic triplets (SiReRAG §4.2)."""

    fact: str
    triples: tuple[Triple3, ...] = ()

    @property
    def entities(self) -> list[str]:
        """Heads and tails of the triplets, in order of appearance."""
        return list(dict.fromkeys(x for t in self.triples for x in (t[0], t[2])))


def parse_entities(text: str) -> Parsed[list[Entity]]:
    """``{"n1": {"name": ..., "type": ...}, ...}`` and variants (lists of objects, of names, name→type maps)."""
    try:
        return _parse_entities(prepare(text))
    except Exception as exc:  # noqa: BLE001
        return Parsed([], ok=False, repaired=True, problems=[f"parser error: {exc!r}"])


def _entity_items(value: Any) -> list[Any]:
    if isinstance(value, dict):
        keys = list(value)
        if len(keys) == 1 and isinstance(value[keys[0]], (list, dict)) and _ENTITY_KEY.search(str(keys[0])):
            return _entity_items(value[keys[0]])
        if {"name"} <= {str(k).lower() for k in keys}:
            return [value]
        items = []
        for k, v in value.items():
            if isinstance(v, dict):
                items.append(v)
            elif re.fullmatch(r"[nNeE]?_?\d+", str(k)):
                items.append(v)
            else:
                items.append({"name": k, "type": v if isinstance(v, str) else ""})
        return items
    if isinstance(value, (list, tuple)):
        return list(value)
    return []


def _parse_entities(text: str) -> Parsed[list[Entity]]:
    value, repaired, truncated = loads_lenient(text)
    items = _entity_items(value)
    if not items and value is not None:
        for f in scan_structures(strip_fences(text)):
            items.extend(_entity_items(f.value))
    entities: dict[str, Entity] = {}
    invalid = 0
    for item in items:
        if _is_filler(item) or item == {}:
            continue
        if isinstance(item, dict):
            lowered = {str(k).lower(): v for k, v in item.items()}
            name = clean_element(lowered.get("name") or lowered.get("entity") or lowered.get("text"))
            etype = clean_element(lowered.get("type") or lowered.get("label") or lowered.get("category")) or ""
        elif isinstance(item, (list, tuple)) and item:
            name = clean_element(item[0])
            etype = (clean_element(item[1]) or "") if len(item) > 1 else ""
        else:
            name, etype = clean_element(item), ""
        if name is None:
            invalid += 1
            continue
        entities.setdefault(name, Entity(name, etype))
    ok = bool(entities) or (value is not None and not invalid)
    problems = [] if ok else ["no entities found"]
    if invalid:
        problems.append(f"{invalid} malformed entit(y/ies) dropped")
    return Parsed(list(entities.values()), ok=ok, repaired=repaired, truncated=truncated,
                  valid=len(entities), invalid=invalid, problems=problems)


_TYPO_KEY = re.compile(r'"(fact|triplets|triples|entities|proposition)\s*:\s*(?=[\[{"])', re.IGNORECASE)


def parse_propositions(text: str) -> Parsed[list[Proposition]]:
    """``{"f1": {"fact": ..., "triplets": [[h, p, t], ...]}, ...}`` and variants; facts without text are dropped."""
    try:
        return _parse_propositions(prepare(text))
    except Exception as exc:  # noqa: BLE001
        return Parsed([], ok=False, repaired=True, problems=[f"parser error: {exc!r}"])


def _proposition_items(value: Any) -> list[Any]:
    if isinstance(value, dict):
        lowered = {str(k).lower(): v for k, v in value.items()}
        if "fact" in lowered or "proposition" in lowered:
            return [value]
        if len(value) == 1:
            (only,) = value.values()
            if isinstance(only, (list, dict)):
                return _proposition_items(only)
        return list(value.values())
    if isinstance(value, (list, tuple)):
        return list(value)
    return []


def _parse_propositions(text: str) -> Parsed[list[Proposition]]:
    raw = text if isinstance(text, str) else ""
    fixed = _TYPO_KEY.sub(lambda m: f'"{m.group(1)}": ', raw)
    value, repaired, truncated = loads_lenient(fixed)
    repaired = repaired or fixed != raw
    props: list[Proposition] = []
    invalid = 0
    for item in _proposition_items(value):
        if _is_filler(item) or item == {}:
            continue
        fact: str | None = None
        triples: list[Triple3] = []
        if isinstance(item, dict):
            lowered = {str(k).lower(): v for k, v in item.items()}
            fact = clean_element(
                lowered.get("fact") or lowered.get("proposition") or lowered.get("statement") or lowered.get("text")
            )
            raw_triples = lowered.get("triplets") or lowered.get("triples") or []
            if isinstance(raw_triples, (list, tuple)):
                if raw_triples and all(_is_scalar(x) for x in raw_triples):
                    raw_triples = [raw_triples]  # a single triplet not wrapped in a list
                for t in raw_triples:
                    triple, _ = as_triple(t)
                    if triple is None:
                        invalid += 0 if _is_filler(t) else 1
                    else:
                        triples.append(triple)
        elif isinstance(item, str):
            fact = clean_element(item)
            repaired = True
        if not fact:
            invalid += 1
            continue
        props.append(Proposition(fact, tuple(dict.fromkeys(triples))))
    ok = bool(props)
    problems = [] if ok else ["no propositions found"]
    if invalid:
        problems.append(f"{invalid} malformed item(s) dropped")
    return Parsed(props, ok=ok, repaired=repaired, truncated=truncated,
                  valid=len(props), invalid=invalid, problems=problems)
