"""SiReRAG's LLM propositions and summaries fall back to the offline engine for an unusable reply."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from gearag.llm import FakeLLM, LLMRoles
from gearag.llm.parse import Entity, Proposition
from gearag.llm.usage import usage_scope
from gearag.model import Fact, Passage
from gearag.sirerag.propositions import llm_propositions, offline_propositions
from gearag.sirerag.summarise import ExtractiveSummariser, LLMSummariser
from gearag.store.checkpoint import KeyedCheckpoint

PASSAGES = [
    Passage("a", "Lester Smith", "Lester Smith is a game designer. He designed Dragon Dice in 1995."),
    Passage("b", "Dragon Dice", "Dragon Dice is a dice game. It was published by TSR in Wisconsin."),
    Passage("c", "TSR", "TSR was a game publisher. It was based in Lake Geneva, Wisconsin."),
]


class Roles:
    """SiReRAG's three proposition steps and the summary; the passages of ``silent`` get no proposition."""

    def __init__(self, silent: Sequence[str] = (), *, fallback: bool | None = None, empty_summaries: bool = False):
        self.silent = set(silent)
        self.empty_summaries = empty_summaries
        self.summaries = 0
        if fallback is not None:
            self.llm_fallback = fallback

    def coref_rewrite(self, paragraph: str, previous: str = "") -> str:
        return paragraph

    def extract_entities(self, text: str) -> list[Entity]:
        return [Entity(text.split("\n")[0])]

    def extract_propositions(self, text: str, entities=()) -> list[Proposition]:  # type: ignore[no-untyped-def]
        title = text.split("\n")[0]
        if title in self.silent:
            return []  # what a prose reply parses to
        return [Proposition(f"{title} is in the model's reply.", (Fact(title, "is in", "reply"),))]

    def summarize(self, text: str) -> str:
        self.summaries += 1
        return "" if self.empty_summaries and "Dragon" in text else f"model summary of {text.count(chr(10)) + 1} lines"


def test_a_passage_without_propositions_gets_the_offline_ones_and_is_counted() -> None:
    checkpointed: dict[int, list] = {}
    with usage_scope() as scope:
        out = llm_propositions(Roles(["Dragon Dice"]), PASSAGES,
                               on_passage=lambda row, facts: checkpointed.setdefault(row, facts))
    assert out[1] == offline_propositions([PASSAGES[1]])[0] and out[1]
    assert out[0][0].text == "Lester Smith is in the model's reply."
    assert checkpointed[1] == []  # the checkpoint keeps the model's output: a build without the fallback reuses it
    assert scope.fallbacks() == {"propositions": {"replies": 3, "offline": 1}}


def test_checkpointed_passages_get_the_fallback_too_and_the_raw_model_none() -> None:
    done = {0: [], 2: []}  # as a checkpoint of the model's propositions holds them
    with usage_scope() as scope:
        out = llm_propositions(Roles(), PASSAGES, done=done)
    assert [out[0], out[2]] == offline_propositions([PASSAGES[0], PASSAGES[2]])
    assert scope.fallbacks() == {"propositions": {"replies": 3, "offline": 2}}
    with usage_scope() as scope:
        raw = llm_propositions(Roles(["Dragon Dice"], fallback=False), PASSAGES, done=done)
    assert raw[0] == raw[1] == raw[2] == []
    assert scope.fallbacks() == {"propositions": {"replies": 3, "offline": 0}}


