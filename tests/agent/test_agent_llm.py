"""The GEAR agent with the LLM engine against a scripted OpenAI-compatible server on 127.0.0.1.

The server answers in the order the loop asks, so each test checks the exact
sequence of prompts: per step the reader (with the gist memory from step 2
on), the gist constructor, the reasoner and, unless the question is
answerable or the step is the last, the rewriter.
"""

from __future__ import annotations

import json

import pytest

from conftest import isolate_llm_env
from gearag.agent.llm_engine import llm_engine
from gearag.agent.loop import AgentConfig, GearAgent
from gearag.engine import EngineConfig
from gearag.llm import prompts
from gearag.llm.roles import format_passages, format_triples
from gearag.model import Fact
from gearag.retrieve import make_retriever
from gearag.store.index import Index
from llm_server import Reply, ScriptedServer

QUESTION = "On which river is the city where the band of John Lennon was formed?"
REWRITE = "On which river is Liverpool?"
FORMED = ("The Beatles", "formed in", "Liverpool")
RIVER = ("Liverpool", "on the river", "River Mersey")

#: A line that only the named prompt template contains.
MARKERS = {
    "read_with_memory": "Some facts are already known",
    "read": "From these documents, write the facts that help answer the question below.",
    "reason": "Decide whether the known facts below are enough to answer the question.",
    "rewrite": "write the next question to search for",
    "answer": "careful reading-comprehension assistant",
}


def kind(prompt: str) -> str:
    found = [name for name, marker in MARKERS.items() if marker in prompt]
    assert len(found) == 1, (found, prompt[:300])
    return found[0]


def fmt(*triples: tuple[str, str, str]) -> str:
    return format_triples(Fact(*t) for t in triples)


def facts(*triples: tuple[str, str, str]) -> str:
    return "Facts: " + fmt(*triples)


def no(why: str) -> str:
    return f"Answerable: No\nWhy: {why}"


def yes(answer: str) -> str:
    return f"Answerable: Yes\nAnswer: {answer}"


@pytest.fixture(autouse=True)
def llm_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    isolate_llm_env(monkeypatch, tmp_path / "cache")


@pytest.fixture
def server():
    with ScriptedServer(default=Reply("UNSCRIPTED CALL")) as s:
        yield s


def make_agent(index: Index, server: ScriptedServer, max_steps: int) -> GearAgent:
    engine = llm_engine(index, EngineConfig("openai", server.base_url, "test-model", llm_fallback=False))  # raw model
    return GearAgent(index, engine, AgentConfig(max_steps=max_steps, chunks=2, link_k=3))


def base_docs(index: Index, query: str, k: int = 2) -> str:
    rows = [h.idx for h in make_retriever(index, "bm25", "passages").retrieve(query, k)]
    return format_passages([index.passages[r] for r in rows])


def step_docs(index: Index, titles: list[str]) -> str:
    by_title = {p.title: p for p in index.passages}
    return format_passages([by_title[t] for t in titles])


def test_markers_identify_the_default_prompts() -> None:
    templates = {"read": prompts.READ, "read_with_memory": prompts.READ_WITH_MEMORY, "reason": prompts.REASON,
                 "rewrite": prompts.REWRITE, "answer": prompts.ANSWER}
    for name, template in templates.items():
        assert kind(template) == name


# --------------------------------------------------------------------------- (a) answerable at step 2


