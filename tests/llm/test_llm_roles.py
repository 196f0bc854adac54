"""LLM roles: prompt formatting, parsing, safe degradation and accounting."""

from __future__ import annotations

import asyncio

import pytest

from gearag.errors import LLMError
from gearag.llm import (
    DEFAULT_PROMPTS,
    FakeLLM,
    LLMClient,
    LLMConfig,
    LLMRoles,
    format_passages,
    format_triples,
)
from gearag.llm.roles import baselines, gear, sirerag
from gearag.model import Fact, Passage, Reasoning, Triple
from llm_server import Reply, ScriptedServer

DOCS = [Passage("1", "Stephen Curry", "Stephen Curry played college basketball for Davidson."),
        Passage("2", "", "Davidson College is in North Carolina.")]


def test_formatting_helpers() -> None:
    assert format_passages(DOCS) == ("Title: Stephen Curry\nStephen Curry played college basketball for Davidson."
                                     "\n\nDavidson College is in North Carolina.")
    assert format_triples([Fact("A", 'say "hi"', "B", source=7), Triple("C", "d", "E", passage=3)]) == \
        '("A", "say \\"hi\\"", "B"), ("C", "d", "E")'


def test_read_without_and_with_memory() -> None:
    fake = FakeLLM({"read": lambda m, r: 'Facts: ("Stephen Curry", "college team", "Davidson"), '
                                         '("Davidson College", "located in", "North Carolina")'})
    roles = LLMRoles(fake)
    first = roles.read(DOCS, "Where is Curry's college?", question_id="q")
    assert first == [Fact("Stephen Curry", "college team", "Davidson"),
                     Fact("Davidson College", "located in", "North Carolina")]
    assert "Title: Stephen Curry" in fake.calls[0].prompt and "{memory}" not in fake.calls[0].prompt

    memory = [first[0]]
    new = roles.read(DOCS, "Where is Curry's college?", memory, question_id="q")
    assert new == [Fact("Davidson College", "located in", "North Carolina")]  # known facts are not repeated
    assert 'Facts: ("Stephen Curry", "college team", "Davidson")' in fake.calls[1].prompt
    assert fake.ledger.snapshot(role="read", question_id="q").calls == 2


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Answerable: Yes\nAnswer: North Carolina", (True, "North Carolina")),
        ("Answerable: No\nWhy: the state is missing", (False, "the state is missing")),
        ("I think so?", (False, "I think so?")),
        ("", (False, "")),
        ("Answerable: Yes", (False, "Answerable: Yes")),
    ],
)
def test_reason_degrades_to_not_answerable(reply: str, expected: tuple) -> None:
    roles = LLMRoles(FakeLLM({"reason": reply}))
    result = roles.reason([Fact("a", "b", "c")], "q?")
    assert (result.answerable, result.text) == expected
    assert result.answer == (expected[1] if expected[0] else None)


def test_rewrite_falls_back_to_the_question() -> None:
    assert LLMRoles(FakeLLM({"rewrite": "Next Question: Where is Davidson College?"})).rewrite(
        [], "Where did Curry study?", "missing") == "Where is Davidson College?"
    assert LLMRoles(FakeLLM({"rewrite": ""})).rewrite([], "Where did Curry study?", "missing") == \
        "Where did Curry study?"


def test_answer_with_and_without_passages() -> None:
    fake = FakeLLM({"answer": "Answer: North Carolina."})
    roles = LLMRoles(fake)
    assert roles.answer(DOCS, "Which state?") == "North Carolina"
    assert roles.answer([], "Which state?") == "North Carolina"
    assert "6 words" in fake.calls[1].prompt and "Title:" not in fake.calls[1].prompt


def test_parse_stats_count_bad_replies() -> None:
    roles = LLMRoles(FakeLLM(["garbage", "Answerable: No\nWhy: x"]))
    roles.reason([], "q")
    roles.reason([], "q")
    stats = roles.parse_summary()["reason"]
    assert stats["replies"] == 2 and stats["failed"] == 1


