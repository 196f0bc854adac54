"""IRCoT and HippoRAG's LLM calls against the scripted OpenAI-compatible server on 127.0.0.1.

Each test checks the exact prompts the loop sends (question, the best passages
so far, the reasoning so far), where it stops, and what it accumulates.
"""

from __future__ import annotations

import pytest

from conftest import isolate_llm_env
from gearag.baselines.config import HippoRAG2Config, HippoRAGConfig, IRCoTConfig
from gearag.baselines.hipporag_method import HippoRAG, HippoRAG2
from gearag.baselines.ircot import IRCoT
from gearag.engine import EngineConfig
from gearag.llm.roles import format_passages
from gearag.retrieve import make_retriever
from gearag.store.index import Index
from gearag.trace import HippoRAGTrace, IRCoTTrace
from llm_server import Reply, ScriptedServer

QUESTION = "On which river is the city where the band of John Lennon was formed?"
THOUGHT_1 = "The Beatles were formed in Liverpool."
THOUGHT_2 = "Liverpool is a port city on the River Mersey."
MARKER = "write only the NEXT single sentence of reasoning"


@pytest.fixture(autouse=True)
def llm_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    isolate_llm_env(monkeypatch, tmp_path / "cache")


@pytest.fixture
def server():
    with ScriptedServer(default=Reply("UNSCRIPTED CALL")) as s:
        yield s


def engine(server: ScriptedServer) -> EngineConfig:
    return EngineConfig("openai", server.base_url, "test-model")


def bm25_rows(index: Index, query: str, k: int) -> list[int]:
    return [h.idx for h in make_retriever(index, "bm25", "passages").retrieve(query, k)]


def test_ircot_sends_the_right_prompts_accumulates_passages_and_stops_at_max_steps(
    tiny_index: Index, server: ScriptedServer
) -> None:
    server.push(Reply(THOUGHT_1, prompt_tokens=100, completion_tokens=10),
                Reply(f"Reasoning: {THOUGHT_2} It flows into Liverpool Bay.", prompt_tokens=120, completion_tokens=12))
    method = IRCoT(tiny_index, IRCoTConfig(max_steps=3, per_step=2, merge="order", engine=engine(server)))
    result = method(QUESTION, 8)
    trace = result.trace
    assert isinstance(trace, IRCoTTrace) and trace.engine == "openai"

    # No thought after the last retrieval: two LLM calls for three steps.
    assert len(server.requests) == 2
    assert all(MARKER in r.prompt and r.body["model"] == "test-model" for r in server.requests)
    step1 = bm25_rows(tiny_index, QUESTION, 2)
    docs1 = format_passages([tiny_index.passages[r] for r in step1])
    assert docs1 in server.requests[0].prompt
    assert server.requests[0].prompt.rstrip().endswith(f"Question: {QUESTION}\nReasoning:")
    # The second call sees the first thought and the best two passages after step 2 (first retrieved first).
    assert server.requests[1].prompt.rstrip().endswith(f"Question: {QUESTION}\nReasoning: {THOUGHT_1}")

    assert [s.query for s in trace.steps] == [QUESTION, THOUGHT_1, THOUGHT_2]  # the reply is cut to one sentence
    assert [s.thought for s in trace.steps] == [THOUGHT_1, THOUGHT_2, ""]
    assert trace.iterations == 3 and not trace.answered

    # Accumulation: the output is every passage any step retrieved, in first-retrieved order.
    expected: list[int] = []
    for query in (QUESTION, THOUGHT_1, THOUGHT_2):
        expected += [r for r in bm25_rows(tiny_index, query, 2) if r not in expected]
    assert [h.idx for h in result.passages] == expected
    assert [t for s in trace.steps for t in s.new_passages] == [tiny_index.passages[r].title for r in expected]
    # Tokens by role and by step (GEAR Fig. 4).
    assert trace.tokens_by_role == {"ircot": {"prompt": 220, "completion": 22}}
    assert [(s.tokens_in, s.tokens_out) for s in trace.steps] == [(100, 10), (120, 12), (0, 0)]