def test_answerable_at_step_two_runs_two_steps_with_the_right_prompts(
    tiny_index: Index, server: ScriptedServer
) -> None:
    server.push(
        Reply(facts(FORMED)),                       # step 1: reader
        Reply(facts(FORMED)),                       # step 1: gist memory
        Reply(no("Which river Liverpool is on is not known.")),
        Reply(f"Next Question: {REWRITE}"),
        Reply(facts(RIVER)),                        # step 2: reader, with memory
        Reply(facts(RIVER)),                        # step 2: gist memory
        Reply(yes("River Mersey")),
    )
    result = make_agent(tiny_index, server, max_steps=4).run(QUESTION, k=5)

    requests = server.requests
    assert [kind(r.prompt) for r in requests] == [
        "read", "read", "reason", "rewrite", "read_with_memory", "read_with_memory", "reason",
    ]
    assert all(r.answered and r.body["model"] == "test-model" for r in requests)
    assert all(r.path.endswith("/chat/completions") for r in requests)

    # Step 1: the reader reads the base passages of the question; the gist constructor reads C_q(1).
    assert base_docs(tiny_index, QUESTION) in requests[0].prompt
    assert f"Question: {QUESTION}" in requests[0].prompt
    assert step_docs(tiny_index, result.steps[0].passages) in requests[1].prompt
    assert f"Question: {QUESTION}\nFacts: {fmt(FORMED)}" in requests[2].prompt
    assert "Reason: Which river Liverpool is on is not known." in requests[3].prompt
    assert f"Facts: {fmt(FORMED)}" in requests[3].prompt

    # Step 2 retrieves with the rewritten query and reads with the gist memory of step 1.
    assert result.steps[1].query == REWRITE
    assert base_docs(tiny_index, REWRITE) in requests[4].prompt
    assert base_docs(tiny_index, REWRITE) != base_docs(tiny_index, QUESTION)
    for r in requests[4:6]:
        assert f"Question: {QUESTION}\nFacts: {fmt(FORMED)}" in r.prompt
    assert step_docs(tiny_index, result.steps[1].passages) in requests[5].prompt
    assert f"Facts: {fmt(FORMED, RIVER)}" in requests[6].prompt

    assert len(result.steps) == 2
    assert [s.query for s in result.steps] == [QUESTION, REWRITE]
    assert result.steps[0].reasoning == {"answerable": False, "text": "Which river Liverpool is on is not known.",
                                        "answer": None, "next_query": REWRITE}
    assert result.steps[1].reasoning["answerable"] is True
    assert result.steps[1].reasoning["answer"] == "River Mersey"
    assert result.steps[1].reasoning["next_query"] is None
    assert [s.gist_added for s in result.steps] == [[list(FORMED)], [list(RIVER)]]
    assert [s.proximal for s in result.steps] == [[list(FORMED)], [list(RIVER)]]
    assert [t.as_tuple() for t in result.memory] == [FORMED, RIVER]
    assert result.reasoning is not None and result.reasoning.answer == "River Mersey"
    assert 0 < len(result.passages) <= 5


# --------------------------------------------------------------------------- (b) never answerable


def test_never_answerable_stops_at_max_steps(tiny_index: Index, server: ScriptedServer) -> None:
    q2, q3 = "Where was John Lennon's band formed?", "Which river flows through Liverpool?"
    server.push(
        Reply(facts(FORMED)), Reply(facts(FORMED)), Reply(no("missing the river")), Reply(f"Next Question: {q2}"),
        Reply(facts(FORMED)), Reply("Facts: none"), Reply(no("still missing")), Reply(f"Next Question: {q3}"),
        Reply(facts(RIVER)), Reply(facts(RIVER)), Reply(no("the facts do not say")),
    )
    result = make_agent(tiny_index, server, max_steps=3).run(QUESTION, k=5)
    assert [kind(r.prompt) for r in server.requests] == [
        "read", "read", "reason", "rewrite",
        "read_with_memory", "read_with_memory", "reason", "rewrite",
        "read_with_memory", "read_with_memory", "reason",
    ]
    assert len(result.steps) == 3
    assert [s.query for s in result.steps] == [QUESTION, q2, q3]
    assert all(not s.reasoning["answerable"] for s in result.steps)
    assert result.steps[-1].reasoning["next_query"] is None
    assert result.steps[1].gist_added == []
    assert [t.as_tuple() for t in result.memory] == [FORMED, RIVER]
    assert result.reasoning is not None and not result.reasoning.answerable


