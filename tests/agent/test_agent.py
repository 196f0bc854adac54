"""The GEAR agent (§5): the offline engine end to end on real slices, the loop with stub roles, Eq. 9."""

from __future__ import annotations

import itertools
import json
from types import SimpleNamespace

import pytest

from conftest import DATA, wiki_slice
from gearag.agent.config import AgentConfig, AgentEngineConfig
from gearag.agent.loop import GearAgent
from gearag.agent.offline import OfflineAnswerer
from gearag.config import IndexConfig
from gearag.engine import Engine
from gearag.errors import ConfigError, DataError
from gearag.evaluation import recall_by_iteration
from gearag.expand.config import ExpansionConfig
from gearag.methods import make_method
from gearag.model import Fact, GoldRef, Hit, Passage, Question, Reasoning
from gearag.store.index import Index

N_PASSAGES = 120
N_QUESTIONS = 3
K = 5
MAX_STEPS = 2


def _norm(text: str) -> str:
    return " ".join(text.split())


def _build(tmp_path_factory: pytest.TempPathFactory, name: str, rows: list[dict]) -> Index:
    from gearag.indexing import build_index

    passages = [Passage(f"{name[0]}{i}", p["title"], p["text"]) for i, p in enumerate(rows)]
    return build_index(passages, tmp_path_factory.mktemp(name) / "index", IndexConfig.of(extractor="spacy"))


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    rows, questions = wiki_slice(N_PASSAGES, N_QUESTIONS)
    index = _build(tmp_path_factory, "wiki", rows)
    return SimpleNamespace(index=index, questions=[q["question"] for q in questions],
                           method=make_method(index, "gear", max_steps=MAX_STEPS))


