"""The LLM roles of GEAR and SiReRAG: a role is a prompt, a reply parser and an output type.

* :mod:`~gearag.llm.roles.base` — :class:`Role` and :class:`RoleCaller`;
* :mod:`~gearag.llm.roles.gear` — extract, read, reason, rewrite, answer;
* :mod:`~gearag.llm.roles.sirerag` — summarize, coref, entities, propositions;
* :mod:`~gearag.llm.roles.baselines` — IRCoT's reasoning step, HippoRAG's query NER and fact filter.

:class:`LLMRoles` offers every role of both systems over one LLM, with one
ledger and one set of parse counts.
"""

from gearag.llm.roles.base import Role, RoleCaller
from gearag.llm.roles.baselines import BaselineRoles
from gearag.llm.roles.gear import GearRoles, format_passages, format_triples
from gearag.llm.roles.sirerag import SiReRAGRoles


class LLMRoles(GearRoles, SiReRAGRoles, BaselineRoles):
    """GEAR's reader, reasoner, rewriter, answer generator and extractor, SiReRAG's LLM steps and the
    peer baselines' calls (IRCoT, HippoRAG), over one LLM."""


__all__ = ["BaselineRoles", "GearRoles", "LLMRoles", "Role", "RoleCaller", "SiReRAGRoles", "format_passages",
           "format_triples"]
