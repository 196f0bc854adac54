"""Answers show their evidence, the offline agent stops when it has the answer, rewrites fill the
question's open slot, and recall does not fall with more steps.

Hand-built corpora indexed with the default offline extractor (spaCy rules) and wordllama: a band whose songwriter
created a song named Maria (a two-hop question), and the demo's twelve passages.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from conftest import index_of_rows
from gearag.agent.config import AgentConfig, AgentEngineConfig
from gearag.agent.loop import GearAgent
from gearag.agent.slots import asked_kind, connected, head_noun, question_names, substitute
from gearag.api import Gearag
from gearag.engine import Engine
from gearag.evaluation import recall_by_iteration
from gearag.methods import make_method
from gearag.model import Fact, GoldRef, Question, Reasoning
from gearag.results import RANK, result_row
from gearag.store.index import Index

BAND = [
    ("Maria (Counting Crows)", "Maria is a recurring character in the songs written by Adam Duritz, the songwriter and "
     "lead singer of Counting Crows."),
    ("Counting Crows", "Counting Crows is an American rock band formed in Berkeley, California, in 1991. The band "
     "consists of Adam Duritz and David Bryson."),
    ("Adam Duritz", "Adam Fredric Duritz is an American musician, the lead singer and songwriter of Counting Crows."),
    ("Berkeley, California", "Berkeley is a city on the east shore of San Francisco Bay in Alameda County, "
     "California."),
    ("Glider (band)", "Glider is a jazz-rock combo created by Jim Bogios. Glider played shows in San Francisco and "
     "Berkeley."),
    ("Maria (Blondie song)", "Maria is a song by the American rock band Blondie, written by Jimmy Destri."),
    ("Blondie (band)", "Blondie is an American rock band formed in New York City in 1974."),
    ("Max Ramsay", "Max Ramsay is a fictional character whose wife was Maria Ramsay."),
]
BAND_QUESTION = "Where was the band of the songwriter who created Maria formed?"
BAND_GOLD = ["Maria (Counting Crows)", "Counting Crows"]


@pytest.fixture(scope="module")
def band(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return index_of_rows(tmp_path_factory.mktemp("band"), BAND)


def _titles(index: Index, result) -> list[str]:  # type: ignore[no-untyped-def]
    return [index.passages[h.idx].title for h in result.passages]


# --------------------------------------------------------------------------- the open slot, read without a model


def test_substitute_fills_the_open_slot_with_the_bridge() -> None:
    def words(*stems: str):  # type: ignore[no-untyped-def]
        return lambda s: bool(s & set(stems))

    assert substitute(BAND_QUESTION, words("band", "maria"), "Counting Crows") == "Where was Counting Crows formed?"
    # A relative clause takes the noun phrase it describes; the asked noun ("What county") is never replaced.
    assert (substitute("In which county is the city where Stephen Curry was born?",
                       words("stephen", "curri", "born"), "Akron, Ohio") == "In which county is Akron, Ohio?")
    assert (substitute("What county shares a border with the county where Black Hawk Township is located?",
                       words("black", "hawk", "township", "locat", "counti"), "Jefferson County")
            == "What county shares a border with Jefferson County?")
    assert (substitute("Which team drafted the father of Stephen Curry?", words("father", "stephen", "curri"),
                       "Dell Curry") == "Which team drafted Dell Curry?")


def test_question_parts() -> None:
    assert head_noun("Counting Crows is an American rock band formed in Berkeley, California, in 1991.") == "band"
    assert head_noun("Seth Adham Curry (born August 23, 1990) is an American professional basketball player.") == \
        "player"
    assert head_noun("The Duke Blue Devils men's basketball team represents Duke University.") is None
    assert question_names("Are King Vidor and Géza von Cziffra both American directors?") == \
        ("King Vidor", "Géza von Cziffra", "American")
    assert question_names("Who coached the team of Stephen Curry's younger brother?") == ("Stephen Curry",)
    assert question_names("Notable speakers at the Brisbane Institute include a painter") == ("Brisbane Institute",)
    assert asked_kind("Barrier Device starred which Canadian actress, known for a role?") == {"actress"}
    assert asked_kind("What is the abbreviation of the magazine?") == frozenset()


def test_connected_memory_drops_what_no_chain_from_the_question_reaches() -> None:
    memory = [Fact("Maria", "is", "Counting Crows"), Fact("List of songs recorded by Metallica", "formed in",
                                                          "Los Angeles"),
              Fact("Counting Crows", "formed in", "Berkeley"), Fact("Glider", "played shows in", "Berkeley")]
    kept = connected(BAND_QUESTION, memory)
    assert kept == [memory[0], memory[2], memory[3]]  # Glider joins through Berkeley; Metallica joins nothing


# --------------------------------------------------------------------------- the offline agent on the band question


def test_rewrite_substitutes_the_bridge_and_the_agent_stops_with_the_answer(band: Index) -> None:
    result = make_method(band, "gear", max_steps=4)(BAND_QUESTION, 5)
    steps = result.trace.to_dict()["steps"]
    assert len(steps) == 2  # answerable at step 2: the two steps left are not run
    assert steps[0]["reasoning"]["next_query"] == "Where was Counting Crows formed?"
    assert steps[1]["query"] == "Where was Counting Crows formed?"
    assert steps[1]["reasoning"]["answerable"] and result.answer == "Berkeley"
    assert not any("the Berkeley" in s["query"] or "the Counting Crows" in s["query"] for s in steps)


def test_evidence_passages_are_first_flagged_and_scored_by_rank(band: Index) -> None:
    result = make_method(band, "gear", max_steps=4)(BAND_QUESTION, 5)
    assert result.trace.evidence == ["(Maria; is; Counting Crows)", "(Counting Crows; formed in; Berkeley)"]
    assert _titles(band, result)[:2] == BAND_GOLD  # the passages the answer came from, in evidence order
    assert [band.passages[r].title for r in result.evidence] == BAND_GOLD
    row = result_row(band, result, qid="q", question=BAND_QUESTION)
    assert [p.get("evidence", False) for p in row["passages"]] == [True, True, False, False, False]
    assert row["score_kind"] == RANK == result.score_kind
    assert [p["score"] for p in row["passages"]] == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5])
    # The run file's last step is the output (recall by iteration reads it).
    assert row["trace"]["steps"][-1]["ranking"] == [p["id"] for p in row["passages"]]


def test_evidence_first_off_flags_the_evidence_where_it_ranks(band: Index) -> None:
    on = make_method(band, "gear", max_steps=4)(BAND_QUESTION, 5)
    off = make_method(band, "gear", max_steps=4, evidence_first=False)(BAND_QUESTION, 5)
    assert set(off.evidence) == set(on.evidence)
    assert set(off.evidence) <= {h.idx for h in off.passages}


def test_ask_api_and_chat_show_the_evidence(band: Index) -> None:
    from gearag.server import ServerSettings, create_app

    with TestClient(create_app(Gearag(band), ServerSettings(access_log=False))) as client:
        body = client.post("/v1/ask", json={"question": BAND_QUESTION, "options": {"max_steps": 4}}).json()
        assert body["answer"] == "Berkeley" and body["score_kind"] == "rank"
        assert [p["title"] for p in body["passages"] if p["evidence"]] == BAND_GOLD
        assert [p["evidence"] for p in body["passages"][:3]] == [True, True, False]
        chat = client.post("/v1/chat/completions", json={
            "model": "gearag-gear", "messages": [{"role": "user", "content": BAND_QUESTION}]}).json()
        content = chat["choices"][0]["message"]["content"]
        assert "[1] Maria (Counting Crows) — evidence" in content and "[2] Counting Crows — evidence" in content
        cited = chat["gearag"]["citations"]
        assert [c.get("evidence", False) for c in cited[:3]] == [True, True, False]
        assert {c["score_kind"] for c in cited} == {"rank"}


def test_ask_prints_evidence_and_ranks_not_rank_fusion_constants(band: Index, cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("ask", band.path, BAND_QUESTION, "--method", "gear", "--max-steps", "4")
    assert result.code == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "Maria (Counting Crows) (evidence)" in out and "Counting Crows (evidence)" in out
    assert "# is the rank" in out and "score" not in out.split("passage")[0]
    assert "0.016" not in out


# --------------------------------------------------------------------------- the demo


def test_the_demo_answers_rest_on_their_first_passages(demo_rows_index: Index) -> None:
    from gearag.demo import QUESTIONS

    method = make_method(demo_rows_index, "gear")
    for q in QUESTIONS:
        result = method(q["question"], 5)
        assert result.answer == q["answer"]
        assert result.evidence, q["id"]
        assert result.passages[0].idx in result.evidence  # the answer's evidence passage ranks first
        row = result_row(demo_rows_index, result)
        flagged = [p["title"] for p in row["passages"] if p.get("evidence")]
        shown = {h.idx for h in result.passages}
        assert flagged == [demo_rows_index.passages[r].title for r in result.evidence if r in shown]
        if result.trace.steps[-1].reasoning["answerable"]:  # the reasoner's answer: its passages lead
            top = {h.idx for h in result.passages[: len(result.evidence)]}
            assert top == set(result.evidence), q["id"]


# --------------------------------------------------------------------------- recall by steps


def _gold_questions() -> list[tuple[str, list[str]]]:
    from gearag.demo import QUESTIONS

    return [(q["question"], q["gold"]) for q in QUESTIONS]


def test_recall_never_falls_with_more_steps(demo_rows_index: Index, band: Index) -> None:
    curves = []
    for index, questions in ((demo_rows_index, _gold_questions()), (band, [(BAND_QUESTION, BAND_GOLD)])):
        method = make_method(index, "gear", max_steps=4)
        qs = [Question(f"q{i}", text, gold=[GoldRef(t) for t in gold]) for i, (text, gold) in enumerate(questions)]
        rows = [{"id": q.id, "trace": method(q.question, 15).trace.to_dict()} for q in qs]
        by_id = {p.id: (p.title, p.text) for p in index.passages}
        curves.append(recall_by_iteration(qs, rows, by_id, ks=(2, 5))["curve"])
    for curve in curves:
        for k in ("R@2", "R@5"):
            values = [point[k] for point in curve]
            assert values == sorted(values), (k, values)


def test_a_step_that_leaves_the_evidence_chain_as_it_was_leaves_the_output(tiny_index: Index) -> None:
    """Step fusion (AgentConfig.step_fusion): the output after step n fuses the rankings after each step that moved
    the reasoner's evidence chain; a step that did not adds nothing, so the output stays."""
    chain = ["(Stephen Curry; is son of; Dell Curry)"]
    verdicts = [Reasoning(False, "missing", evidence=chain), Reasoning(False, "missing", evidence=chain),
                Reasoning(False, "missing", evidence=[*chain, "(Dell Curry; drafted by; Utah Jazz)"])]
    roles = SimpleNamespace(reader=SimpleNamespace(read=lambda q, p, m=(): []),
                            gist=SimpleNamespace(read=lambda q, p, m=(): []),
                            reasoner=SimpleNamespace(reason=lambda q, m: verdicts.pop(0)),
                            rewriter=SimpleNamespace(rewrite=lambda q, m, r: f"{q} again {len(verdicts)}"))
    engine = Engine("stub", roles.reader, roles.gist, roles.reasoner, roles.rewriter, answerer=None)  # type: ignore[arg-type]
    agent = GearAgent(tiny_index, engine, AgentConfig(max_steps=3, engine=AgentEngineConfig(chain_agent=False)))
    orders = [[0, 1, 2], [3, 2, 1]]  # the rankings after the steps that moved the chain (steps 1 and 3)
    agent.output = lambda *a, **kw: orders.pop(0)  # type: ignore[method-assign]
    agent.ranks_by_ppr = True
    result = agent.run("Which team drafted the father of Stephen Curry?", k=3)
    ids = [p.id for p in tiny_index.passages]
    assert result.steps[0].ranking == [ids[i] for i in (0, 1, 2)]
    assert result.steps[1].ranking == result.steps[0].ranking  # step 2 moved nothing: no ranking was made
    # Step 3 moved the chain: RRF([0, 1, 2], [3, 2, 1]) → 1 and 2: 1/62 + 1/63 (1 seen first), 0 and 3: 1/61.
    assert result.steps[2].ranking == [ids[i] for i in (1, 2, 0)]
    assert orders == []