@pytest.fixture(scope="module")
def musique(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    corpus = json.loads((DATA / "musique_train" / "musique_train_corpus.json").read_text(encoding="utf-8"))
    questions = json.loads((DATA / "musique_train" / "musique_train.json").read_text(encoding="utf-8"))
    questions = questions[:N_QUESTIONS]
    by_key = {(p["title"], _norm(p["text"])): p for p in corpus}
    rows = corpus[:N_PASSAGES]
    have = {(p["title"], _norm(p["text"])) for p in rows}
    for q in questions:
        for para in q["paragraphs"]:
            key = (para["title"], _norm(para["paragraph_text"]))
            if para["is_supporting"] and key not in have:
                rows.append(by_key[key])
                have.add(key)
    index = _build(tmp_path_factory, "musique", rows)
    return SimpleNamespace(index=index, questions=[q["question"] for q in questions],
                           method=make_method(index, "gear", max_steps=MAX_STEPS))


# --------------------------------------------------------------------------- offline engine, real data


@pytest.mark.parametrize("slice_name", ["wiki", "musique"])
@pytest.mark.parametrize("n", range(N_QUESTIONS))
def test_offline_gear_end_to_end(request: pytest.FixtureRequest, slice_name: str, n: int) -> None:
    data = request.getfixturevalue(slice_name)
    index: Index = data.index
    question = data.questions[n]
    result = data.method(question, K)

    assert 0 < len(result.passages) <= K
    rows = [h.idx for h in result.passages]
    assert len(set(rows)) == len(rows)
    assert [h.score for h in result.passages] == sorted((h.score for h in result.passages), reverse=True)

    trace = result.trace.to_dict()
    steps = trace["steps"]
    assert 1 <= len(steps) <= MAX_STEPS
    assert trace["iterations"] == len(steps)
    for i, step in enumerate(steps, start=1):
        assert step["step"] == i
        assert {"query", "proximal", "gist_added", "reasoning", "passages", "ranking"} <= set(step)
        assert "rows" not in step  # internal
        assert step["passages"] and all(isinstance(t, str) for t in step["passages"])
        assert 0 < len(step["ranking"]) <= K
        for triple in step["proximal"] + step["gist_added"]:
            assert len(triple) == 3 and all(isinstance(x, str) and x for x in triple)
        assert set(step["reasoning"]) >= {"answerable", "text", "answer", "next_query"}
        assert (step["tokens_in"], step["tokens_out"]) == (0, 0)  # no language model
    # The loop's queries: the question first, then each rewrite.
    assert steps[0]["query"] == question
    for prev, step in itertools.pairwise(steps):
        assert not prev["reasoning"]["answerable"]
        assert step["query"] == prev["reasoning"]["next_query"]
    last = steps[-1]
    stopped_early = len(steps) < MAX_STEPS
    assert last["reasoning"]["next_query"] is None or stopped_early
    if stopped_early:
        # Answerable, or the rewriter had nothing new to ask.
        nxt = last["reasoning"]["next_query"]
        assert last["reasoning"]["answerable"] or nxt.strip().casefold() == last["query"].strip().casefold()
    # The gist memory is what the steps added, in order, without repeats.
    memory = [t for step in steps for t in step["gist_added"]]
    assert trace["gist_memory"] == memory
    assert len({tuple(t) for t in memory}) == len(memory)
    # Eq. 9: the output is the last step's cumulative ranking.
    assert [index.passages[r].id for r in rows] == last["ranking"]
    # The offline answer is labelled as an extracted candidate.
    assert trace["answer_label"] == OfflineAnswerer.LABEL
    assert "offline" in trace["answer_label"] and "candidate" in trace["answer_label"]
    assert isinstance(result.answer, str) and result.answer


def test_the_ppr_output_ranking_links_no_gist_triple(wiki: SimpleNamespace,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """passageLink's lists (Eq. 8-10) only feed Eq. 9: with the PPR output ranking (the default) none is made, and
    the ranking is the one it was with them made; with Eq. 9 they are."""
    from gearag.expand.link import PassageLinker

    calls: list[str] = []
    link = PassageLinker.link

    def spy(self: PassageLinker, triple: Fact, k: int) -> list[Hit]:
        calls.append(triple.text)
        return link(self, triple, k)

    monkeypatch.setattr(PassageLinker, "link", spy)
    by_ppr = make_method(wiki.index, "gear", max_steps=MAX_STEPS)
    ranked = [[h.idx for h in by_ppr(q, K).passages] for q in wiki.questions]
    assert calls == []
    assert ranked == [[h.idx for h in wiki.method(q, K).passages] for q in wiki.questions]
    by_eq9 = make_method(wiki.index, "gear", max_steps=MAX_STEPS, final="rrf")
    memory = [by_eq9(q, K).trace.to_dict()["gist_memory"] for q in wiki.questions]
    assert len(calls) == sum(len(m) for m in memory) > 0  # once per gist triple


def test_offline_gear_without_answer(wiki: SimpleNamespace) -> None:
    result = make_method(wiki.index, "gear", max_steps=1, answer=False)(wiki.questions[0], K)
    assert result.answer is None and result.trace.answer_label is None
    assert len(result.trace.steps) == 1


@pytest.mark.parametrize("options", [{"max_steps": -1}, {"max_steps": 0}, {"engine": "bogus"}, {"beam_width": -3}])
def test_bad_agent_options_are_config_errors(tiny_index: Index, options: dict) -> None:
    with pytest.raises(ConfigError):
        make_method(tiny_index, "gear", **options)


# --------------------------------------------------------------------------- the loop with stub roles

T_A = Fact("Dell Curry", "father of", "Stephen Curry")
T_B = Fact("Dell Curry", "drafted by", "Utah Jazz")
QUESTION = "Which team drafted the father of Stephen Curry?"


class StubBase:
    """Base retrieval by query from a table; records queries."""

    def __init__(self, table: dict[str, list[int]]) -> None:
        self.table = table
        self.queries: list[tuple[str, int]] = []

    def retrieve(self, query: str, k: int) -> list[Hit]:
        self.queries.append((query, k))
        return [Hit(r, 1.0) for r in self.table[query][:k]]


class StubLinker:
    """passageLink from a table keyed by the triple; records calls."""

    def __init__(self, table: dict[tuple[str, str, str], list[int]]) -> None:
        self.table = table
        self.calls: list[tuple[tuple[str, str, str], int]] = []

    def link(self, triple: Fact, k: int) -> list[Hit]:
        self.calls.append((triple.as_tuple(), k))
        return [Hit(r, 0.0) for r in self.table[triple.as_tuple()][:k]]


class StubReader:
    """Returns scripted triples per call (none by default); records (question, rows, memory)."""

    def __init__(self, script: list[list[Fact]] | None = None) -> None:
        self.script = list(script or [])
        self.calls: list[tuple[str, list[int], list[Fact]]] = []

    def read(self, question, passages, memory=()):
        self.calls.append((question, list(passages), list(memory)))
        return self.script.pop(0) if self.script else []


class StubReasoner:
    def __init__(self, verdicts: list[Reasoning]) -> None:
        self.verdicts = list(verdicts)
        self.calls: list[list[Fact]] = []

    def reason(self, question, memory):
        self.calls.append(list(memory))
        return self.verdicts.pop(0)


class StubRewriter:
    def __init__(self, queries: list[str]) -> None:
        self.queries = list(queries)
        self.calls: list[tuple[str, list[Fact], Reasoning]] = []

    def rewrite(self, question, memory, reasoning):
        self.calls.append((question, list(memory), reasoning))
        return self.queries.pop(0)


def _agent(index: Index, *, gist: list[list[Fact]], verdicts: list[Reasoning], rewrites: list[str],
           base: dict[str, list[int]], links: dict, max_steps: int = 3, chain: bool = False) -> SimpleNamespace:
    roles = SimpleNamespace(reader=StubReader(), gist=StubReader(gist), reasoner=StubReasoner(verdicts),
                            rewriter=StubRewriter(rewrites))
    engine = Engine("stub", roles.reader, roles.gist, roles.reasoner, roles.rewriter,
                    answerer=None)  # type: ignore[arg-type]
    # Eq. 9 and Algorithm 1 as printed (the passage-graph defaults are tested in test_graph.py).
    agent = GearAgent(index, engine, AgentConfig(max_steps=max_steps, chunks=3, link_k=2, final="rrf",
                                                 engine=AgentEngineConfig(chain_agent=chain),
                                                 expansion=ExpansionConfig(graph="beams")))
    # With no proximal triples there is nothing to expand, so C_q(n) is the base ranking.
    agent.base = StubBase(base)
    agent.passage_linker = StubLinker(links)
    return SimpleNamespace(agent=agent, roles=roles, base=agent.base, linker=agent.passage_linker)


def test_eq9_final_fusion_by_hand(tiny_index: Index) -> None:
    s = _agent(
        tiny_index,
        gist=[[T_A], [T_A, T_B]],  # step 2 re-reads T_A: not added (or linked) twice
        verdicts=[Reasoning(False, "the team is unknown"), Reasoning(True, "found", "Utah Jazz")],
        rewrites=["Which team drafted Dell Curry?"],
        base={QUESTION: [0, 1, 2, 7], "Which team drafted Dell Curry?": [3, 1]},
        links={T_A.as_tuple(): [1, 5, 6], T_B.as_tuple(): [3, 6]},
    )
    result = s.agent.run(QUESTION, k=4)
    ids = [p.id for p in tiny_index.passages]

    # Step 1: RRF(C_tA = [1, 5], C_q(1) = [0, 1, 2]) with k = 60:
    #   1: 1/61 + 1/62,  0: 1/61,  5: 1/62,  2: 1/63            → 1, 0, 5, 2
    # Step 2: RRF(C_tA, C_tB = [3, 6], C_q(1), C_q(2) = [3, 1]):
    #   1: 1/61 + 1/62 + 1/62,  3: 1/61 + 1/61,  0: 1/61,  5: 1/62,  6: 1/62 (tie: 5 seen first),  2: 1/63
    assert [h.idx for h in result.passages] == [1, 3, 0, 5]
    # The agent's output has no per-passage score: each is 1 / rank (the fusion is in the order).
    assert [h.score for h in result.passages] == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4])
    assert result.steps[0].ranking == [ids[i] for i in (1, 0, 5, 2)]
    assert result.steps[1].ranking == [ids[i] for i in (1, 3, 0, 5)]
    assert result.steps[0].rows == [0, 1, 2]
    assert result.steps[1].rows == [3, 1]

    # Base retrieval per step: the question, then the rewritten query, `chunks` passages each.
    assert s.base.queries == [(QUESTION, 3), ("Which team drafted Dell Curry?", 3)]
    # passageLink once per new gist triple, with link_k.
    assert s.linker.calls == [(T_A.as_tuple(), 2), (T_B.as_tuple(), 2)]
    # Reader: the original question over the step's base passages, with the memory from step 2 on.
    assert s.roles.reader.calls == [(QUESTION, [0, 1, 2], []), (QUESTION, [3, 1], [T_A])]
    # Gist constructor: reads C_q(n) (here = base) with the question and the memory so far.
    assert s.roles.gist.calls == [(QUESTION, [0, 1, 2], []), (QUESTION, [3, 1], [T_A])]
    assert s.roles.reasoner.calls == [[T_A], [T_A, T_B]]
    assert len(s.roles.rewriter.calls) == 1
    question, memory, reasoning = s.roles.rewriter.calls[0]
    assert (question, memory, reasoning.text) == (QUESTION, [T_A], "the team is unknown")

    assert result.memory == [T_A, T_B]
    assert [s.gist_added for s in result.steps] == [[list(T_A.as_tuple())], [list(T_B.as_tuple())]]
    assert result.reasoning is not None and result.reasoning.answer == "Utah Jazz"
    trace = result.trace().to_dict()
    assert trace["iterations"] == 2
    assert [st["query"] for st in trace["steps"]] == [QUESTION, "Which team drafted Dell Curry?"]
    assert trace["steps"][0]["reasoning"]["next_query"] == "Which team drafted Dell Curry?"
    assert trace["steps"][1]["reasoning"] == {"answerable": True, "text": "found", "answer": "Utah Jazz",
                                             "next_query": None}
    assert trace["gist_memory"] == [list(T_A.as_tuple()), list(T_B.as_tuple())]