# --------------------------------------------------------------------------- (c) malformed replies


def test_malformed_reasoning_degrades_to_not_answerable(tiny_index: Index, server: ScriptedServer) -> None:
    garbage = "Hmm, hard to tell from these."
    server.push(
        Reply("I could not find anything in those documents, sorry."),  # unusable reader reply
        Reply(facts(FORMED)),
        Reply(garbage),                                                  # no verdict at all
        Reply(f"Next Question: {REWRITE}"),
        Reply(facts(RIVER)),
        Reply(facts(RIVER)),
        Reply(yes("River Mersey")),
    )
    agent = make_agent(tiny_index, server, max_steps=3)
    result = agent.run(QUESTION, k=5)
    assert [kind(r.prompt) for r in server.requests] == [
        "read", "read", "reason", "rewrite", "read_with_memory", "read_with_memory", "reason",
    ]
    first = result.steps[0]
    assert first.proximal == []  # nothing to link: the step falls back to its base passages
    assert first.reasoning["answerable"] is False
    assert first.reasoning["answer"] is None
    assert first.reasoning["next_query"] == REWRITE
    assert f"Reason: {garbage}" in server.requests[3].prompt  # the loop went on and rewrote
    assert len(result.steps) == 2 and result.steps[1].reasoning["answer"] == "River Mersey"
    stats = agent.engine.reasoner.roles.parse_stats["reason"]  # type: ignore[attr-defined]
    assert (stats.replies, stats.failed) == (2, 1)


# --------------------------------------------------------------------------- (d) token accounting


def test_step_tokens_add_up_to_the_ledger(tiny_index: Index, server: ScriptedServer) -> None:
    usage = [(101, 11), (102, 12), (103, 13), (104, 14), (205, 25), (206, 26), (207, 27)]
    texts = [facts(FORMED), facts(FORMED), no("river unknown"), f"Next Question: {REWRITE}",
             facts(RIVER), facts(RIVER), yes("River Mersey")]
    server.push(*(Reply(t, prompt_tokens=p, completion_tokens=c) for t, (p, c) in zip(texts, usage, strict=True)))
    agent = make_agent(tiny_index, server, max_steps=4)
    result = agent.run(QUESTION, k=5)
    assert len(result.steps) == 2
    # Step 1 made the first four calls, step 2 the last three.
    assert (result.steps[0].tokens_in, result.steps[0].tokens_out) == (101 + 102 + 103 + 104, 11 + 12 + 13 + 14)
    assert (result.steps[1].tokens_in, result.steps[1].tokens_out) == (205 + 206 + 207, 25 + 26 + 27)
    total = agent.engine.ledger.snapshot()  # type: ignore[union-attr]
    assert total.prompt_tokens == sum(s.tokens_in for s in result.steps) == sum(p for p, _ in usage)
    assert total.completion_tokens == sum(s.tokens_out for s in result.steps) == sum(c for _, c in usage)
    assert total.requests == len(server.requests) == 7
    trace = result.trace().to_dict()
    assert [(s["tokens_in"], s["tokens_out"]) for s in trace["steps"]] == [(410, 50), (618, 78)]


# --------------------------------------------------------------------------- (e) the CLI


def test_cli_ask_gear_with_openai_engine_prints_json(cli, tiny_index: Index, server: ScriptedServer) -> None:
    server.push(Reply(facts(FORMED, RIVER)), Reply(facts(FORMED, RIVER)), Reply(yes("River Mersey")),
                Reply("River Mersey"))
    result = cli("ask", tiny_index.path, QUESTION, "--method", "gear", "--engine", "openai",
                 "--llm-base-url", server.base_url, "--llm-model", "m", "--max-steps", "2", "--top-k", "3", "--json")
    assert result.code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["question"] == QUESTION
    assert payload["answer"] == "River Mersey"
    steps = payload["trace"]["steps"]
    assert len(steps) == 1 and steps[0]["query"] == QUESTION
    assert steps[0]["reasoning"]["answerable"] is True
    assert payload["trace"]["gist_memory"] == [list(FORMED), list(RIVER)]
    assert payload["trace"]["answer_label"] == "answer"
    assert 0 < len(payload["passages"]) <= 3
    assert [p["id"] for p in payload["passages"]] == steps[0]["ranking"]
    assert [kind(r.prompt) for r in server.requests] == ["read", "read", "reason", "answer"]
    assert {r.body["model"] for r in server.requests} == {"m"}
    # The answer prompt reads the final top passages.
    titles = [p["title"] for p in payload["passages"]]
    assert step_docs(tiny_index, titles) in server.requests[3].prompt


