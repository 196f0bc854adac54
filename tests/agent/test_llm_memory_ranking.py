"""The gist memory an LLM writes reaches the output ranking; a per-question time budget.

The gist memory: facts a model writes carry no index triple (``Fact.source`` is None), so a ``ppr`` output
ranking seeded only from index triples would ignore them and two models writing different memories would rank
the same passages. Each such fact seeds through its tripleLink (GEAR Eq. 2; :mod:`gearag.agent.memory`).
``rrf`` is Eq. 9: every gist triple, with a source or not, is passage-linked (Eq. 8, 10) and fused.

The time budget: ``AgentConfig.time_budget`` — past it the loop starts no step and no model call, answers from the
memory it has, and the trace's ``stopped`` says so. The tests use a fake clock that only a model call moves,
or a model slower than the budget by far, so nothing depends on the machine's speed.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from gearag.agent.config import AgentConfig, AgentEngineConfig
from gearag.agent.loop import GearAgent
from gearag.agent.memory import MemoryLinks
from gearag.agent.method import GearMethod
from gearag.engine import Engine
from gearag.expand.config import ExpansionConfig
from gearag.llm import FakeLLM, LLMRoles, format_triples
from gearag.model import Fact, Hit, Reasoning
from gearag.options import RequestOptionError, check_request
from gearag.results import result_row
from gearag.store.index import Index
from gearag.trace import STOP_REASONS

#: A question about Stephen Curry's relatives (the demo corpus, :data:`gearag.demo.PASSAGES`) that either
#: memory below could serve: it names Stephen Curry only, and each memory is joined to him.
QUESTION = "Which college basketball team did a relative of Stephen Curry play for?"
#: Two memories a model could write, in its own words (no fact is an index triple verbatim) ...
FATHER = [("Stephen Curry", "is the son of", "Dell Curry"),
          ("Dell Curry", "started his college career with", "Virginia Tech Hokies"),
          ("Dell Curry", "joined the Hokies in", "1982")]
BROTHER = [("Seth Curry", "is the younger brother of", "Stephen Curry"),
           ("Seth Curry", "played college basketball for", "Duke Blue Devils"),
           ("Mike Krzyzewski", "coached", "Duke Blue Devils")]
#: ... and the pages they were read from.
FATHER_PAGES = ("Dell Curry", "Virginia Tech Hokies men's basketball")
BROTHER_PAGES = ("Seth Curry", "Duke Blue Devils men's basketball")


def replies(memory: list[tuple[str, str, str]]) -> list[str]:
    """One step of the LLM engine: the SyncGE reader finds nothing (alike for both memories, so the step's own
    passages do not differ), the gist constructor writes ``memory``, the reasoner cannot answer yet."""
    return ["Facts: none", "Facts: " + format_triples(Fact(*t) for t in memory),
            "Answerable: No\nWhy: which relative is meant is open"]


def ranking(index: Index, memory: list[tuple[str, str, str]], final: str) -> list[str]:
    """Titles of the whole corpus as the agent with a scripted LLM writing ``memory`` ranks it."""
    fake = FakeLLM(replies(memory))
    config = AgentConfig(max_steps=1, answer=False, final=final, engine=AgentEngineConfig(engine="openai"))
    result = GearMethod(index, config, llm_roles=LLMRoles(fake))(QUESTION, len(index.passages))
    assert [c.role for c in fake.calls] == ["read", "read", "reason"]
    assert result.trace is not None and result.trace.gist_memory == [list(t) for t in memory]  # type: ignore[union-attr]
    return [index.passages[h.idx].title for h in result.passages]


@pytest.mark.parametrize("final", ["ppr", "rrf"])
def test_an_llms_memory_moves_its_passages_up(demo_rows_index: Index, final: str) -> None:
    father, brother = ranking(demo_rows_index, FATHER, final), ranking(demo_rows_index, BROTHER, final)
    assert father[:15] != brother[:15]

    def rank(order: list[str], title: str) -> int:
        return order.index(title) if title in order else len(order)

    for title in FATHER_PAGES:
        assert rank(father, title) < rank(brother, title), (title, father, brother)
    for title in BROTHER_PAGES:
        assert rank(brother, title) < rank(father, title), (title, father, brother)


def test_model_written_facts_link_to_their_index_triples(demo_rows_index: Index) -> None:
    agent = GearAgent(demo_rows_index, _stub_engine(), AgentConfig())
    links = MemoryLinks(agent.triple_linker)
    owner = demo_rows_index.triples.passage
    pages = [demo_rows_index.passages[int(owner[t])].title for t in links.triples(Fact(*f) for f in FATHER[1:])]
    assert pages == ["Dell Curry", "Virginia Tech Hokies men's basketball"]
    # A fact the offline engine read is its own index triple: no search, as before.
    assert links.triples([Fact("x", "y", "z", source=5), Fact("a", "b", "c", source=5)]) == [5]


# --------------------------------------------------------------------------- Eq. 9 for every gist triple


class Recorder:
    """passageLink from a table; records each triple it links."""

    def __init__(self, table: dict[tuple[str, str, str], list[int]]) -> None:
        self.table = table
        self.calls: list[Fact] = []

    def link(self, triple: Fact, k: int) -> list[Hit]:
        self.calls.append(triple)
        return [Hit(r, 0.0) for r in self.table[triple.as_tuple()][:k]]


class Script:
    """A scripted role: ``read``/``reason``/``rewrite`` return the next reply; each call may move a clock."""

    def __init__(self, replies: list, clock: FakeClock | None = None, name: str = "") -> None:
        self.replies = list(replies)
        self.clock = clock
        self.name = name
        self.calls = 0

    def _next(self):
        self.calls += 1
        if self.clock is not None:
            self.clock.call(self.name)
        return self.replies.pop(0) if self.replies else []

    def read(self, question, passages, memory=()):
        return self._next()

    def reason(self, question, memory):
        return self._next()

    def rewrite(self, question, memory, reasoning):
        return self._next()


class FakeClock:
    """Seconds that pass only when a model is called (``per_call`` each); records the calls in order."""

    def __init__(self, per_call: float) -> None:
        self.now = 1000.0
        self.per_call = per_call
        self.calls: list[str] = []

    def __call__(self) -> float:
        return self.now

    def call(self, name: str) -> None:
        self.calls.append(name)
        self.now += self.per_call


def _stub_engine(gist: list | None = None, verdicts: list | None = None, rewrites: list | None = None,
                 clock: FakeClock | None = None) -> Engine:
    return Engine("stub", Script([], clock, "reader"), Script(gist or [], clock, "gist"),
                  Script(verdicts or [], clock, "reason"), Script(rewrites or [], clock, "rewrite"),
                  answerer=None)  # type: ignore[arg-type]


def test_eq9_passage_links_every_gist_triple_with_a_source_or_not(tiny_index: Index) -> None:
    sourced, written = Fact("Dell Curry", "drafted by", "Utah Jazz", source=3), Fact("Dell Curry", "son", "Stephen")
    engine = _stub_engine(gist=[[sourced, written]], verdicts=[Reasoning(False, "open")])
    agent = GearAgent(tiny_index, engine, AgentConfig(max_steps=1, chunks=2, final="rrf"))
    recorder = Recorder({sourced.as_tuple(): [2], written.as_tuple(): [4]})
    agent.passage_linker = recorder  # type: ignore[assignment]
    result = agent.run(QUESTION, k=len(tiny_index.passages))
    assert recorder.calls == [sourced, written]
    order = [h.idx for h in result.passages]
    assert {2, 4} <= set(order) and set(order) >= set(result.steps[0].rows)  # Eq. 9: linked lists and C_q(1)


# --------------------------------------------------------------------------- the time budget


def _budget_agent(index: Index, budget: float | None, clock: FakeClock, max_steps: int = 4) -> SimpleNamespace:
    fact = Fact("Dell Curry", "drafted by", "Utah Jazz")
    no = Reasoning(False, "missing")
    engine = _stub_engine(gist=[[fact], [], [], []], verdicts=[no] * 4,
                          rewrites=["second query", "third query", "fourth query"], clock=clock)
    agent = GearAgent(index, engine, AgentConfig(max_steps=max_steps, chunks=2, time_budget=budget,
                                                 expansion=ExpansionConfig(graph="ppr")))
    agent.clock = clock
    return SimpleNamespace(agent=agent, fact=fact)


@pytest.mark.parametrize(("budget", "calls", "steps"), [
    # Each model call takes 10 s. 5 s: step 1's reader runs (the clock reads 0 when it starts), then no call.
    (5.0, ["reader"], 1),
    # 25 s: reader, gist constructor and reasoner start within it; the rewrite (at 30 s) does not.
    (25.0, ["reader", "gist", "reason"], 1),
    # 35 s: step 1 whole (its rewrite starts at 30 s); step 2 would start at 40 s: none.
    (35.0, ["reader", "gist", "reason", "rewrite"], 1),
    # 45 s: step 2 starts at 40 s and its reader runs; nothing after it.
    (45.0, ["reader", "gist", "reason", "rewrite", "reader"], 2),
])
def test_time_budget_stops_the_loop_and_the_trace_says_so(tiny_index: Index, budget: float, calls: list[str],
                                                          steps: int) -> None:
    clock = FakeClock(per_call=10.0)
    s = _budget_agent(tiny_index, budget, clock)
    result = s.agent.run(QUESTION, k=5)
    assert clock.calls == calls
    assert len(result.steps) == steps
    assert result.stopped == "time_budget"
    trace = result.trace().to_dict()
    assert trace["stopped"] == "time_budget" and trace["iterations"] == steps
    # It answers from what it has: the memory read before the budget ran out, and a ranking.
    assert result.memory == ([s.fact] if "gist" in calls else [])
    assert result.passages and result.steps[-1].ranking
    if "reason" not in calls:
        assert result.reasoning is not None and not result.reasoning.answerable
        assert "time budget of" in result.steps[-1].reasoning["text"]


def test_without_a_budget_the_loop_runs_its_steps(tiny_index: Index) -> None:
    clock = FakeClock(per_call=1e6)
    for budget in (None, 1e9):
        result = _budget_agent(tiny_index, budget, clock, max_steps=3).agent.run(QUESTION, k=5)
        assert len(result.steps) == 3 and result.stopped == "max_steps"
        assert result.trace().to_dict()["stopped"] == "max_steps"


def test_the_other_stop_reasons_are_traced(tiny_index: Index) -> None:
    answered = _stub_engine(gist=[[]], verdicts=[Reasoning(True, "done", "Utah Jazz")])
    result = GearAgent(tiny_index, answered, AgentConfig(max_steps=3, chunks=2)).run(QUESTION, k=5)
    assert result.stopped == "answerable"
    same = _stub_engine(gist=[[]], verdicts=[Reasoning(False, "missing")], rewrites=[QUESTION.upper()])
    result = GearAgent(tiny_index, same, AgentConfig(max_steps=3, chunks=2)).run(QUESTION, k=5)
    assert result.stopped == "same_query" and len(result.steps) == 1
    assert set(STOP_REASONS) == {"answerable", "max_steps", "same_query", "time_budget"}


def test_a_slow_model_past_the_budget_answers_from_what_it_has(tiny_index: Index) -> None:
    """Through the LLM engine and the method, in real time: each call takes 0.3 s, the budget is 0.05 s."""

    def slow(messages, role):
        time.sleep(0.3)
        return {"read": 'Facts: ("Dell Curry", "drafted by", "Utah Jazz")', "reason": "Answerable: No\nWhy: open",
                "rewrite": "Next Question: Where are the Utah Jazz based?", "answer": "Answer: Utah Jazz"}[role]

    fake = FakeLLM(slow)
    config = AgentConfig(max_steps=4, chunks=2, time_budget=0.05, engine=AgentEngineConfig(engine="openai"))
    result = GearMethod(tiny_index, config, llm_roles=LLMRoles(fake))(QUESTION, 5)
    roles = [c.role for c in fake.calls]
    # At most step 1's reader started within the budget; no reasoning or rewrite; the answer is still written.
    assert roles in (["read", "answer"], ["answer"])
    row = result_row(tiny_index, result, qid="q")
    assert row["trace"]["stopped"] == "time_budget" and row["trace"]["iterations"] == 1
    assert row["answer"] == "Utah Jazz" and row["passages"]


def test_a_request_may_ask_for_a_budget_up_to_its_bound() -> None:
    check_request(AgentConfig, {"time_budget": 30})
    with pytest.raises(RequestOptionError, match="limit of 300"):
        check_request(AgentConfig, {"time_budget": 301})
    with pytest.raises(RequestOptionError, match="positive"):
        check_request(AgentConfig, {"time_budget": 0})
