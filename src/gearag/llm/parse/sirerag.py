"""SiReRAG's replies: summaries and coreference rewrites (free text), entities and propositions (JSON).

The JSON formats are those of SiReRAG's Figures 7 and 8; the parsers also
accept lists of objects, of names, name→type maps, typo'd keys and
truncated replies. Each proposition's triplets are :class:`~gearag.model.Fact` objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gearag.llm.lenient import loads_lenient, scan_structures, strip_fences, unquote
from gearag.llm.parse.base import Parsed, never_raise
from gearag.llm.parse.triples import ENTITY_KEY, as_triple, clean_element, is_filler, is_scalar
from gearag.model import Fact

_PREAMBLE = re.compile(
    r"(?i)^\s*(?:(?:sure|certainly|okay|ok)[,!.]?\s*)?(?:here\s+(?:is|are|'s)[^\n:]*:|"
    r"(?:summary|rewritten(?:\s+paragraph)?|output|paragraph|text|result)\s*:)\s*"
)


@never_raise(lambda _: "")
def parse_text(text: str) -> Parsed[str]:
    """Free-text roles (summaries, coreference rewrites): drop fences, labels and chatty preambles."""
    body = strip_fences(text).strip()
    cleaned = body
    for _ in range(2):
        cleaned = _PREAMBLE.sub("", cleaned, count=1).strip()
    cleaned = unquote(cleaned) if cleaned.count('"') == 2 else cleaned
    repaired = cleaned != text.strip()
    if not cleaned:
        return Parsed("", ok=False, repaired=True, problems=["empty reply"])
    return Parsed(cleaned, ok=True, repaired=repaired, valid=1)


# ---------------------------------------------------------------------------
# Entities and propositions
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entity:
    """A named entity and its type (``""`` when the reply gave none)."""

    name: str
    type: str = ""


@dataclass(frozen=True, slots=True)
class Proposition:
    """A fact sentence with its semantic triplets (SiReRAG §4.2)."""

    fact: str
    triples: tuple[Fact, ...] = ()

    @property
    def entities(self) -> list[str]:
        """Heads and tails of the triplets, in order of appearance."""
        return list(dict.fromkeys(x for t in self.triples for x in (t.subject, t.object)))


def _entity_items(value: Any) -> list[Any]:
    if isinstance(value, dict):
        keys = list(value)
        if len(keys) == 1 and isinstance(value[keys[0]], (list, dict)) and ENTITY_KEY.search(str(keys[0])):
            return _entity_items(value[keys[0]])
        if {"name"} <= {str(k).lower() for k in keys}:
            return [value]
        items = []
        for k, v in value.items():
            if isinstance(v, dict) or re.fullmatch(r"[nNeE]?_?\d+", str(k)):
                items.append(v)
            else:
                items.append({"name": k, "type": v if isinstance(v, str) else ""})
        return items
    if isinstance(value, (list, tuple)):
        return list(value)
    return []


@never_raise(lambda _: list[Entity]())
def parse_entities(text: str) -> Parsed[list[Entity]]:
    """``{"n1": {"name": ..., "type": ...}, ...}`` and variants (lists of objects, of names, name→type maps)."""
    value, repaired, truncated = loads_lenient(text)
    items = _entity_items(value)
    if not items and value is not None:
        for f in scan_structures(strip_fences(text)):
            items.extend(_entity_items(f.value))
    entities: dict[str, Entity] = {}
    invalid = 0
    for item in items:
        if is_filler(item) or item == {}:
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


@never_raise(lambda _: list[Proposition]())
def parse_propositions(text: str) -> Parsed[list[Proposition]]:
    """``{"f1": {"fact": ..., "triplets": [[h, p, t], ...]}, ...}`` and variants; facts without text are dropped."""
    fixed = _TYPO_KEY.sub(lambda m: f'"{m.group(1)}": ', text)
    value, repaired, truncated = loads_lenient(fixed)
    repaired = repaired or fixed != text
    props: list[Proposition] = []
    invalid = 0
    for item in _proposition_items(value):
        if is_filler(item) or item == {}:
            continue
        fact: str | None = None
        triples: list[Fact] = []
        if isinstance(item, dict):
            lowered = {str(k).lower(): v for k, v in item.items()}
            fact = clean_element(
                lowered.get("fact") or lowered.get("proposition") or lowered.get("statement") or lowered.get("text")
            )
            raw_triples = lowered.get("triplets") or lowered.get("triples") or []
            if isinstance(raw_triples, (list, tuple)):
                if raw_triples and all(is_scalar(x) for x in raw_triples):
                    raw_triples = [raw_triples]  # a single triplet not wrapped in a list
                for t in raw_triples:
                    triple, _ = as_triple(t)
                    if triple is None:
                        invalid += 0 if is_filler(t) else 1
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
