"""LLM triple extraction falls back to the spaCy rules for a reply with nothing usable (gearag.llm.fallback)."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

from gearag.extract.base import make_extractor
from gearag.extract.llm import LLMTripleExtractor, make_llm_extractor
from gearag.extract.run import extract_with_checkpoint
from gearag.extract.spacy.extractor import SpacyRulesExtractor
from gearag.llm import FakeLLM, LLMClient, LLMConfig
from gearag.llm.usage import usage_scope
from gearag.model import Fact, Passage
from gearag.store.checkpoint import checkpoint_name
from llm_server import Reply, ScriptedServer

MARK = re.compile(r"PASSAGE-(\d{3})")
PEOPLE = ["Marie Curie", "Niels Bohr", "Lise Meitner", "Enrico Fermi", "Max Planck", "Emmy Noether"]
CITIES = ["Warsaw", "Copenhagen", "Vienna", "Rome", "Kiel", "Erlangen"]


def passages(n: int = 6) -> list[Passage]:
    return [Passage(f"p{i}", PEOPLE[i], f"{PEOPLE[i]} was born in {CITIES[i]}. PASSAGE-{i:03d} ends here.")
            for i in range(n)]


def row(text: str) -> int:
    return int(MARK.findall(text)[-1])


def good(i: int) -> str:
    return json.dumps({"named_entities": [PEOPLE[i]], "triples": [[PEOPLE[i], "model says", CITIES[i]]]})


def reply_text(i: int) -> str:
    """Passages 1 and 4 get prose, 3 an empty triple list: nothing usable; the others one triple each."""
    if i in (1, 4):
        return "Sure! Here is what the passage says about the person and the city."
    if i == 3:
        return '{"named_entities": [], "triples": []}'
    return good(i)


def fake() -> FakeLLM:
    return FakeLLM(lambda messages, role: reply_text(row(messages[-1]["content"])), concurrency=3)


def spacy_triples(p: Passage) -> list[Fact]:
    return next(iter(SpacyRulesExtractor().extract([p])))


UNUSABLE = (1, 3, 4)


def test_unusable_replies_get_the_spacy_triples_of_their_passage_and_are_counted() -> None:
    ps = passages()
    ex = make_llm_extractor("", {"llm": fake()})  # the factory's default: the fallback on
    assert ex.fallback
    with usage_scope() as scope:
        out = list(ex.extract(ps))
    for i, triples in enumerate(out):
        if i in UNUSABLE:
            assert triples == spacy_triples(ps[i]) and triples, i
        else:
            assert triples == [Fact(PEOPLE[i], "model says", CITIES[i])], i
    assert ex.fallbacks() == {"extract": {"replies": 6, "offline": 3}}
    assert scope.fallbacks() == {"extract": {"replies": 6, "offline": 3}}  # the enclosing scope counts them too
    assert "extract: 3 of 6 replies unusable, spaCy rules used" in ex.summary().splitlines()


def test_with_the_fallback_off_unusable_replies_get_no_triples_and_the_key_is_the_raw_models() -> None:
    ps = passages()
    raw = make_llm_extractor("", {"llm": fake(), "llm_fallback": False})
    out = list(raw.extract(ps))
    assert [i for i, triples in enumerate(out) if not triples] == list(UNUSABLE)
    assert "unusable, spaCy" not in raw.summary()
    on = make_llm_extractor("", {"llm": fake()})
    assert raw.key == LLMTripleExtractor(fake()).key  # the key indices built before fallbacks existed carry
    assert on.key == raw.key + "+fallback:spacy-rules-v1"
    assert checkpoint_name(on.key) != checkpoint_name(raw.key)


def test_spacy_runs_only_when_a_reply_is_unusable(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = SpacyRulesExtractor.extract

    def spy(self, batch):  # type: ignore[no-untyped-def]
        calls.append(len(batch))
        return real(self, batch)

    monkeypatch.setattr(SpacyRulesExtractor, "extract", spy)
    usable = FakeLLM(lambda messages, role: good(row(messages[-1]["content"])))
    list(make_llm_extractor("", {"llm": usable}).extract(passages()))
    assert calls == []
    list(make_llm_extractor("", {"llm": fake()}).extract(passages()))
    assert calls == [1, 1, 1]  # one passage at a time, each alone


def test_the_fallback_is_deterministic_so_a_resume_is_exact(tmp_path: Path) -> None:
    ps = passages()
    whole = extract_with_checkpoint(ps, make_llm_extractor("", {"llm": fake()}), None)
    work = tmp_path / "work"
    extract_with_checkpoint(ps[:3], make_llm_extractor("", {"llm": fake()}), work)  # an interrupted build
    rest = fake()
    resumed = extract_with_checkpoint(ps, make_llm_extractor("", {"llm": rest}), work)
    assert resumed == whole
    assert sorted(row(c.prompt) for c in rest.calls) == [3, 4, 5]  # only the passages not yet done
    raw = fake()  # the raw model never resumes from the checkpoint holding spaCy triples
    assert extract_with_checkpoint(ps, make_llm_extractor("", {"llm": raw, "llm_fallback": False}), work) != whole
    assert len(raw.calls) == 6


def test_a_worker_falls_back_in_its_own_process_and_reports_the_counts() -> None:
    def responder(body: dict) -> Reply:
        return Reply(reply_text(row(body["messages"][-1]["content"])))

    ps = passages()
    with ScriptedServer(responder=responder) as server:
        config = LLMConfig(model="m", base_url=server.base_url, cache_path=None, max_retries=0, concurrency=2)
        driver = LLMTripleExtractor(LLMClient(config), fallback=True)
        driver.owns_llm = True
        shipped = pickle.loads(pickle.dumps(driver.for_worker()))  # what a Ray worker gets
        assert shipped.key == driver.key and shipped.fallback
        out = list(shipped.extract(ps))
        report = shipped.take_report()
        shipped._extractor().close()
        driver.close()
    assert [out[i] for i in UNUSABLE] == [spacy_triples(ps[i]) for i in UNUSABLE]
    assert report["fallbacks"] == {"extract": {"replies": 6, "offline": 3}}
    driver.merge_report(report)
    assert driver.fallbacks() == {"extract": {"replies": 6, "offline": 3}}
    assert "extract: 3 of 6 replies unusable, spaCy rules used" in driver.summary()


def test_llm_max_tokens_reaches_the_extraction_request_and_the_key() -> None:
    with ScriptedServer(responder=lambda body: Reply(good(row(body["messages"][-1]["content"])))) as server:
        options = {"llm_base_url": server.base_url, "llm_cache": False}
        with make_llm_extractor("m", {**options, "llm_max_tokens": "extract=77,read=5"}) as bounded:
            list(bounded.extract(passages(2)))
        with make_extractor("llm:m", **options, llm_max_tokens="extract=55") as from_context:
            list(from_context.extract(passages(1)))
        with make_llm_extractor("m", options) as plain:
            list(plain.extract(passages(1)))
    assert [r.body["max_tokens"] for r in server.requests[:3]] == [77, 77, 55]
    assert server.requests[3].body["max_tokens"] not in (77, 55)
    assert len({bounded.key, from_context.key, plain.key}) == 3  # another bound, another checkpoint