def test_gear_method_reports_tokens_by_role(tiny_index: Index, server: ScriptedServer) -> None:
    from gearag.methods import make_method

    usage = [(10, 1), (20, 2), (30, 3), (40, 4)]
    texts = [facts(FORMED, RIVER), facts(FORMED, RIVER), yes("River Mersey"), "River Mersey"]
    server.push(*(Reply(t, prompt_tokens=p, completion_tokens=c) for t, (p, c) in zip(texts, usage, strict=True)))
    run = make_method(tiny_index, "gear", engine="openai", llm_base_url=server.base_url, llm_model="m",
                      max_steps=2, chunks=2)
    result = run(QUESTION, 3)
    assert result.answer == "River Mersey"
    # Two reads (SyncGE's reader and the gist constructor), one reasoning call, one answer.
    assert result.trace.tokens_by_role == {
        "read": {"prompt": 30, "completion": 3},
        "reason": {"prompt": 30, "completion": 3},
        "answer": {"prompt": 40, "completion": 4},
    }


def test_concurrent_questions_keep_their_own_token_counts(tiny_index: Index) -> None:
    """Two questions answered at the same time (as `gearag serve` does) each report only their tokens."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from gearag.methods import make_method

    other = "Which river flows through Liverpool?"
    # Every request of one question costs 100 prompt tokens, of the other 7; the first
    # request of each waits for the other's, so both questions are in flight at once.
    together = threading.Barrier(2, timeout=10)
    first_seen: set[str] = set()
    lock = threading.Lock()

    def respond(body: dict) -> Reply:
        prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
        who = "a" if QUESTION in prompt else "b"
        with lock:
            first = who not in first_seen
            first_seen.add(who)
        if first:
            together.wait()
        cost = 100 if who == "a" else 7
        text = yes("River Mersey") if kind(prompt) == "reason" else facts(FORMED, RIVER)
        return Reply(text, prompt_tokens=cost, completion_tokens=1)

    with ScriptedServer(responder=respond) as server:
        run = make_method(tiny_index, "gear", engine="openai", llm_base_url=server.base_url, llm_model="m",
                          max_steps=1, chunks=2, answer=False)
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda q: run(q, 3), [QUESTION, other]))
    for result, cost in zip(results, (100, 7), strict=True):
        by_role = result.trace.tokens_by_role
        assert by_role and all(v["prompt"] == cost * v["completion"] for v in by_role.values()), by_role
        assert sum(s.tokens_in for s in result.trace.steps) == sum(v["prompt"] for v in by_role.values())


# --------------------------------------------------------------------------- weak models degrade, never break


def test_unusable_replies_are_played_offline_and_counted(tiny_index: Index, server: ScriptedServer) -> None:
    """A model that writes prose where triples, a question and an answer were asked (as a 135M model does):
    each such call is the offline engine's, counted per role; --no-llm-fallback shows the raw model."""
    from gearag.llm.fallback import describe, totals
    from gearag.methods import make_method

    server.default = Reply("I am happy to help with your question about rivers!")
    raw = make_method(tiny_index, "gear", engine="openai", llm_base_url=server.base_url, llm_model="m",
                      max_steps=2, chunks=2, llm_fallback=False)(QUESTION, 3)
    assert raw.trace.gist_memory == [] and set(raw.trace.fallbacks) >= {"reader", "gist", "reason", "answer"}
    assert all(c["offline"] == 0 and c["replies"] >= 1 for c in raw.trace.fallbacks.values())
    played = make_method(tiny_index, "gear", engine="openai", llm_base_url=server.base_url, llm_model="m",
                         max_steps=2, chunks=2)(QUESTION, 3)
    counts = played.trace.fallbacks
    assert played.trace.gist_memory  # the offline gist read the passages the model could not
    assert counts["reader"]["offline"] == counts["reader"]["replies"] >= 1
    assert counts["gist"]["offline"] == counts["gist"]["replies"] >= 1
    assert counts["answer"]["replies"] == 1 and played.answer  # prose is an answer, if a poor one: kept
    lines = describe(counts)
    assert any(line.startswith("reader: ") and line.endswith("replies unusable, offline used") for line in lines)
    row = played.trace.to_dict()
    assert row["fallbacks"] == counts
    # Each step carries its own counts (the service streams them with the step); with the answer's, they add up.
    steps = [s.fallbacks or {} for s in played.trace.steps]
    assert all(s["reader"]["offline"] >= 1 for s in steps) and row["steps"][0]["fallbacks"] == steps[0]
    assert totals([{"fallbacks": s} for s in steps] + [{"fallbacks": {"answer": counts["answer"]}}]) == counts


