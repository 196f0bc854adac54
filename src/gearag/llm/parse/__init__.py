"""Parsers for every role's replies: salvage what is valid, count what is not, never raise.

* :mod:`~gearag.llm.parse.base` — :class:`Parsed`, :class:`ParseStats` and
  :func:`never_raise`, the one wrapper that turns any parser error into a
  safe fallback value with ``ok=False``;
* :mod:`~gearag.llm.parse.triples` — GEAR's extraction replies and the
  reader's facts (:class:`~gearag.model.Fact`);
* :mod:`~gearag.llm.parse.labelled` — GEAR's reasoning
  (:class:`~gearag.model.Reasoning`), next question and answer;
* :mod:`~gearag.llm.parse.sirerag` — SiReRAG's free text, entities and
  propositions;
* :mod:`~gearag.llm.parse.baselines` — IRCoT's reasoning sentence and HippoRAG's
  entity lists.

All of them read structures through :mod:`gearag.llm.lenient`.
"""

from gearag.llm.parse.base import PARSER_VERSION, Parsed, Parser, ParseStats, never_raise
from gearag.llm.parse.baselines import parse_names, parse_thought
from gearag.llm.parse.labelled import clean_answer, parse_answer, parse_next_question, parse_reasoning
from gearag.llm.parse.sirerag import Entity, Proposition, parse_entities, parse_propositions, parse_text
from gearag.llm.parse.triples import TripleExtraction, parse_facts, parse_triples

__all__ = [
    "PARSER_VERSION", "Entity", "ParseStats", "Parsed", "Parser", "Proposition", "TripleExtraction",
    "clean_answer", "never_raise", "parse_answer", "parse_entities", "parse_facts", "parse_names",
    "parse_next_question",     "parse_propositions", "parse_reasoning", "parse_text", "parse_thought", "parse_triples",
]
