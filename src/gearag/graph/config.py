"""The passage graph's query-time settings and their defaults, in one place (PPR's included).

Low in :mod:`gearag.graph`: the prepared graph, its scaled columns and PPR read these settings, and the
passage graph (:mod:`gearag.graph.passage_graph`) builds on all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gearag.errors import ConfigError
from gearag.options import QUESTION, setting, upto

#: PPR damping (probability of following an edge); HippoRAG's 0.5.
DAMPING = 0.5
#: Forward push: node ``u`` is pushed while its residual exceeds ``PUSH_EPS × deg(u)`` (seed mass 1).
PUSH_EPS = 1e-6
#: PPR solvers (:mod:`gearag.graph.ppr`).
SOLVERS = ("power", "push")
#: Passage-node seed weight: the low end of HippoRAG 2's range (0.01–0.1 behave alike on MuSiQue, §5).
PASSAGE_WEIGHT = 0.01


#: PPR convergence for ranking: L1 change < 1e-5 (≈ 17 iterations at d = 0.5; the
#: error after n iterations is at most dⁿ, far below the gaps between ranked passages).
RANK_TOL = 1e-5


@dataclass(frozen=True)
class PassageGraphConfig:
    """Query-time settings of the passage graph (defaults: HippoRAG 2's constants where they exist)."""

    #: PPR damping (probability of following an edge); HippoRAG's 0.5.
    damping: float = setting(DAMPING, "PPR damping over the passage graph (HippoRAG: 0.5).", name="ppr_damping",
                             positive=True, request=upto(0.95))
    #: Seed weight of the base passages (× min-max score). HippoRAG 2 uses 0.05
    #: and reports 0.01–0.1 alike on MuSiQue; we take the low end of that
    #: range, 0.01, because our entity seeds come from exact name matches
    #: (not an embedding's fact scores) and deserve the larger share.
    #: Measured on the first half of 2Wiki only (R@5 88.2 at 0.01, 82.7 at 0.05).
    passage_weight: float = setting(PASSAGE_WEIGHT, "PPR seed weight of the base passages (HippoRAG 2: 0.01-0.1).",
                                    min=0.0, request=QUESTION)
    #: Total seed weight of the proximal triples' endpoints relative to the
    #: question's entities (total 1): the reader's facts are as good a hint as
    #: the question itself.
    proximal_weight: float = setting(1.0, "PPR seed weight of the proximal triples relative to the question's "
                                          "entities.", min=0.0, request=QUESTION)
    #: Multiplier of the about (entity ↔ page) edges; 0 = resolution off (ablation).
    #: An entity's own page is a stronger neighbour than a page that merely
    #: mentions it (weight 1). 2 was chosen on the first half of 2Wiki only
    #: (GEAR-offline R@5 91.8 → 93.2 on its first 300 questions); HotpotQA and
    #: MuSiQue moved by < 1 point either way. The second half is held out.
    about_weight: float = setting(2.0, "Weight of entity-to-own-page edges (0: resolution off).", min=0.0)
    #: Weight of the entity → passage step along a *mention* edge (to a passage
    #: that merely mentions the entity), relative to 1 for passage → entity.
    #: 1 is HippoRAG's undirected graph. Below 1 the walk from an entity prefers
    #: the page about it (a hyperlink) over the other pages naming it. Without
    #: titles every entity → passage edge is a mention edge, and column
    #: normalisation makes this weight irrelevant (no behaviour change).
    backlink_weight: float = setting(1.0, "Weight of entity-to-mentioning-passage edges (1: undirected).", min=0.0)
    #: Passage nodes in the graph (HippoRAG 2); off = HippoRAG 1's entity-only graph (ablation).
    passage_nodes: bool = setting(True, "Passage nodes in the PPR graph (--no-passage-nodes: entity-only).")
    #: Multiplier of the synonym edges stored in the index (``ResolveConfig.synonyms``; weight =
    #: cosine, HippoRAG §3.2). 0 = unused; an index without them has none to use.
    synonym_weight: float = setting(1.0, "Weight of the index's synonym edges between entity names (0: off).",
                                    min=0.0)
    #: Use the NER-span mentions stored in the index (``ResolveConfig.ner_mentions``) as mention edges.
    ner_mentions: bool = setting(True, "Use the index's NER-span mentions as mention edges (--no-ner-mentions: off).")
    #: Share of each question entity's seed passed on to the pages about it (spread
    #: over its about edges, so an ambiguous name seeds every candidate page by its
    #: resolution weight; an entity without a page keeps its whole share). The
    #: question's seeds still total 1, so the memory and proximal weights keep
    #: their meaning.
    #: This is query-time entity linking: the question names an entity, and the
    #: page about it is evidence in itself, as title matching is in HotpotQA
    #: retrievers (e.g. Nie et al., 2019, "Revealing the importance of semantic
    #: retrieval"). Without it, a named entity's page competes with every page
    #: that mentions the entity for the entity's mass (a comparison's second
    #: entity fell below pages about the first one's works). 0 = off (HippoRAG
    #: seeds entity nodes only). 0.5 was chosen on the first halves of the three
    #: dev sets only; the second halves were held out (docs/benchmarks-log.md, "Question-page seeds").
    question_page_weight: float = setting(0.5, "Share of a question entity's PPR seed passed to the pages about it "
                                               "(0: entity nodes only; at most 1).", min=0.0, request=QUESTION)
    #: PPR solver (:mod:`gearag.graph.ppr`): ``push`` (forward push, Andersen et al.
    #: 2006: a query costs its seeds' neighbourhood, not the graph) or ``power``
    #: (power iteration over the whole graph to ``RANK_TOL``, the solver HippoRAG's
    #: igraph call amounts to). Push is the default because it ranks the same
    #: passages at a cost that does not grow with the corpus (docs/benchmarks-log.md, "Local PPR").
    solver: str = setting("push", "PPR solver over the passage graph: push (local) | power (whole graph).",
                          name="ppr_solver", choices=SOLVERS)
    #: Push threshold: a node is pushed while its residual exceeds ``push_eps × degree``
    #: (seed mass 1); the total work is at most ``1 / (push_eps (1 - damping))`` edge visits.
    push_eps: float = setting(PUSH_EPS, "Forward-push PPR threshold per unit of degree (ppr_solver=push).",
                              name="ppr_push_eps", positive=True)

    def __post_init__(self) -> None:
        if self.question_page_weight > 1:
            raise ConfigError(f"--question-page-weight is a share of the entity's seed, at most 1; "
                              f"got {self.question_page_weight:g}")
