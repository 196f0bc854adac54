"""Settings of the GEAR agent (§5); defaults follow App. B.2 where the paper fixes them."""

from __future__ import annotations

from dataclasses import dataclass

from gearag.engine import EngineConfig
from gearag.expand.config import ExpansionConfig
from gearag.options import QUESTION, setting, upto

#: How the agent ranks its output: PPR over the passage-aware graph, or Eq. 9 as printed.
FINAL_MODES = ("ppr", "rrf")


@dataclass(frozen=True)
class AgentEngineConfig(EngineConfig):
    """The engine of the agent, with the offline engine's chain behaviour."""

    #: The offline agent finishes its chains: the gist keeps facts
    #: that advance a chain, the rewrite substitutes the resolved bridge's page
    #: title, names meet when they resolve to the same page, "A or B" questions
    #: follow both branches, and the loop continues on a repeated rewrite while
    #: the memory still grows. Off: the model-free roles as first built.
    chain_agent: bool = setting(True, "Offline agent: finish chains through entity resolution (--no-chain-agent: off).",
                                request=QUESTION)
    #: A JSON file replacing any of the offline engine's English word lists
    #: (:class:`gearag.words.WordLists`: place nouns, relation words, type,
    #: comparison, date and person words); unset = the built-in lists.
    word_lists: str | None = setting(None, "Offline agent: JSON file of English word lists replacing the built-in "
                                           "ones (see gearag.words).")


