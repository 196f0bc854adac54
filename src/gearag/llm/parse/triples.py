"""Triple replies: GEAR's joint named entities + triples (extraction) and the reader's facts.

Both accept JSON objects and lists, Python tuples, ``"s | p | o"`` and
``"s -> p -> o"`` lines and triples buried in prose; every usable triple is
a :class:`~gearag.model.Fact` (``source=None``: a model wrote it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from gearag.llm.lenient import ALL_QUOTES, MAX_DEPTH, Bare, Found, loads_strict, scan_structures
from gearag.llm.parse.base import Parsed, never_raise
from gearag.model import Fact

_FILLER = {"...", "\u2026", "etc", "etc."}
_SUBJECT_KEYS = ("subject", "s", "head", "h", "source", "subj", "entity1", "entity_1", "head_entity", "from")
_PREDICATE_KEYS = ("predicate", "p", "relation", "r", "rel", "pred", "relationship", "edge", "property")
_OBJECT_KEYS = ("object", "o", "tail", "t", "target", "obj", "entity2", "entity_2", "tail_entity", "to", "value")
_TRIPLE_KEY = re.compile(r"tripl|relation|facts?$|edges?$|statements?$", re.IGNORECASE)
#: Keys under which replies list named entities (not triples).
ENTITY_KEY = re.compile(r"entit|^ner$|^names?$", re.IGNORECASE)
_SPACES = re.compile(r"\s+")


def clean_element(x: Any) -> str | None:
    """A triple element as a tidy string, or ``None`` if it is unusable."""
    if x is None or isinstance(x, (list, dict, tuple)):
        return None
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    text = _SPACES.sub(" ", str(x)).strip()
    text = text.strip("*_`").strip()
    if len(text) >= 2 and text[0] in ALL_QUOTES and text[-1] in ALL_QUOTES:
        text = text[1:-1].strip()
    if not text or text in _FILLER:
        return None
    return text


def _fact(parts: list[str | None]) -> Fact | None:
    """A fact from exactly three usable elements, else ``None``."""
    if len(parts) != 3:
        return None
    s, p, o = parts
    return Fact(s, p, o) if s and p and o else None


def is_scalar(x: Any) -> bool:
    """Not a container and not ``None``: a candidate triple element."""
    return not isinstance(x, (list, dict, tuple)) and x is not None


def _from_dict(d: dict[Any, Any]) -> Fact | None:
    lowered = {str(k).strip().lower(): v for k, v in d.items()}

    def pick(keys: tuple[str, ...]) -> object:
        for k in keys:
            if k in lowered:
                return lowered[k]
        return None

    return _fact([clean_element(pick(keys)) for keys in (_SUBJECT_KEYS, _PREDICATE_KEYS, _OBJECT_KEYS)])


_SPLITTERS = (re.compile(r"\s*\|\s*"), re.compile(r"\s+(?:->|→|--|—|–)\s+"), re.compile(r"\s*;\s*"))


def _from_string(text: str) -> Fact | None:
    for splitter in _SPLITTERS:
        fact = _fact([clean_element(p) for p in splitter.split(text.strip().strip("()<>[]⟨⟩"))])
        if fact is not None:
            return fact
    return None


def as_triple(item: Any) -> tuple[Fact | None, bool]:
    """``(triple, repaired)`` for one candidate item; ``(None, _)`` when it is not a usable triple."""
    if isinstance(item, (list, tuple)):
        if len(item) == 3 and all(is_scalar(x) for x in item):
            fact = _fact([clean_element(x) for x in item])
            return (fact, any(isinstance(x, Bare) for x in item)) if fact is not None else (None, False)
        if len(item) == 1 and isinstance(item[0], (list, tuple)):
            return as_triple(item[0])
        return None, False
    if isinstance(item, dict):
        return _from_dict(item), True
    if isinstance(item, str):
        return _from_string(item), True
    return None, False


def is_filler(item: Any) -> bool:
    """A placeholder such as ``...`` or ``etc.`` that models leave in lists."""
    return isinstance(item, str) and item.strip() in _FILLER


def _triple_lists(value: Any, out: list[list[Any]], entities: list[Any], depth: int = 0) -> None:
    """Collect lists found under triple-like keys, and entity lists under entity-like keys."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            key = str(k)
            if _TRIPLE_KEY.search(key) and isinstance(v, (list, tuple)):
                out.append(list(v))
            elif ENTITY_KEY.search(key) and isinstance(v, (list, tuple, dict)):
                entities.append(v)
            else:
                _triple_lists(v, out, entities, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, (list, tuple, dict)):
                _triple_lists(v, out, entities, depth + 1)