def test_sirerag_roles() -> None:
    fake = FakeLLM({
        "summarize": "Summary: Curry played for Davidson, in North Carolina.",
        "coref": "Here is the rewritten paragraph:\nStephen Curry was born in Akron.",
        "entities": '{"n1": {"name": "Stephen Curry", "type": "Person"}, "n2": {"name": "Akron", "type": "City"}}',
        "propositions": '{"f1": {"fact": "Stephen Curry was born in Akron.", '
                        '"triplets": [["Stephen Curry", "born in", "Akron"]]}}',
        "extract": '{"named_entities": ["Akron"], "triples": [["Stephen Curry", "born in", "Akron"]]}',
    })
    roles = LLMRoles(fake)
    assert roles.summarize("...") == "Curry played for Davidson, in North Carolina."
    assert roles.coref_rewrite("He was born in Akron.", "Stephen Curry is a player.") == \
        "Stephen Curry was born in Akron."
    entities = roles.extract_entities("Stephen Curry was born in Akron.")
    assert [(e.name, e.type) for e in entities] == [("Stephen Curry", "Person"), ("Akron", "City")]
    (prop,) = roles.extract_propositions("Stephen Curry was born in Akron.", entities)
    assert prop.entities == ["Stephen Curry", "Akron"]
    assert "Entities: Stephen Curry, Akron" in fake.calls[-1].prompt
    assert roles.extract_triples(DOCS[0]).triples == [Fact("Stephen Curry", "born in", "Akron")]
    assert set(fake.ledger.by_role()) == {"summarize", "coref", "entities", "propositions", "extract"}


def test_async_roles() -> None:
    roles = LLMRoles(FakeLLM({"read": '("a", "b", "c")', "reason": "Answerable: Yes\nAnswer: c",
                              "rewrite": "Next Question: what?", "answer": "c"}))

    async def run() -> tuple:
        return (await roles.aread(DOCS, "q"), await roles.areason([Fact("a", "b", "c")], "q"),
                await roles.arewrite([], "q", "r"), await roles.aanswer(DOCS, "q"))

    assert asyncio.run(run()) == ([Fact("a", "b", "c")], Reasoning(True, "c", "c"), "what?", "c")


def test_endpoint_failures_propagate_from_roles() -> None:
    with pytest.raises(LLMError):
        LLMRoles(FakeLLM([])).read(DOCS, "q")


def test_roles_over_the_http_client() -> None:
    with ScriptedServer([Reply("```\nAnswerable: yes\nAnswer: **Davidson**\n```")]) as server:
        with LLMClient(LLMConfig(model="m", base_url=server.base_url, cache_path=None)) as llm:
            assert LLMRoles(llm).reason([Fact("Curry", "college", "Davidson")], "Curry's college?",
                                        question_id="q7") == Reasoning(True, "Davidson", "Davidson")
            assert llm.ledger.snapshot(question_id="q7", role="reason").requests == 1
        assert 'Facts: ("Curry", "college", "Davidson")' in server.requests[0].prompt


def test_every_declared_role_has_a_prompt_and_a_parser() -> None:
    roles = gear.ROLES + sirerag.ROLES + baselines.ROLES
    assert {r.prompt for r in roles} == set(DEFAULT_PROMPTS.names())
    assert {r.name for r in roles} == {"extract", "read", "reason", "rewrite", "answer",
                                       "summarize", "coref", "entities", "propositions", "ircot", "ner", "filter"}
    for role in roles:
        parsed = role.parser(None)  # the safe fallback, never an exception
        assert parsed.ok is False


def test_a_reply_cut_off_by_the_token_limit_is_marked_truncated() -> None:
    from gearag.llm import Completion, Usage

    parsed = gear.ANSWER.parse(Completion("Answer: Paris", Usage(1, 1), finish_reason="length"))
    assert parsed.value == "Paris" and parsed.truncated and "reply hit the token limit" in parsed.problems