def test_loop_stops_at_max_steps(tiny_index: Index) -> None:
    no = Reasoning(False, "missing")
    s = _agent(
        tiny_index,
        gist=[[T_A], [T_B], []],
        verdicts=[no, no, no, no],
        rewrites=["second query", "third query", "fourth query"],
        base={QUESTION: [0, 1], "second query": [2], "third query": [3, 4]},
        links={T_A.as_tuple(): [1], T_B.as_tuple(): [2]},
        max_steps=3,
    )
    result = s.agent.run(QUESTION, k=10)
    assert len(result.steps) == 3
    assert [st.query for st in result.steps] == [QUESTION, "second query", "third query"]
    assert len(s.roles.rewriter.calls) == 2  # no rewrite after the last step
    assert result.steps[-1].reasoning["next_query"] is None
    assert result.steps[-1].gist_added == []
    # Final: RRF([1], [2], [0, 1], [2], [3, 4]): 1: 1/61+1/62, 2: 2/61, then 0: 1/61, 3: 1/61, 4: 1/62.
    assert [h.idx for h in result.passages] == [2, 1, 0, 3, 4]


def test_loop_stops_when_the_rewrite_repeats_the_query(tiny_index: Index) -> None:
    s = _agent(
        tiny_index,
        gist=[[T_A]],
        verdicts=[Reasoning(False, "missing")],
        rewrites=["  which team drafted the FATHER of Stephen Curry? "],
        base={QUESTION: [0, 1]},
        links={T_A.as_tuple(): [1]},
    )
    result = s.agent.run(QUESTION, k=5)
    assert len(result.steps) == 1
    assert s.base.queries == [(QUESTION, 3)]


