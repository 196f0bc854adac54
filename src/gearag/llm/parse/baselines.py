"""Replies of the peer baselines' roles: IRCoT's reasoning sentence and HippoRAG's entity lists."""

from __future__ import annotations

import re
from typing import Any

from gearag.llm.lenient import loads_lenient, strip_fences, unquote
from gearag.llm.parse.base import Parsed, never_raise
from gearag.llm.parse.triples import clean_element, is_filler

#: IRCoT stops once a reasoning sentence states the answer (its prompt asks for this opener).
ANSWER_MARK = re.compile(r"\bso\s+the\s+answer\s+is\b", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:reasoning|thought|next\s+sentence|answer)\s*:\s*", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


@never_raise(lambda _: "")
def parse_thought(text: str) -> Parsed[str]:
    """IRCoT's next reasoning sentence: the first sentence of the reply, without a label.

    A reply that keeps reasoning past one sentence is cut to its first
    sentence (IRCoT keeps one per step), unless a later sentence states the
    answer, which is then kept so the loop can stop.
    """
    body = strip_fences(text).strip()
    lines = [ln for ln in body.splitlines() if ln.strip()]
    if not lines:
        return Parsed("", ok=False, problems=["empty reply"])
    first = _LABEL.sub("", lines[0]).strip()
    repaired = first != lines[0].strip() or len(lines) > 1
    sentences = _SENTENCE_END.split(first)
    thought = sentences[0].strip()
    if len(sentences) > 1:
        repaired = True
        answer = next((s for s in sentences if ANSWER_MARK.search(s)), None)
        if answer is not None and answer is not sentences[0]:
            thought = f"{thought} {answer.strip()}"
    if not thought:
        return Parsed("", ok=False, repaired=True, problems=["no sentence"])
    return Parsed(thought, ok=True, repaired=repaired, valid=1)


def _names(value: Any) -> list[Any]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if "entit" in str(key).lower() or "name" in str(key).lower():
                return _names(inner)
        return [v for v in value.values() if isinstance(v, str)]
    if isinstance(value, (list, tuple)):
        return list(value)
    return []


@never_raise(lambda _: list[str]())
def parse_names(text: str) -> Parsed[list[str]]:
    """``{"named_entities": [...]}``, a bare JSON list, or names one per line / comma-separated."""
    value, repaired, truncated = loads_lenient(text)
    items = _names(value)
    if not items:
        body = strip_fences(text).strip()
        body = re.sub(r"(?i)^\s*(?:named\s+)?entities\s*:\s*", "", body)
        parts = re.split(r"\n|,", body) if body else []
        items = [unquote(p.strip(" -*•\t")) for p in parts if p.strip(" -*•\t")]
        repaired = True
    names: list[str] = []
    invalid = 0
    for item in items:
        if is_filler(item):
            continue
        name = clean_element(item)
        if name is None:
            invalid += 1
        elif name not in names:
            names.append(name)
    ok = bool(names) or value is not None
    return Parsed(names, ok=ok, repaired=repaired, truncated=truncated, valid=len(names), invalid=invalid,
                  problems=[] if ok else ["no names found"])