def test_fallback_counts_add_up_over_a_run_and_read_as_one_line_per_role() -> None:
    from gearag.llm.fallback import describe, totals

    traces = [{"fallbacks": {"reader": {"replies": 2, "offline": 1}}}, None, {},
              {"fallbacks": {"reader": {"replies": 3, "offline": 2}, "answer": {"replies": 1, "offline": 0}}}]
    counts = totals(traces)
    assert counts == {"answer": {"replies": 1, "offline": 0}, "reader": {"replies": 5, "offline": 3}}
    assert describe(counts) == ["reader: 3 of 5 replies unusable, offline used"]


def test_ask_says_which_roles_the_offline_engine_played(tiny_index: Index, server: ScriptedServer) -> None:
    from conftest import run_gearag

    server.default = Reply("I am happy to help with your question about rivers!")
    result = run_gearag("ask", tiny_index.path, QUESTION, "--method", "gear", "--engine", "openai",
                        "--llm-base-url", server.base_url, "--llm-model", "m", "--max-steps", "1",
                        env={"GEARAG_LLM_CACHE": "0", "OPENAI_API_KEY": ""})
    assert result.code == 0, result.stderr
    assert "reader: 1 of 1 replies unusable, offline used" in result.stderr


def test_a_call_that_times_out_is_played_offline_not_the_end_of_the_run(
        tiny_index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine too slow for a role's reply (a 135M model on 2 busy cores) costs that call, counted as
    unusable; without fallbacks the time-out stops the run as before."""
    from gearag.errors import LLMTimeoutError
    from gearag.methods import make_method

    monkeypatch.setenv("GEARAG_LLM_TIMEOUT", "0.3")

    def respond(body: dict) -> Reply:
        prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
        if kind(prompt) == "reason":
            return Reply(yes("River Mersey"), delay=3.0)  # never in time
        return Reply(facts(FORMED, RIVER))

    with ScriptedServer(responder=respond) as server:
        options = {"engine": "openai", "llm_base_url": server.base_url, "llm_model": "m", "max_steps": 1,
                   "chunks": 2, "answer": False}
        result = make_method(tiny_index, "gear", **options)(QUESTION, 3)
        assert result.trace.fallbacks["reason"] == {"replies": 1, "offline": 1}
        assert result.trace.gist_memory and result.passages
        with pytest.raises(LLMTimeoutError, match="timed out"):
            make_method(tiny_index, "gear", llm_fallback=False, **options)(QUESTION, 3)
