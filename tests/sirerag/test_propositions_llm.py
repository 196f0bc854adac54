"""The LLM adapters: roles' outputs -> facts with entities; the LLM summariser; resumable passes."""

from __future__ import annotations

import numpy as np

from gearag.llm.parse import Entity, Proposition
from gearag.model import Fact, Passage
from gearag.sirerag.aggregates import build_aggregates
from gearag.sirerag.propositions import facts_from_llm, llm_propositions
from gearag.sirerag.summarise import LLMSummariser, Summariser


class FakeRoles:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def coref_rewrite(self, paragraph: str, previous: str = "") -> str:
        self.calls.append("coref")
        return paragraph.replace(" He ", " Lester Smith ")

    def extract_entities(self, text: str) -> list[Entity]:
        self.calls.append("entities")
        return [Entity("Lester Smith", "PERSON"), Entity("Dragon Dice", "WORK")]

    def extract_propositions(self, text: str, entities=()) -> list[Proposition]:
        self.calls.append("propositions")
        return [
            Proposition("Lester Smith designed Dragon Dice.", (Fact("Lester Smith", "designed", "Dragon Dice"),)),
            Proposition("Lester Smith lives in Wisconsin.", (Fact("Lester Smith", "lives in", "Wisconsin"),)),
            Proposition("The game was popular.", ()),
        ]

    def summarize(self, text: str) -> str:
        self.calls.append("summarize")
        return f"summary of {text.count(chr(10) + chr(10)) + 1} texts"


def test_facts_from_llm_entities_in_order_then_triplet_ends() -> None:
    facts = facts_from_llm(FakeRoles().extract_propositions(""), [Entity("Dragon Dice"), Entity("Lester Smith")])
    assert facts[0].entities == ("Lester Smith", "Dragon Dice")
    assert facts[1].entities == ("Lester Smith", "Wisconsin")
    assert facts[2].entities == ()


def test_llm_propositions_calls_the_three_steps_and_skips_done_rows() -> None:
    roles = FakeRoles()
    passages = [Passage("a", "Lester Smith", "He made games. He lives in Wisconsin."), Passage("b", "X", "Y.")]
    seen: list[int] = []
    out = llm_propositions(roles, passages, done={1: []}, on_passage=lambda row, facts: seen.append(row))
    assert roles.calls == ["coref", "entities", "propositions"] and seen == [0]
    assert len(out) == 2 and out[1] == []
    aggs = build_aggregates(out)
    assert [a.entity for a in aggs] == ["Lester Smith"]


def test_llm_summariser_protocol() -> None:
    roles = FakeRoles()
    s = LLMSummariser(roles)
    assert isinstance(s, Summariser)
    out = s.summarise([[0, 1], [2]], ["a", "b", "c"], np.zeros((3, 2), dtype=np.float32))
    assert out == ["summary of 2 texts", "summary of 1 texts"]