def test_chain_loop_continues_on_a_repeated_rewrite_while_the_memory_grows(tiny_index: Index) -> None:
    """A repeated query is retried while the step added facts (the next step reads with them)."""
    repeated = "  which team drafted the FATHER of Stephen Curry? "
    s = _agent(
        tiny_index,
        gist=[[T_A], []],
        verdicts=[Reasoning(False, "missing"), Reasoning(False, "missing")],
        rewrites=[repeated, repeated],
        base={QUESTION: [0, 1], repeated: [0, 1]},
        links={T_A.as_tuple(): [1]},
        chain=True,
    )
    result = s.agent.run(QUESTION, k=5)
    assert len(result.steps) == 2  # step 2 added nothing, so the loop stops there
    assert s.base.queries == [(QUESTION, 3), (repeated, 3)]


def test_loop_stops_when_answerable_at_step_one(tiny_index: Index) -> None:
    s = _agent(
        tiny_index,
        gist=[[T_A, T_B]],
        verdicts=[Reasoning(True, "done", "Utah Jazz")],
        rewrites=[],
        base={QUESTION: [0, 1, 2]},
        links={T_A.as_tuple(): [2, 1], T_B.as_tuple(): [1]},
    )
    result = s.agent.run(QUESTION, k=2)
    assert len(result.steps) == 1 and s.roles.rewriter.calls == []
    # RRF([2, 1], [1], [0, 1, 2]): 1: 1/62+1/61+1/62, 2: 1/61+1/63, 0: 1/61 → top 2: 1, 2.
    assert [h.idx for h in result.passages] == [1, 2]
    assert result.steps[0].ranking == [tiny_index.passages[i].id for i in (1, 2)]


