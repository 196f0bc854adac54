"""``gearag index``, ``add`` and ``bench`` take --llm-fallback/--no-llm-fallback and --llm-max-tokens.

The options are retrieve's and ask's (EngineConfig's declaration); here they reach the LLM extractor of a
build and of an add, and the rows of a bench, as the requests the scripted server records show.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import assert_clean_error, isolate_llm_env, write_jsonl
from gearag.store.index import Index
from llm_server import Reply, ScriptedServer

PEOPLE = ["Marie Curie", "Niels Bohr", "Lise Meitner", "Enrico Fermi", "Max Planck", "Emmy Noether"]
CITIES = ["Warsaw", "Copenhagen", "Vienna", "Rome", "Kiel", "Erlangen"]
PROSE = "Here is a summary of the passage instead of triples."


def docs(rows: range) -> list[dict]:
    return [{"id": f"p{i}", "title": PEOPLE[i], "text": f"{PEOPLE[i]} was born in {CITIES[i]}. PASSAGE-{i:03d}."}
            for i in rows]


def reply(body: dict) -> Reply:
    """Passages 1 and 4: prose (nothing usable); the others one triple."""
    i = int(re.findall(r"PASSAGE-(\d{3})", body["messages"][-1]["content"])[-1])
    if i in (1, 4):
        return Reply(PROSE)
    return Reply(json.dumps({"named_entities": [PEOPLE[i]], "triples": [[PEOPLE[i], "model says", CITIES[i]]]}))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    isolate_llm_env(monkeypatch, tmp_path / "cache")
    with ScriptedServer(responder=reply) as running:
        yield running


def triples_of(index: Index, pid: str) -> int:
    row = [p.id for p in index.passages].index(pid)
    return len(index.passage_triples(row))


def test_index_falls_back_to_spacy_counts_it_and_sends_the_extract_bound(cli, server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs(range(4)))
    llm = ("--extractor", "llm", "--llm-base-url", server.base_url, "--llm-model", "m")
    done = cli("index", corpus, "--out", tmp_path / "on", *llm, "--llm-max-tokens", "extract=77")
    assert done.code == 0, done.stderr
    assert "extract: 1 of 4 replies unusable, spaCy rules used" in done.stderr
    assert {r.body["max_tokens"] for r in server.requests} == {77}
    on = Index.load(tmp_path / "on")
    assert on.manifest["extractor_key"].endswith("+fallback:spacy-rules-v1")
    assert on.manifest["extraction_fallbacks"] == {"extract": {"replies": 4, "offline": 1}}
    assert triples_of(on, "p1") > 0  # the spaCy rules' triples of the passage the model wrote prose for

    server.requests.clear()
    raw = cli("index", corpus, "--out", tmp_path / "off", *llm, "--no-llm-fallback")
    assert raw.code == 0, raw.stderr
    assert "replies unusable" not in raw.stderr
    assert all(r.body["max_tokens"] != 77 for r in server.requests)  # the role's table bound again
    off = Index.load(tmp_path / "off")
    assert off.manifest["extractor_key"].startswith("llm:m:") and "+fallback" not in off.manifest["extractor_key"]
    assert triples_of(off, "p1") == 0 and triples_of(off, "p0") == 1


def test_add_takes_the_reply_options_for_the_new_shards_extractor(cli, server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "index"
    llm = ("--llm-base-url", server.base_url, "--llm-model", "m")
    assert cli("index", write_jsonl(tmp_path / "a.jsonl", docs(range(3))), "--out", root, "--extractor", "llm",
               *llm).code == 0
    server.requests.clear()
    raw = cli("add", root, write_jsonl(tmp_path / "b.jsonl", docs(range(3, 5))), *llm, "--no-llm-fallback",
              "--llm-max-tokens", "extract=55")
    assert raw.code == 0, raw.stderr
    assert [r.body["max_tokens"] for r in server.requests] == [55, 55] and "replies unusable" not in raw.stderr
    assert triples_of(Index.load(root), "p4") == 0
    with_fallback = cli("add", root, write_jsonl(tmp_path / "c.jsonl", docs(range(5, 6))), *llm)
    assert with_fallback.code == 0, with_fallback.stderr
    assert "replies unusable" not in with_fallback.stderr  # passage 5's reply was usable
    server.requests.clear()
    grown = tmp_path / "grown"
    assert cli("index", write_jsonl(tmp_path / "d.jsonl", docs(range(3))), "--out", grown, "--extractor", "llm",
               *llm).code == 0
    added = cli("add", grown, write_jsonl(tmp_path / "e.jsonl", docs(range(3, 5))), *llm)
    assert added.code == 0, added.stderr
    assert "extract: 1 of 2 replies unusable, spaCy rules used" in added.stderr
    assert triples_of(Index.load(grown), "p4") > 0


def test_a_bad_bound_is_refused_before_any_work(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs(range(2)))
    for argv in (("index", corpus, "--out", tmp_path / "x"), ("add", tmp_path / "missing", corpus),
                 ("bench", "--corpus", corpus, "--questions", corpus, "--out", tmp_path / "bench")):
        result = cli(*argv, "--llm-max-tokens", "everything=5")
        assert_clean_error(result, "--llm-max-tokens", "everything=5")
        assert not (tmp_path / "x").exists() and not (tmp_path / "bench").exists()


def test_bench_gives_the_bound_to_the_rows_an_llm_engine_plays(cli, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
                                                               tmp_path: Path) -> None:
    isolate_llm_env(monkeypatch, tmp_path / "cache")
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs(range(6)))
    questions = write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "question": "Where was Niels Bohr born?",
                                                   "gold": ["Niels Bohr"]}])
    with ScriptedServer(default=Reply("So the answer is: Copenhagen.")) as server:
        result = cli("bench", "--corpus", corpus, "--questions", questions, "--methods", "ircot", "--no-ablations",
                     "--out", tmp_path / "bench", "--engine", "openai", "--llm-base-url", server.base_url,
                     "--llm-model", "m", "--llm-max-tokens", "ircot=33")
    assert result.code == 0, result.stderr
    sent = [r.body["max_tokens"] for r in server.requests]
    assert sent and set(sent) == {33}
    (run,) = json.loads((tmp_path / "bench" / "results.json").read_text())["runs"]
    (row,) = run["rows"]
    assert row["options"]["llm_max_tokens"] == "ircot=33"


def test_bench_rows_take_the_bound_with_the_engine_options() -> None:
    from gearag.bench.datasets import shared_datasets
    from gearag.bench.grid import grid
    from gearag.bench.run import BenchConfig, _with_engine

    rows = grid(shared_datasets()["musique"], "wordllama", ablations=False)
    bounded = {r.label: r.options for r in _with_engine(rows, BenchConfig(Path("o"), engine="openai",
                                                                          llm_max_tokens="read=40"))}
    assert bounded["GEAR-openai (bm25)"]["llm_max_tokens"] == "read=40"
    assert bounded["IRCoT (bm25) [openai]"]["llm_max_tokens"] == "read=40"
    assert "llm_max_tokens" not in _with_engine(rows, BenchConfig(Path("o"), engine="openai"))[0].options
