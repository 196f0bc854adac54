"""Every role's reply is bounded: the table of gearag.llm.bounds, overrides, a global cap."""

from __future__ import annotations

from typing import Any

import pytest

from gearag.errors import ConfigError
from gearag.llm import FakeLLM, LLMClient, LLMConfig, LLMRoles
from gearag.llm.bounds import BOUNDS, parse_overrides, reply_params
from gearag.model import Fact, Passage
from llm_server import Reply, ScriptedServer

SHORT = Passage("p1", "Counting Crows", "Counting Crows is a rock band formed in Berkeley, California.")
LONG = Passage("p2", "Long", "word " * 2000)


def _roles_calls(llm: FakeLLM) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for call in llm.calls:
        out.setdefault(call.role, []).append(call.params)
    return out


def test_every_role_of_gear_sirerag_and_the_peers_sends_its_bound() -> None:
    llm = FakeLLM(lambda messages, role: "")
    roles = LLMRoles(llm)
    memory = [Fact("Counting Crows", "formed in", "Berkeley")]
    roles.read([SHORT], "Where was Counting Crows formed?")
    roles.reason(memory, "q?")
    roles.rewrite(memory, "q?", "why")
    roles.answer([SHORT], "q?")
    roles.extract_triples(SHORT)
    roles.extract_propositions(SHORT.text)
    roles.extract_entities(SHORT.text)
    roles.summarize(SHORT.text)
    roles.coref_rewrite(SHORT.text)
    roles.ircot_thought([SHORT], "q?", [])
    roles.query_entities("q?")
    roles.filter_facts("q?", memory)
    sent = _roles_calls(llm)
    assert set(sent) == set(BOUNDS)  # every role in the table was called, and each sent a bound
    for role, params in sent.items():
        assert all(isinstance(p.get("max_tokens"), int) and p["max_tokens"] >= 1 for p in params), role
    assert sent["answer"][0]["max_tokens"] < sent["read"][0]["max_tokens"]
    assert sent["answer"][0]["stop"]


def test_bounds_of_passage_roles_grow_with_the_passage_up_to_the_cap() -> None:
    llm = FakeLLM(lambda messages, role: "")
    roles = LLMRoles(llm)
    roles.extract_triples(SHORT)
    roles.extract_triples(LONG)
    short, long = (p["max_tokens"] for p in _roles_calls(llm)["extract"])
    assert short < long <= BOUNDS["extract"].cap


def test_overrides_replace_a_roles_bound_and_max_tokens_caps_all() -> None:
    with ScriptedServer(default=Reply("Answer: Berkeley")) as server:
        config = LLMConfig(model="m", base_url=server.base_url, cache_path=None, max_retries=0,
                           role_max_tokens={"answer": 7})
        with LLMClient(config) as client:
            roles = LLMRoles(client)
            roles.answer([SHORT], "q?")
            roles.read([SHORT], "q?")
        assert [r.body["max_tokens"] for r in server.requests] == [7, BOUNDS["read"].base]
        server.requests.clear()
        with LLMClient(LLMConfig(model="m", base_url=server.base_url, cache_path=None, max_tokens=20)) as client:
            LLMRoles(client).read([SHORT], "q?")
        assert server.requests[0].body["max_tokens"] == 20


def test_overrides_are_checked_and_come_from_the_environment() -> None:
    assert parse_overrides("read=400, answer=16") == {"read": 400, "answer": 16}
    for bad in ("reed=4", "read", "read=0", "read=x"):
        with pytest.raises(ConfigError, match="--llm-max-tokens"):
            parse_overrides(bad)
    config = LLMConfig.from_env({"GEARAG_LLM_MODEL": "m", "GEARAG_LLM_BASE_URL": "http://127.0.0.1:1/v1",
                                 "GEARAG_LLM_MAX_TOKENS": "reason=50"})
    assert config.role_max_tokens == {"reason": 50}
    with pytest.raises(ConfigError, match="GEARAG_LLM_MAX_TOKENS"):
        LLMConfig.from_env({"GEARAG_LLM_MODEL": "m", "GEARAG_LLM_BASE_URL": "http://127.0.0.1:1/v1",
                            "GEARAG_LLM_MAX_TOKENS": "everything=5"})
    assert reply_params("role-of-a-custom-prompt", 10)["max_tokens"] >= 1


def test_a_reply_cut_at_its_bound_is_parsed_for_what_it_holds() -> None:
    cut = '[["Counting Crows", "formed in", "Berkeley"], ["Counting Crows", "genre", "ro'
    with ScriptedServer(default=Reply(cut, finish_reason="length")) as server, \
            LLMClient(LLMConfig(model="m", base_url=server.base_url, cache_path=None)) as client:
        roles = LLMRoles(client)
        facts = roles.read([SHORT], "Where was Counting Crows formed?")
    assert Fact("Counting Crows", "formed in", "Berkeley") in facts
    assert roles.parse_stats["read"].truncated == 1


def test_checkpoint_keys_name_only_the_bounds_set_for_their_roles() -> None:
    from gearag.llm.bounds import bounds_fingerprint

    plain = LLMClient(LLMConfig(model="m", cache_path=None))
    bounded = LLMClient(LLMConfig(model="m", cache_path=None, role_max_tokens={"summarize": 50, "read": 9}))
    assert bounds_fingerprint(plain, ["summarize"]) == ""  # keys made before overrides existed stay the same
    assert bounds_fingerprint(bounded, ["propositions"]) == ""  # a query role's bound is not a build's business
    assert bounds_fingerprint(bounded, ["propositions", "summarize"]) == "|max-tokens:summarize=50"
    assert bounds_fingerprint(FakeLLM(lambda *_: ""), ["summarize"]) == ""