# --------------------------------------------------------------------------- recall by iteration


def test_recall_by_iteration_carries_values_forward() -> None:
    passages = {pid: (pid.upper(), f"text of {pid}") for pid in ("a", "b", "c", "d", "e", "x", "y")}
    questions = [
        Question("q1", "?", gold=[GoldRef("A"), GoldRef("B")]),
        Question("q2", "?", gold=[GoldRef("C")]),
        Question("q3", "?", gold=[GoldRef("D"), GoldRef("E")]),
        Question("q4", "no gold"),
    ]
    rows = [
        {"id": "q1", "trace": {"steps": [{"ranking": ["x", "a"], "tokens_in": 10, "tokens_out": 2},
                                         {"ranking": ["a", "b"], "tokens_in": 20, "tokens_out": 3}]}},
        {"id": "q2", "trace": {"steps": [{"ranking": ["c"], "tokens_in": 5, "tokens_out": 1}]}},
        {"id": "q3", "trace": {"steps": [{"ranking": ["x", "y", "unknown-id"]}]}},
        {"id": "q4", "trace": {"steps": [{"ranking": ["a"]}]}},  # no gold: left out
        {"id": "q5", "trace": {"steps": [{"ranking": ["a"]}]}},  # unknown question: left out
    ]
    out = recall_by_iteration(questions, rows, passages, ks=(1, 2))
    # Iteration 1: q1 R@1 0, R@2 1/2; q2 1, 1; q3 0, 0.
    # Iteration 2: q1 R@1 1/2, R@2 1; q2 stopped → keeps 1, 1; q3 stopped → keeps 0, 0.
    assert out["curve"] == [
        {"iteration": 1, "R@1": 33.33, "R@2": 50.0, "still_running": 3},
        {"iteration": 2, "R@1": 50.0, "R@2": 66.67, "still_running": 1},
    ]
    assert out["mean_iterations"] == pytest.approx(4 / 3, abs=1e-3)
    assert out["iteration_histogram"] == {"1": 2, "2": 1}
    # Tokens: q1 10+2+20+3 = 35, q2 6, q3 0 → 41/3.
    assert out["mean_tokens_per_question"] == pytest.approx(13.7)


def test_recall_by_iteration_needs_agent_traces() -> None:
    questions = [Question("q1", "?", gold=[GoldRef("A")])]
    with pytest.raises(DataError):
        recall_by_iteration(questions, [{"id": "q1", "passages": []}], {"a": ("A", "")})


def test_on_step_sees_each_step_as_it_finishes(tiny_index: Index) -> None:
    s = _agent(
        tiny_index,
        gist=[[T_A], [T_B]],
        verdicts=[Reasoning(False, "missing"), Reasoning(True, "found", "Utah Jazz")],
        rewrites=["second query"],
        base={QUESTION: [0, 1], "second query": [2]},
        links={T_A.as_tuple(): [1], T_B.as_tuple(): [2]},
    )
    seen: list[tuple[int, int]] = []  # (step number, reasoner calls made when the step was reported)
    result = s.agent.run(QUESTION, k=5, on_step=lambda st: seen.append((st.step, len(s.roles.reasoner.calls))))
    # Step 1 is reported before step 2 reasons: a stream can show it while step 2 runs.
    assert seen == [(1, 1), (2, 2)]
    assert [st.step for st in result.steps] == [1, 2]


def test_gear_method_passes_on_step_through(tiny_index: Index) -> None:
    method = make_method(tiny_index, "gear", max_steps=2)
    steps: list[int] = []
    result = method("Who is the father of Stephen Curry?", 3, on_step=lambda st: steps.append(st.step))
    assert result.trace is not None and steps == [st.step for st in result.trace.steps]  # type: ignore[union-attr]


def test_the_agent_settings_import_from_the_package() -> None:
    from gearag.agent import AgentConfig, AgentEngineConfig
    from gearag.agent.config import AgentConfig as Declared

    assert AgentConfig is Declared and AgentEngineConfig().engine == "offline"