def _loose_candidates(value: Any, depth: int = 0) -> Iterator[Any]:
    """Sequences anywhere in ``value`` that could be triples (3 scalars, or a near miss)."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, (list, tuple)):
        if value and all(is_scalar(x) for x in value):
            yield value
            return
        for v in value:
            yield from _loose_candidates(v, depth + 1)
    elif isinstance(value, dict):
        if _from_dict(value) is not None:
            yield value
            return
        for k, v in value.items():
            if not ENTITY_KEY.search(str(k)):
                yield from _loose_candidates(v, depth + 1)


def _quoted(item: Any) -> int:
    return sum(1 for x in item if isinstance(x, str) and not isinstance(x, Bare))


@dataclass(frozen=True, slots=True)
class TripleExtraction:
    """Output of the triple-extraction role: GEAR's joint named entities + triples."""

    named_entities: list[str]
    triples: list[Fact]


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


def _collect(text: str) -> tuple[list[Fact], list[str], bool, bool, int, bool]:
    """Triples and entities from a reply: (triples, entities, repaired, truncated, invalid, structured)."""
    strict, value = loads_strict(text)
    founds = [Found(value, 0, len(text), False, False)] if strict else scan_structures(text)
    repaired = any(f.repaired for f in founds)
    truncated = any(f.truncated for f in founds)
    lists: list[list[Any]] = []
    entity_values: list[Any] = []
    for f in founds:
        _triple_lists(f.value, lists, entity_values)
    triples: list[Fact] = []
    invalid = 0
    structured = bool(lists)
    if lists:
        for lst in lists:
            for item in lst:
                if is_filler(item):
                    continue
                triple, fixed = as_triple(item)
                if triple is None:
                    invalid += 1
                else:
                    triples.append(triple)
                    repaired |= fixed
    else:
        strong: list[Fact] = []
        weak: list[Fact] = []
        for f in founds:
            if isinstance(f.value, dict) and any(ENTITY_KEY.search(str(k)) for k in f.value):
                continue  # an entity list alone: no triples here
            for cand in _loose_candidates(f.value):
                if isinstance(cand, dict):
                    fact = _from_dict(cand)
                    if fact is not None:  # always: _loose_candidates yields only dicts that are facts
                        strong.append(fact)
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
                elif len(cand) >= 2 and _quoted(cand) >= 2 and not all(is_filler(x) for x in cand):
                    invalid += 1  # a near miss: 2 or 4+ quoted elements
        triples = strong or weak
        if weak and not strong:
            repaired = True
        if not triples and not invalid:
            triples = _line_triples(text)  # "A -> rel -> B" / "A | rel | B" lines
            repaired = repaired or bool(triples)
        structured = bool(triples) or invalid > 0
    entities = _entity_names(entity_values)
    return list(dict.fromkeys(triples)), entities, repaired, truncated, invalid, structured


_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")


def _line_triples(text: str) -> list[Fact]:
    out = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        if line.count("|") == 2 or re.search(r"\s(?:->|\u2192)\s.*\s(?:->|\u2192)\s", line):
            triple = _from_string(line)
            if triple is not None:
                out.append(triple)
    return out


@never_raise(lambda _: TripleExtraction([], []))
def parse_triples(text: str) -> Parsed[TripleExtraction]:
    """Triple-extraction replies: ``{"named_entities": [...], "triples": [[s, p, o], ...]}`` and its many mutations."""
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


_NO_FACTS = re.compile(
    r"^\W*(none|no (additional |new |relevant |further )?(facts?|information)|n/?a)\b", re.IGNORECASE
)


@never_raise(lambda _: list[Fact]())
def parse_facts(text: str) -> Parsed[list[Fact]]:
    """Reader replies: ``("s", "p", "o"), ("s", "p", "o")`` lines, JSON lists, or triples buried in prose."""
    triples, _, repaired, truncated, invalid, structured = _collect(text)
    problems = []
    ok = structured
    if not structured:
        body = text.strip()
        body = re.sub(r"^\s*(facts?|answer)\s*:\s*", "", body, flags=re.IGNORECASE)
        if body and _NO_FACTS.match(body):
            ok = True  # an explicit "no facts" is a valid, empty answer
        else:
            problems.append("no triples found")
    if invalid:
        problems.append(f"{invalid} malformed triple(s) dropped")
    return Parsed(triples, ok=ok, repaired=repaired or truncated, truncated=truncated,
                  valid=len(triples), invalid=invalid, problems=problems)
