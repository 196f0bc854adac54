"""Weak models degrade, never break: a role whose reply yields nothing usable is played offline for that call.

A small model (SmolLM2-135M, docs/llm.md) often writes prose where triples were
asked, restates the question where a new one was, or answers "Title: …".
Its roles then stop the pipeline from working at all: an empty gist memory,
a rewrite that is the prompt text. With fallbacks on (the default,
``EngineConfig.llm_fallback``), such a reply is replaced, for that call
only, by the offline engine's answer to the same inputs, and counted.
``--no-llm-fallback`` shows the raw model.

A reply is *unusable* when its parser found no structure (``Parsed.ok`` is
false) or the role's value is empty (no facts, no question, no answer). A
reasoner that parsed and said "not answerable" is a usable reply.

Index time has the same fallback, per passage or cluster, with the offline
engine of the index build (on by default; ``gearag index/add
--no-llm-fallback`` shows the raw model):

* ``extract`` — LLM triple extraction (:mod:`gearag.extract.llm`): a reply with no
  triple gets the spaCy rules' triples of its passage;
* ``propositions`` — SiReRAG's LLM propositions (:func:`gearag.sirerag.propositions.llm_propositions`):
  a passage whose replies give no proposition gets the offline engine's sentence facts;
* ``summarize`` — SiReRAG's LLM summaries (:class:`gearag.sirerag.summarise.LLMSummariser`):
  an empty summary is replaced by the extractive summary of the same cluster.

The build prints them as ``gearag eval`` does ("extract: 3 of 10 replies
unusable, spaCy rules used"); the extractor's key and the summariser's say
whether the fallback was on, so that no checkpoint mixes the two.

Counts: per question, in the token counts' scope
(:func:`gearag.llm.usage.usage_scope`, :meth:`~gearag.llm.usage.UsageScope.fallbacks`),
per role: ``{"reader": {"replies": 8, "offline": 5}}``, in the method's
trace (``fallbacks``), the run file, ``ask``/``eval``/``bench`` and the
service's result; :func:`describe` writes "reader: 5 of 8 replies
unusable, offline used".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from gearag.errors import LLMTimeoutError
from gearag.llm.usage import record_reply

log = logging.getLogger(__name__)

T = TypeVar("T")


def played(role: str, value: T, usable: bool, offline: Callable[[], T] | None) -> T:
    """``value`` when ``usable`` (or no ``offline`` fallback is given), else ``offline()``; counted either way."""
    use_offline = not usable and offline is not None
    record_reply(role, use_offline)
    return offline() if use_offline and offline is not None else value


def played_all(role: str, values: Sequence[T], usable: Sequence[bool],
               offline: Callable[[list[int]], Sequence[T]] | None) -> list[T]:
    """:func:`played` for many calls at once: the offline engine is asked once, for the unusable ones only
    (``offline(rows)`` → their values, in order), and each call is counted as :func:`played` counts it."""
    bad = [i for i, ok in enumerate(usable) if not ok]
    found = dict(zip(bad, offline(bad), strict=True)) if offline is not None and bad else {}
    return [played(role, value, ok, partial(found.__getitem__, i) if i in found else None)
            for i, (value, ok) in enumerate(zip(values, usable, strict=True))]


def played_call(role: str, ask: Callable[[], T], usable: Callable[[T], bool], offline: Callable[[], T] | None) -> T:
    """:func:`played` around the model call itself: ``ask()``'s value when ``usable`` says so, else ``offline()``.

    A call the client gave up on because it timed out (:class:`~gearag.errors.LLMTimeoutError`: twice at
    temperature 0, where a third try would time out again) is, with a fallback, played offline and counted
    like an unusable reply: a slow machine or an overlong reply costs that call, not the run. Without a
    fallback (``--no-llm-fallback``) it stops the run, as every other endpoint failure does.
    """
    try:
        value = ask()
    except LLMTimeoutError as exc:
        if offline is None:
            raise
        log.warning("LLM %s: %s; the offline engine played this call", role, exc)
        record_reply(role, True)
        return offline()
    return played(role, value, usable(value), offline)


def totals(traces: Iterable[Mapping[str, Any] | None]) -> dict[str, dict[str, int]]:
    """The ``fallbacks`` of many run-file traces added up per role (``{}`` when none has any)."""
    out: dict[str, dict[str, int]] = {}
    for trace in traces:
        for role, counts in ((trace or {}).get("fallbacks") or {}).items():
            mine = out.setdefault(role, {"replies": 0, "offline": 0})
            mine["replies"] += int(counts.get("replies", 0))
            mine["offline"] += int(counts.get("offline", 0))
    return dict(sorted(out.items()))


def describe(counts: Mapping[str, Mapping[str, int]], by: str = "offline") -> list[str]:
    """One line per role that fell back: ``read: 5 of 8 replies unusable, offline used`` (``by`` names what
    played the role instead: ``spaCy rules`` for extraction)."""
    return [f"{role}: {c['offline']} of {c['replies']} replies unusable, {by} used"
            for role, c in counts.items() if c.get("offline")]