def test_ircot_stops_when_a_thought_states_the_answer(tiny_index: Index, server: ScriptedServer) -> None:
    server.push(Reply("Liverpool lies on the River Mersey. So the answer is: River Mersey."))
    method = IRCoT(tiny_index, IRCoTConfig(max_steps=4, per_step=3, engine=engine(server)))
    result = method(QUESTION, 5)
    trace = result.trace
    assert isinstance(trace, IRCoTTrace)
    assert len(server.requests) == 1 and trace.answered and trace.iterations == 1
    assert [h.idx for h in result.passages] == bm25_rows(tiny_index, QUESTION, 3)


def test_hipporag_v1_links_the_models_query_entities(tiny_index: Index, server: ScriptedServer) -> None:
    server.push(Reply('{"named_entities": ["John Lennon", "Liverpool"]}'))
    method = HippoRAG(tiny_index, HippoRAGConfig(engine=engine(server)))
    result = method(QUESTION, 3)
    assert "named entities" in server.requests[0].prompt and QUESTION in server.requests[0].prompt
    trace = result.trace
    assert isinstance(trace, HippoRAGTrace) and trace.fallback is None
    assert [link[0] for link in trace.linked] == ["John Lennon", "Liverpool"]
    assert trace.linked[1][1] == "liverpool"
    assert trace.tokens_by_role is not None and "ner" in trace.tokens_by_role


def test_hipporag2_keeps_the_facts_the_filter_keeps(tiny_index: Index, server: ScriptedServer) -> None:
    config = HippoRAG2Config(engine=engine(server))
    method = HippoRAG2(tiny_index, config)
    q = method.encode(QUESTION)
    top = method.top_facts(q)
    t = tiny_index.triples
    keep = top[1][0]
    server.push(Reply(f'{{"fact": [["{t.subjects[keep]}", "{t.predicates[keep]}", "{t.objects[keep]}"]]}}'))
    result = method(QUESTION, 3)
    assert "Candidate facts:" in server.requests[0].prompt
    trace = result.trace
    assert isinstance(trace, HippoRAGTrace)
    assert [f[:3] for f in trace.facts] == [[t.subjects[keep], t.predicates[keep], t.objects[keep]]]
    # Nothing survives → dense retrieval, and the trace says so.
    server.push(Reply('{"fact": []}'))
    fallback = method(QUESTION, 3)
    assert isinstance(fallback.trace, HippoRAGTrace) and "filter" in (fallback.trace.fallback or "")
    dense = [h.idx for h in make_retriever(tiny_index, "dense", "passages").retrieve(QUESTION, 3)]
    assert [h.idx for h in fallback.passages] == dense


def test_unusable_replies_of_the_peers_roles_are_played_offline_and_counted(
    tiny_index: Index, server: ScriptedServer
) -> None:
    """An empty thought would end IRCoT at step 1 and an empty entity list would leave HippoRAG unseeded: each is
    the offline engine's for that call (gearag.llm.fallback), counted; --no-llm-fallback keeps the raw model."""
    server.default = Reply("")
    ircot = IRCoT(tiny_index, IRCoTConfig(max_steps=2, per_step=2, engine=engine(server)))(QUESTION, 5).trace
    assert isinstance(ircot, IRCoTTrace) and ircot.iterations == 2  # the offline thought continued the chain
    assert ircot.fallbacks == {"ircot": {"replies": 1, "offline": 1}}
    raw = IRCoT(tiny_index, IRCoTConfig(max_steps=2, per_step=2,
                                        engine=EngineConfig("openai", server.base_url, "test-model",
                                                            llm_fallback=False)))(QUESTION, 5).trace
    assert isinstance(raw, IRCoTTrace) and raw.iterations == 1 and raw.fallbacks == {
        "ircot": {"replies": 1, "offline": 0}}
    hippo = HippoRAG(tiny_index, HippoRAGConfig(engine=engine(server)))(QUESTION, 5).trace
    assert isinstance(hippo, HippoRAGTrace) and hippo.linked  # the offline NER found the question's names
    assert hippo.fallbacks == {"ner": {"replies": 1, "offline": 1}}
