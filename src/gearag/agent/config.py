"""Settings of the GEAR agent (§5); defaults follow App. B.2."""

from __future__ import annotations

from dataclasses import dataclass

from gearag.engine import EngineConfig
from gearag.expand.config import ExpansionConfig
from gearag.options import setting


@dataclass(frozen=True)
class AgentConfig:
    """The multi-step agent: SyncGE per step, gist memory, reasoning, rewriting, passageLink."""

    #: Maximum iterations (paper: 4 for MuSiQue, 2 for 2Wiki and HotpotQA).
    max_steps: int = setting(4, "Agent: maximum iterations (GEAR: 4 MuSiQue, 2 2Wiki/HotpotQA).", min=1)
    #: Base passages retrieved per step before reading (paper: 10, as IRCoT).
    chunks: int = setting(10, "Agent: base passages read per step (GEAR: 10).", min=1)
    #: Passages each gist triple is linked to by passageLink (Eq. 8, 10; the
    #: paper leaves k open). Each gist triple's list counts as much as a whole
    #: step's list in Eq. 9, so deeper lists let weakly linked passages crowd
    #: out the steps' passages: k = 1 gave the best recall on all three
    #: benchmark sets (BENCHMARKS.md).
    link_k: int = setting(1, "Agent: passages per gist triple in passageLink (Eq. 8).", min=1)
    #: Graph expansion inside each step (base retriever, beams, tripleLink, RRF).
    expansion: ExpansionConfig = setting(ExpansionConfig, "")
    engine: EngineConfig = setting(EngineConfig, "")
    #: Also produce a short answer from the top passages (Table 3's QA setup).
    answer: bool = setting(True, "Agent: also answer from the top passages (--no-answer skips it).")
    #: Passages the answerer reads (the paper's QA setup uses the top 5, Table 3).
    qa_passages: int = setting(5, "Agent: passages the answerer reads (GEAR Table 3: 5).", min=1)
