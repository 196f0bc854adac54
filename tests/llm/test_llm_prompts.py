"""Prompts: every role is present, follows the papers' output formats, renders, and can be overridden."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gearag.errors import ConfigError
from gearag.llm.parse import parse_entities, parse_propositions, parse_triples
from gearag.llm.prompts import AVAILABLE, DEFAULT_PROMPTS, DEFAULTS, REQUIRED, PromptSet

ROLES = {"extract_triples", "read", "read_with_memory", "reason", "rewrite", "answer", "answer_closed_book",
         "summarize", "coref_rewrite", "extract_entities", "extract_propositions", "sirerag_answer",
         "ircot_thought", "hipporag_ner", "hipporag_filter"}


def test_every_role_has_a_prompt() -> None:
    assert set(DEFAULTS) == ROLES == set(REQUIRED) == set(AVAILABLE)


@pytest.mark.parametrize("name", sorted(ROLES))
def test_renders_every_placeholder(name: str) -> None:
    values = {key: f"<<{key.upper()}>>" for key in AVAILABLE[name]}
    (message,) = DEFAULT_PROMPTS.render(name, **values)
    assert message["role"] == "user"
    for key in AVAILABLE[name]:
        assert f"<<{key.upper()}>>" in message["content"]
        assert "{" + key + "}" not in message["content"]


def test_values_are_inserted_verbatim() -> None:
    (message,) = DEFAULT_PROMPTS.render("summarize", text="a {question} and {text} inside")
    assert "a {question} and {text} inside" in message["content"]


def test_missing_values_are_reported() -> None:
    with pytest.raises(ConfigError, match="question"):
        DEFAULT_PROMPTS.render("reason", facts="x")


def _json_blocks(text: str) -> list[str]:
    """Top-level {...} blocks in a prompt (the demonstrations' expected outputs)."""
    blocks, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth, start = depth + 1, (i if depth == 0 else start)
        elif ch == "}":
            depth -= 1
            if depth == 0:
                blocks.append(text[start:i + 1])
    return blocks


def test_triple_prompt_has_two_demonstrations_in_the_requested_format() -> None:
    text = DEFAULTS["extract_triples"].user
    assert "# Example 1" in text and "# Example 2" in text and "# Example 3" not in text
    demos = [json.loads(b) for b in _json_blocks(text) if '"triples"' in b]
    assert len(demos) == 2
    for demo in demos:
        assert set(demo) == {"named_entities", "triples"}
        parsed = parse_triples(json.dumps(demo))
        assert parsed.ok and not parsed.invalid and len(parsed.value.triples) == len(demo["triples"]) >= 5
        # Each triple contains at least one listed entity, as the prompt requires.
        for s, _, o in demo["triples"]:
            assert any(e in s or e in o for e in demo["named_entities"])


def test_reader_prompts_follow_gear_k2() -> None:
    read, read_mem = DEFAULTS["read"].user, DEFAULTS["read_with_memory"].user
    assert '("subject", "predicate", "object")' in read
    assert read.rstrip().endswith("Facts:")
    assert read_mem.rstrip().endswith("Facts: {memory}")
    assert "{memory}" not in read


def test_reasoning_and_rewrite_formats() -> None:
    reason = DEFAULTS["reason"].user
    for marker in ("Answerable: Yes", "Answer:", "Answerable: No", "Why:"):
        assert marker in reason
    rewrite = DEFAULTS["rewrite"].user
    assert rewrite.count("Next Question:") == 2 and rewrite.rstrip().endswith("Next Question:")
    assert "Reason: {reason}" in rewrite


def test_answer_prompt_is_concise_with_one_example() -> None:
    answer = DEFAULTS["answer"].user
    assert "6 words" in answer and answer.count("Question:") == 2 and answer.rstrip().endswith("Answer:")
    assert "6 words" in DEFAULTS["answer_closed_book"].user


def test_sirerag_prompt_examples_parse_with_our_parsers() -> None:
    entities = [b for b in _json_blocks(DEFAULTS["extract_entities"].user) if '"n1"' in b and "Organization" in b]
    assert len(entities) == 1 and len(parse_entities(entities[0]).value) == 7
    props = [b for b in _json_blocks(DEFAULTS["extract_propositions"].user) if '"f3"' in b]
    parsed = parse_propositions(props[0])
    assert len(parsed.value) == 3 and not parsed.invalid and all(p.triples for p in parsed.value)
    assert "{previous}" in DEFAULTS["coref_rewrite"].user and "{paragraph}" in DEFAULTS["coref_rewrite"].user


def test_overrides_from_dict_json_and_toml(tmp_path: Path) -> None:
    custom = PromptSet({"reason": {"system": "Be strict.", "user": "Q: {question}\nF: {facts}"}})
    system, user = custom.render("reason", question="q?", facts="(a)")
    assert system == {"role": "system", "content": "Be strict."} and user["content"] == "Q: q?\nF: (a)"
    assert custom.fingerprint("reason") != DEFAULT_PROMPTS.fingerprint("reason")
    assert custom.is_default("answer") and not custom.is_default("reason")

    (tmp_path / "p.json").write_text(json.dumps({"answer": "Passages: {passages}\nQ: {question}\nA:"}))
    assert PromptSet.load(tmp_path / "p.json").render("answer", passages="P", question="Q")[0]["content"] == \
        "Passages: P\nQ: Q\nA:"
    (tmp_path / "p.toml").write_text('[summarize]\nuser = """Shorten:\n{text}"""\n')
    assert PromptSet.load(tmp_path / "p.toml").render("summarize", text="T")[0]["content"] == "Shorten:\nT"


def test_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "p.json").write_text(json.dumps({"answer_closed_book": "Q={question}"}))
    monkeypatch.setenv("GEARAG_PROMPTS", str(tmp_path / "p.json"))
    assert PromptSet.from_env().render("answer_closed_book", question="x")[0]["content"] == "Q=x"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"reason": "Facts: {facts}"}, "lacks placeholder"),
        ({"reason": "{question} {facts} {quesiton}"}, "unknown placeholder"),
        ({"nonsense": "x"}, "unknown prompt"),
        ({"reason": {"system": "x"}}, "'user'"),
        ({"reason": {"user": "{question} {facts}", "extra": "x"}}, "unknown key"),
    ],
)
def test_bad_overrides_are_config_errors(overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        PromptSet(overrides)


def test_unreadable_override_file(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read"):
        PromptSet.load(tmp_path / "broken.json")
