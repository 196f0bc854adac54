"""Parsers over a corpus of realistic malformed replies (tests/fixtures/llm_replies/replies.json)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from gearag.llm.lenient import loads_lenient, scan_structures
from gearag.llm.parse import (
    ParseStats,
    Proposition,
    parse_answer,
    parse_entities,
    parse_facts,
    parse_next_question,
    parse_propositions,
    parse_reasoning,
    parse_text,
    parse_triples,
)
from gearag.model import Fact

CORPUS = json.loads((Path(__file__).parents[1] / "fixtures" / "llm_replies" / "replies.json").read_text("utf-8"))
CASES = CORPUS["cases"]
PARSERS = {
    "triples": parse_triples,
    "facts": parse_facts,
    "reasoning": parse_reasoning,
    "next_question": parse_next_question,
    "answer": parse_answer,
    "entities": parse_entities,
    "propositions": parse_propositions,
    "text": parse_text,
}


def test_corpus_is_large_and_mostly_malformed() -> None:
    assert len(CASES) >= 30
    assert len({c["id"] for c in CASES}) == len(CASES)
    repaired = sum(1 for c in CASES if PARSERS[c["role"]](c["reply"]).repaired)
    assert repaired >= 30, "the corpus must keep at least 30 replies that need salvaging"


def _check_common(parsed, exp: dict) -> None:
    if "ok" in exp:
        assert parsed.ok is exp["ok"]
    if "invalid" in exp:
        assert parsed.invalid == exp["invalid"], parsed.problems
    if "truncated" in exp:
        assert parsed.truncated is exp["truncated"]
    if "repaired" in exp:
        assert parsed.repaired is exp["repaired"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_corpus_case(case: dict) -> None:
    role, reply, exp = case["role"], case["reply"], case["expected"]
    parsed = PARSERS[role](reply)
    _check_common(parsed, exp)
    if role == "triples":
        assert [list(t) for t in parsed.value.triples] == exp["triples"]
        if "named_entities" in exp:
            assert parsed.value.named_entities == exp["named_entities"]
        assert parsed.valid == len(exp["triples"])
    elif role == "facts":
        assert [list(t) for t in parsed.value] == exp["triples"]
    elif role == "reasoning":
        assert parsed.value.answerable is exp["answerable"]
        if "answer" in exp:
            assert parsed.value.answer == exp["answer"]
        if "why_contains" in exp:
            assert exp["why_contains"] in parsed.value.text
        if not exp["answerable"]:
            assert parsed.value.answer is None
    elif role == "next_question":
        assert parsed.value == exp["question"]
    elif role == "answer":
        assert parsed.value == exp["answer"]
    elif role == "entities":
        assert [[e.name, e.type] for e in parsed.value] == exp["entities"]
    elif role == "propositions":
        got = [{"fact": p.fact, "triples": [list(t) for t in p.triples]} for p in parsed.value]
        assert got == exp["propositions"]
    elif role == "text":
        assert parsed.value == exp["text"]
    else:  # pragma: no cover
        raise AssertionError(role)


def test_stats_accumulate_over_corpus() -> None:
    stats = ParseStats()
    expected_valid = expected_invalid = 0
    for case in CASES:
        if case["role"] == "triples":
            parsed = parse_triples(case["reply"])
            stats.add(parsed)
            expected_valid += len(parsed.value.triples)
            expected_invalid += parsed.invalid
    assert stats.replies == sum(1 for c in CASES if c["role"] == "triples")
    assert stats.valid_items == expected_valid
    assert stats.invalid_items == expected_invalid > 0
    assert stats.failed == 2  # the refusal and the empty reply
    assert "replies parsed" in stats.summary()


def _truncations(text: str) -> list[str]:
    step = max(1, len(text) // 40)
    return [text[:i] for i in range(0, len(text), step)]


@pytest.mark.parametrize("role", sorted(PARSERS))
def test_never_raises_on_truncations_and_noise(role: str) -> None:
    parser = PARSERS[role]
    rng = random.Random(7)
    samples = [c["reply"] for c in CASES]
    noise = ['{', '[', '(', '"', "'", '{{', '}}', '[[', ']]', '\\', '\\u12', '"a\\', ',,,', '::', '```', '#', '//',
             '{"a": [1, 2', '((((', '))))', '{"triples": {', '\x00', '\ud800', 'Answerable:', 'Answer:']
    for text in samples:
        for chunk in _truncations(text):
            parser(chunk)
    for _ in range(300):
        parts = [rng.choice(noise + samples) for _ in range(rng.randint(1, 6))]
        blob = "".join(parts)
        if rng.random() < 0.5:
            blob = blob[: rng.randint(0, len(blob))]
        result = parser(blob)
        assert result.invalid >= 0 and result.valid >= 0
    assert parser("[" * 5000).ok in (True, False)  # deep nesting does not blow the stack
    assert parser(None).ok is False


def test_truncated_salvage_keeps_every_complete_triple() -> None:
    full = json.dumps({"named_entities": ["A"], "triples": [[f"s{i}", "rel", f"o{i}"] for i in range(20)]})
    for cut in range(len(full) // 2, len(full)):
        parsed = parse_triples(full[:cut])
        triples = parsed.value.triples
        assert triples == [Fact(f"s{i}", "rel", f"o{i}") for i in range(len(triples))]
        assert len(triples) >= 9


def test_scan_finds_every_structure_in_prose() -> None:
    found = scan_structures('first ("a", "b", "c") then [1, 2] and {"k": "v"} end')
    assert [f.value for f in found] == [["a", "b", "c"], [1, 2], {"k": "v"}]


def test_loads_lenient_prefers_strict_json() -> None:
    assert loads_lenient('```json\n{"a": 1}\n```') == ({"a": 1}, False, False)
    value, repaired, truncated = loads_lenient("result: {'a': (1, 2,), 'b': True,}")
    assert value == {"a": [1, 2], "b": True} and repaired and not truncated
    assert loads_lenient("no structure here") == (None, True, False)


def test_reader_dedupes_and_counts() -> None:
    parsed = parse_facts('("A", "r", "B"), ("A", "r", "B"), ("A", "r")')
    assert parsed.value == [Fact("A", "r", "B")]
    assert parsed.invalid == 1


def test_proposition_entities() -> None:
    prop = Proposition("x", (Fact("A", "r", "B"), Fact("B", "s", "C")))
    assert prop.entities == ["A", "B", "C"]


def test_reasoning_degrades_to_not_answerable() -> None:
    for reply in ["", "maybe", "Answerable: perhaps", "{'answerable': 'unsure'}", "Answerable: Yes"]:
        assert parse_reasoning(reply).value.answerable is False, reply