@dataclass(frozen=True)
class AgentConfig:
    """The multi-step agent: SyncGE per step, gist memory, reasoning, rewriting, passageLink."""

    #: Maximum iterations (paper, App. B.2: 4 for MuSiQue, 2 for 2Wiki and
    #: HotpotQA; one default serves users here). With the offline agent stopping
    #: at its answer and the output changing only when a step moves the evidence
    #: chain (``step_fusion``), recall does not fall with more steps on any dev set and
    #: is highest at 4 on all three (R@2 over 3 steps: +0.5 HotpotQA, +0.3 2Wiki,
    #: MuSiQue equal), answer F1 too on 2Wiki (+0.8, 1,000 q; HotpotQA and
    #: MuSiQue −1.0, one question of 100 each), for 7–25 ms more per question
    #: (median, offline). Answered questions stop earlier: 2.6–3.7 steps mean
    #: (docs/benchmarks-log.md, the offline agent's recall by --max-steps).
    max_steps: int = setting(4, "Agent: maximum iterations (GEAR: 4 MuSiQue, 2 2Wiki/HotpotQA).", min=1,
                             request=upto(10))
    #: Base passages retrieved per step before reading (paper: 10, as IRCoT).
    chunks: int = setting(10, "Agent: base passages read per step (GEAR: 10).", min=1, request=upto(100))
    #: Passages each gist triple is linked to by passageLink (Eq. 8, 10; the
    #: paper leaves k open). Each gist triple's list counts as much as a whole
    #: step's list in Eq. 9, so deeper lists let weakly linked passages crowd
    #: out the steps' passages: k = 1 gave the best recall on all three
    #: benchmark sets (docs/benchmarks-log.md). Only Eq. 9 reads these lists: with the
    #: ``ppr`` output ranking (``final``) no gist triple is linked.
    link_k: int = setting(1, "Agent: passages per gist triple in passageLink (Eq. 8; read by Eq. 9 only: --final rrf, "
                             "or ppr without the passage graph).", min=1, request=upto(20))
    #: The output ranking: ``rrf`` is Eq. 9 as printed (passageLink of every
    #: gist triple fused with every step's passages); ``ppr`` ranks by
    #: Personalized PageRank over the passage-aware graph seeded with the
    #: question's entities, the whole gist memory and the first step's base
    #: passages — HippoRAG 2's retrieval with the gist memory in the role of
    #: its filtered facts (docs/benchmarks-log.md: +2.6 R@5 on 2Wiki). ``ppr`` needs the
    #: expansion's ``graph`` to be ``ppr`` or ``both`` (else Eq. 9 is used).
    final: str = setting("ppr", "Agent output ranking: ppr (passage graph) | rrf (Eq. 9 as printed).",
                         choices=FINAL_MODES, request=QUESTION)
    #: Seed weight of the gist memory in the ``ppr`` output ranking, relative to
    #: the question's own entities (total 1). 1.0 is the in-step weight
    #: (``proximal_weight``) and was the first default; at 1.0 the memory —
    #: the offline reader's picks, accumulated over every step — outweighed
    #: what the question names, and pages about bridge and distractor
    #: entities pushed the base retriever's best passages out of the top 2
    #: (HotpotQA R@2 63.0 vs titlelink's 71.5). Chosen on the first half of
    #: each dev set (2Wiki first 500, HotpotQA and MuSiQue first 50): every
    #: weight in 0.3–0.6 raised mean R@2 by 2.5–2.8 and mean R@5 by 0.3–0.7;
    #: 0.5 is that plateau's middle (docs/benchmarks-log.md, er_dev section).
    memory_weight: float = setting(0.5, "Agent: seed weight of the gist memory in the PPR output ranking, "
                                        "relative to the question's entities (1.0: as in each step).", min=0.0,
                                   request=QUESTION)
    #: Seed the ``ppr`` output ranking also with the facts the reasoner's answer
    #: rests on beyond the gist memory (``Reasoning.facts``: a comparison's two
    #: branches read from the options' pages), with the memory. Off: the memory alone
    #: (the first behaviour). Without it, a comparison answered through both
    #: branches could rank a page the question's entities merely mention above a
    #: page on its own evidence path.
    seed_evidence: bool = setting(True, "Agent: seed the PPR output ranking with the answer's evidence facts too "
                                        "(--no-seed-evidence: the gist memory alone).", request=QUESTION)
    #: Put the passages the answer rests on — those its evidence facts were read
    #: from (:mod:`gearag.agent.evidence`) — first in the output ranking, in
    #: evidence order, the rest in their order; they are flagged either way. The
    #: paper ranks by Eq. 9 alone, which let an answer cite passages it did not
    #: come from. Measured both ways (docs/benchmarks-log.md, ``--no-evidence-first``).
    evidence_first: bool = setting(True, "Agent: rank the passages the answer's evidence comes from first "
                                         "(--no-evidence-first: flag them where they rank).", request=QUESTION)
    #: Which gist-memory facts seed the ``ppr`` output ranking: ``connected`` —
    #: those joined to a name the question gives, directly or through other
    #: memory facts (:func:`gearag.agent.slots.connected`); ``all`` — the whole
    #: memory (the first behaviour). A rewritten query's stray reads ("List of
    #: songs recorded by Metallica; formed in; Los Angeles" for a question about
    #: Maria) pulled their pages up as the memory grew (docs/benchmarks-log.md, ``--memory-seeds all``).
    memory_seeds: str = setting("connected", "Agent: gist-memory facts that seed the PPR output ranking: connected "
                                             "(to the question's names) | all.", choices=("connected", "all"),
                                request=QUESTION)
    #: The ``ppr`` output ranking after step n fuses by RRF the rankings after
    #: each step, as Eq. 9 fuses each step's list, instead of replacing them with
    #: the last; a step that leaves the reasoner's evidence chain as it was
    #: adds no ranking (the output stays). Off: the last step's ranking alone.
    step_fusion: bool = setting(True, "Agent: fuse the PPR output rankings of the steps that moved the evidence "
                                      "chain (--no-step-fusion: the last step's alone).", request=QUESTION)
    #: Seconds of wall time the agent may spend on one question before it starts no further step
    #: and no further model call (reader, gist constructor, reasoner, rewriter) and answers from the gist
    #: memory it has; the trace's ``stopped`` is then ``time_budget``. A call under way is not cut, and the
    #: answer from the top passages (Table 3's QA) is still written, so a question may take one call longer
    #: than the budget. The first step's retrieval always runs. Default none: the paper bounds the loop by its
    #: step count alone (§5, App. B.2), the offline engine takes milliseconds a step, and a run's rankings
    #: should not depend on the machine's speed; a service bounds its requests with ``request_timeout`` (a hard
    #: stop, an error) — this is the graceful one, for a slow model endpoint. A request may ask up to 300 s.
    time_budget: float | None = setting(None, "Agent: seconds per question after which no new step or model call "
                                              "starts and the agent answers from its memory so far (default: none).",
                                        positive=True, request=upto(300))
    #: Graph expansion inside each step (base retriever, PPR or beams, tripleLink, RRF).
    expansion: ExpansionConfig = setting(ExpansionConfig, "")
    engine: AgentEngineConfig = setting(AgentEngineConfig, "")
    #: Also produce a short answer from the top passages (Table 3's QA setup).
    answer: bool = setting(True, "Agent: also answer from the top passages (--no-answer skips it).", request=QUESTION)
    #: Passages the answerer reads (the paper's QA setup uses the top 5, Table 3).
    qa_passages: int = setting(5, "Agent: passages the answerer reads (GEAR Table 3: 5).", min=1, request=upto(50))
