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
from gearag.graph.passage_graph import GraphConfig, passage_graph_for
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
    #: What expands the base passages: ``ppr`` (Personalized PageRank over the
    #: passage-aware graph seeded by the question's entities, the proximal
    #: triples and the base passages; :mod:`gearag.graph.passage_graph`),
    #: ``beams`` (Algorithm 1 as printed, then Eq. 3) or ``both`` (RRF of the two).
    graph: str = "ppr"
    #: Settings of the passage graph (``graph`` = ppr | both).
    graph_config: GraphConfig = field(default_factory=GraphConfig)


GRAPH_MODES = ("ppr", "beams", "both")


class GraphExpansionRetriever:
    """NaiveGE when ``reader`` is None, SyncGE otherwise."""

    def __init__(self, index: Index, config: ExpansionConfig = ExpansionConfig(), reader: Reader | None = None) -> None:
        self.index = index
        self.config = config
        self.reader = reader
        self.base = make_retriever(index, config.base, "passages", rrf_k=config.rrf_k)
        self.expander = GraphExpander(index, config.beam, config.scoring)
        self.linker = TripleLinker(index, config.link) if reader is not None else None
        if config.graph not in GRAPH_MODES:
            raise ConfigError(f"unknown graph mode {config.graph!r} (choose from {', '.join(GRAPH_MODES)})")
        self.graph = passage_graph_for(index, config.graph_config) if config.graph != "beams" else None

    def __call__(self, question: str, k: int) -> MethodResult:
        from gearag.model import Hit

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
        rankings = []
        if self.graph is not None:
            seeds = initial if self.reader is not None else []
            ppr = self.graph.rank(question, [(h.idx, h.score) for h in base_hits], seeds, max(k, len(base_rows)))
            rankings.append(ppr)
            trace["ppr_passages"] = [self.index.passages[p].title for p in ppr[:k]]
        if self.config.graph != "ppr":
            expansion = self.expander.expand(question, initial)
            rankings.extend([expansion.passages, base_rows] if self.config.graph == "beams" else [expansion.passages])
            trace["paths"] = self.expander.describe(expansion.beams)
            trace["expanded_passages"] = [self.index.passages[p].title for p in expansion.passages[:k]]
        else:
            # PPR already weighs the base passages (seeded); they only fill the tail here.
            rankings = [list(dict.fromkeys([*rankings[0], *base_rows]))]
        fused = rrf(rankings, k=self.config.rrf_k)
        hits = [Hit(i, s) for i, s in fused[:k]]
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
        graph=options.get("graph") or ExpansionConfig.graph,
        graph_config=graph_config(options),
    )


def graph_config(options: dict[str, Any]) -> GraphConfig:
    """Passage-graph options (``ppr_damping``, ``passage_weight``, ``proximal_weight``,
    ``about_weight``, ``backlink_weight``, ``passage_nodes``); absent = the documented defaults."""
    base = GraphConfig()
    values = {}
    for name, key in (("damping", "ppr_damping"), ("passage_weight", "passage_weight"),
                      ("proximal_weight", "proximal_weight"), ("about_weight", "about_weight"),
                      ("backlink_weight", "backlink_weight")):
        if options.get(key) is not None:
            values[name] = float(options[key])
    if options.get("passage_nodes") is not None:
        values["passage_nodes"] = bool(options["passage_nodes"])
    return GraphConfig(**{**base.__dict__, **values})


def make_reader(index: Index, options: dict[str, Any]) -> Reader:
    engine = options.get("engine") or "offline"
    if engine == "offline":
        return OfflineReader(index)
    if engine in ("llm", "openai"):
        from gearag.expand.llm_reader import LLMReader

        return LLMReader.from_options(index, options)
    raise ConfigError(f"unknown engine {engine!r} (choose from offline, openai)")


# NaiveGE is the paper's baseline (§6.2): Algorithm 1 from all base triples, unless asked otherwise.
register_method(
    "naivege",
    lambda index, options: GraphExpansionRetriever(index, expansion_config({"graph": "beams", **options})),
)
register_method(
    "syncge",
    lambda index, options: GraphExpansionRetriever(index, expansion_config(options), make_reader(index, options)),
)


def _titlelink(index: Index, options: dict[str, Any]):
    from gearag.graph.titlelink import TitleLinkConfig, TitleLinkRetriever

    return TitleLinkRetriever(index, TitleLinkConfig(rrf_k=positive_int(options, "rrf_k", RRF_K)))


register_method("titlelink", _titlelink)