def encode(texts: Sequence[str]) -> np.ndarray:
    """Deterministic toy sentence vectors (a few hashed word counts)."""
    out = np.zeros((len(texts), 16), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            out[i, hashlib.blake2b(word.encode(), digest_size=1).digest()[0] % 16] += 1.0
    return out


TEXTS = [f"{p.title}\n{p.text}" for p in PASSAGES]
CLUSTERS = [[0, 1], [2]]


def test_an_empty_summary_is_replaced_by_the_extractive_one_of_its_cluster(tmp_path: Path) -> None:
    embeddings = encode(TEXTS)
    path = tmp_path / "summaries.jsonl"
    with usage_scope() as scope, KeyedCheckpoint(path) as ckpt:
        summariser = LLMSummariser(Roles(empty_summaries=True), "llm:m", checkpoint=ckpt, encode=encode)
        out = summariser.summarise(CLUSTERS, TEXTS, embeddings)
    assert out[0] == ExtractiveSummariser(encode).summarise([CLUSTERS[0]], TEXTS, embeddings)[0] and out[0]
    assert out[1] == "model summary of 2 lines"
    assert scope.fallbacks() == {"summarize": {"replies": 2, "offline": 1}}
    assert summariser.key == "llm:m+fallback:extractive-v3:w120:l0.75:p2"
    roles = Roles(empty_summaries=True, fallback=False)  # the raw model: same checkpoint, nothing sent again
    with KeyedCheckpoint(path) as ckpt:
        raw = LLMSummariser(roles, "llm:m", checkpoint=ckpt, encode=encode)
        assert raw.summarise(CLUSTERS, TEXTS, embeddings) == ["", "model summary of 2 lines"]
    assert raw.key == "llm:m" and roles.summaries == 0


def test_the_build_plays_unusable_sirerag_replies_offline(tmp_path: Path) -> None:
    """An index build with LLM roles whose propositions are prose for some passages and whose summaries of
    clusters holding one of them are empty: the offline engine fills both in, and the summariser's key says so."""
    pytest.importorskip("umap")
    pytest.importorskip("sklearn")
    from conftest import StubExtractor
    from gearag.config import IndexConfig, TreesConfig
    from gearag.indexing import build_index

    groups = ["Amber", "Birch", "Cedar", "Delta"]
    corpus = [Passage(f"p{i}", f"Item {i}", f"Item {i} belongs to the {groups[i % 4]} collection of Wisconsin. "
                      + ("It was lost in a fire in 1950." if i % 6 == 0 else "It was made of glass."))
              for i in range(24)]
    silent = "lost in a fire"

    def reply(messages: list[dict], role: str) -> str:
        text = messages[-1]["content"]
        if role == "coref":
            return text.rsplit("Paragraph:\n", 1)[1].rsplit("\nRewritten:", 1)[0]
        if role == "entities":
            return json.dumps({"n1": {"name": "Wisconsin", "type": "Place"}})
        if role == "propositions":
            if silent in text:
                return "I am sorry, I cannot list facts for this passage."
            group = next(g for g in groups if g in text)
            return json.dumps({"f1": {"fact": f"An item belongs to the {group} collection.",
                                      "triplets": [["item", "belongs to", group]]}})
        return "" if silent in text else "A summary of the cluster."

    config = IndexConfig(trees=TreesConfig(sirerag=True, engine="openai", levels=2))
    built = {}
    for fallback in (True, False):
        roles = LLMRoles(FakeLLM(reply))
        roles.llm_fallback = fallback
        with usage_scope() as scope:
            index = build_index(corpus, tmp_path / f"index-{fallback}", config, extractor=StubExtractor(),
                                llm_roles=roles)
        built[fallback] = (index.manifest["trees"], scope.fallbacks())
    (trees, counts), (raw_trees, raw_counts) = built[True], built[False]
    assert counts["propositions"] == {"replies": 24, "offline": 4}
    assert counts["summarize"]["offline"] >= 1
    assert raw_counts["propositions"] == {"replies": 24, "offline": 0} and raw_counts["summarize"]["offline"] == 0
    assert raw_counts["summarize"]["replies"] == counts["summarize"]["replies"]
    assert trees["summariser"].endswith("+fallback:extractive-v3:w120:l0.75:p2")
    assert raw_trees["summariser"] == trees["summariser"].split("+fallback:")[0]
    assert trees["propositions"] > raw_trees["propositions"]  # the offline sentence facts of the silent passages
    assert trees["llm_fallbacks"] == counts and raw_trees["llm_fallbacks"] == raw_counts  # kept in the manifest
