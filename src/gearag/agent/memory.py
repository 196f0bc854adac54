"""The gist memory on the index: each memory fact's index triple, the PPR seeds of the agent.

The agent's PPR rankings — inside each step and the ``ppr`` output ranking
(``AgentConfig.final``) — are seeded with the gist memory through index
triples. A fact the offline engine read *is* an index triple (``Fact.source``).
A fact a language model wrote (GEAR App. K.2: the reader and the gist
constructor write free text) is mapped to the index the way §4.1 maps the
reader's proximal triples: by tripleLink, ``h^1_base(t, T)``, its single most
similar index triple (Eq. 2; :class:`gearag.expand.link.TripleLinker`). That
triple then seeds exactly as a sourced fact's own triple does (same weight,
``AgentConfig.memory_weight``; same ``memory_seeds`` filter, which reads the
fact's own words).

Without this the LLM's memory reached no PPR seed at all: two models writing
different memories ranked the same passages.

passageLink (§5.4, Eq. 8; Eq. 10: ``RRF(h^k(t, C), h^k(t, T))``) is not used
for the ``ppr`` seeds: its triple half at ``k = 1`` is the linked triple's own
passage, which PPR from the triple's entities reaches through the passage
graph; its passage half would seed passages, a third kind of seed with a
weight of its own that no sourced fact has, and costs two more searches per
fact (``AgentConfig.final`` ``rrf`` is Eq. 9 with passageLink as printed, for
every gist triple whether it has a source or not).

A :class:`MemoryLinks` lives for one question: each model-written fact is
linked once, however many steps seed with it.
"""

from __future__ import annotations

from collections.abc import Iterable

from gearag.expand.link import TripleLinker
from gearag.model import Fact


class MemoryLinks:
    """Index triple ids of memory facts: a fact's ``source``, or its tripleLink (Eq. 2), linked once per text."""

    def __init__(self, linker: TripleLinker) -> None:
        self.linker = linker
        self._linked: dict[str, tuple[int, ...]] = {}

    def linked(self, fact: Fact) -> tuple[int, ...]:
        """The index triple(s) ``fact`` stands for: its own id, or the linker's top hit (none if nothing matches)."""
        if fact.source is not None:
            return (fact.source,)
        key = fact.text
        if key not in self._linked:
            self._linked[key] = tuple(self.linker.link([fact]))
        return self._linked[key]

    def triples(self, facts: Iterable[Fact]) -> list[int]:
        """Index triple ids of ``facts`` in their order, each once (sourced facts: their ``source``, as before)."""
        return list(dict.fromkeys(t for fact in facts for t in self.linked(fact)))
