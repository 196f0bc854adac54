"""NaiveGE and SyncGE as retrieval methods (GEAR §4, §6.2).

Both run the base retriever for ``C'_q``, pick initial triples, run diverse
triple beam search, map the flattened beams to passages ``~C_q`` and return
``RRF(~C_q, C'_q)`` (Eq. 3).

* NaiveGE: the initial triples are all triples of ``C'_q``.
* SyncGE: a reader extracts proximal triples from ``C'_q`` (Eq. 1) and
  tripleLink maps each to an index triple (Eq. 2).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from gearag.errors import ConfigError
from gearag.expand.beam import SCOPES, BeamConfig
from gearag.expand.expansion import GraphExpander, triples_of_passages
from gearag.expand.link import TripleLinker
from gearag.expand.reader import OfflineReader, Reader
from gearag.methods import MethodResult, positive_int, register_method
from gearag.retrieve import make_retriever
from gearag.retrieve.fusion import RRF_K, rrf
from gearag.store.index import Index


@dataclass(frozen=True)
class ExpansionConfig:
    """Settings of NaiveGE / SyncGE; defaults follow GEAR App. B.2."""

    #: Base retriever ``h_base`` over passages: bm25 | dense | hybrid.
    base: str = "bm25"
    #: Passages the base retriever returns; ``None`` = the requested top-k
    #: (the paper matches it to the recall threshold for single-step runs).
    base_k: int | None = None
    beam: BeamConfig = field(default_factory=BeamConfig)
    #: Path scoring for neural embedders: exact | sum (see expand.scoring).
    scoring: str = "exact"
    #: Retriever over triples used by tripleLink.
    link: str = "bm25"
    #: RRF constant for Eq. 3.
    rrf_k: int = RRF_K


class GraphExpansionRetriever:
    """NaiveGE when ``reader`` is None, SyncGE otherwise."""

    def __init__(self, index: Index, config: ExpansionConfig = ExpansionConfig(), reader: Reader | None = None) -> None:
        self.index = index
        self.config = config
        self.reader = reader
        self.base = make_retriever(index, config.base, "passages", rrf_k=config.rrf_k)
        self.expander = GraphExpander(index, config.beam, config.scoring)
        self.linker = TripleLinker(index, config.link) if reader is not None else None

    def __call__(self, question: str, k: int) -> MethodResult:
        started = time.perf_counter()
        base_hits = self.base.retrieve(question, self.config.base_k or k)
        base_rows = [h.idx for h in base_hits]
        trace: dict[str, Any] = {}
        if self.reader is None:
            initial = triples_of_passages(self.index, base_rows).tolist()
        else:
            proximal = self.reader.read(question, base_rows)
            trace["proximal"] = [list(t.as_tuple()) for t in proximal]
            initial = self.linker.link(proximal)  # type: ignore[union-attr]
        expansion = self.expander.expand(question, initial)
        fused = rrf([expansion.passages, base_rows], k=self.config.rrf_k)
        from gearag.model import Hit

        hits = [Hit(i, s) for i, s in fused[:k]]
        trace["paths"] = self.expander.describe(expansion.beams)
        trace["expanded_passages"] = [self.index.passages[p].title for p in expansion.passages[:k]]
        trace["seconds"] = round(time.perf_counter() - started, 4)
        return MethodResult(hits, trace)


def expansion_config(options: dict[str, Any]) -> ExpansionConfig:
    """Build the config from CLI-style options, with clear errors."""
    beam = BeamConfig(
        width=positive_int(options, "beam_width", 10),
        length=positive_int(options, "beam_length", 2),
        neighbours=positive_int(options, "neighbours", 100),
        gamma=options.get("gamma"),
        diversity=bool(options.get("diversity", True)),
        scope=options.get("scope") or BeamConfig.scope,
    )
    if beam.scope not in SCOPES:
        raise ConfigError(f"unknown neighbour scope {beam.scope!r} (choose from {', '.join(SCOPES)})")
    if beam.gamma is not None and beam.gamma <= 0:
        raise ConfigError("--gamma must be positive")
    return ExpansionConfig(
        base=options.get("base") or "bm25",
        base_k=positive_int(options, "base_k", 0) or None,
        beam=beam,
        scoring=options.get("scoring") or "exact",
        link=options.get("link") or "bm25",
        rrf_k=positive_int(options, "rrf_k", RRF_K),
    )


def make_reader(index: Index, options: dict[str, Any]) -> Reader:
    engine = options.get("engine") or "offline"
    if engine == "offline":
        return OfflineReader(index)
    if engine in ("llm", "openai"):
        from gearag.expand.llm_reader import LLMReader

        return LLMReader.from_options(index, options)
    raise ConfigError(f"unknown engine {engine!r} (choose from offline, openai)")


register_method("naivege", lambda index, options: GraphExpansionRetriever(index, expansion_config(options)))
register_method(
    "syncge",
    lambda index, options: GraphExpansionRetriever(index, expansion_config(options), make_reader(index, options)),
)
