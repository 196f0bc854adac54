"""The trees stage end to end on a real 2Wiki slice: pools as collections, retrieval over them, GEAR on top, eval."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("umap")
pytest.importorskip("sklearn")

from conftest import wiki_slice, write_jsonl
from gearag.api import Gearag
from gearag.config import IndexConfig, TreesConfig
from gearag.errors import ConfigError
from gearag.indexing import build_index
from gearag.model import Passage
from gearag.registry import REGISTRY
from gearag.retrieve.config import POOLS
from gearag.sirerag.pool import VARIANTS
from gearag.store.index import Index

POOL_COLLECTIONS = [p for p in POOLS if p != "chunks"]


@pytest.fixture(scope="module")
def sire(tmp_path_factory: pytest.TempPathFactory) -> tuple[Gearag, list[dict], Path]:
    rows, questions = wiki_slice(60, 8)
    passages = [Passage(f"p{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    out = tmp_path_factory.mktemp("sire") / "index"
    index = build_index(passages, out, IndexConfig(trees=TreesConfig(sirerag=True, ablations=True)))
    return Gearag(index), questions, out


def test_pool_names_are_the_pool_variants() -> None:
    assert set(POOLS) == set(VARIANTS)


def test_every_pool_is_a_collection_with_each_passage_once(sire: tuple[Gearag, list[dict], Path]) -> None:
    app, _, _ = sire
    index = app.index
    n = len(index.passages)
    assert list(index.manifest["collections"]) == ["passages", "triples", *POOL_COLLECTIONS]
    passage_vectors = np.asarray(index.collection("passages").vectors)
    for name in POOL_COLLECTIONS:
        coll = index.collection(name)
        records = [coll.record(r) for r in range(len(coll))]
        assert len(records) == len(coll) == index.manifest["trees"]["pools"][name]["nodes"]
        chunks = [r for r, rec in enumerate(records) if rec["kind"] == "chunk"]
        # Every passage exactly once, at level 0, with itself as its only source, in corpus order.
        assert [coll.sources(r) for r in chunks] == [[i] for i in range(n)]
        assert all(records[r]["level"] == 0 and records[r]["tree"] == "similarity" for r in chunks)
        assert [records[r]["text"] for r in chunks] == [p.content for p in index.passages]
        np.testing.assert_allclose(np.asarray(coll.vectors)[chunks], passage_vectors, atol=1e-6)
        for r, rec in enumerate(records):
            assert set(rec) == {"text", "level", "tree", "kind"}
            src = coll.sources(r)
            assert src and src == sorted(set(src)) and all(0 <= s < n for s in src)
        kinds = {rec["kind"] for rec in records}
        _, aggs, _, singles = VARIANTS[name]
        assert ("aggregate" in kinds) == aggs and ("proposition" in kinds) == singles
    sizes = index.manifest["trees"]["pools"]
    assert sizes["raptor"]["nodes"] < sizes["sirerag"]["nodes"] < sizes["plus_propositions"]["nodes"]
    sire = index.collection("sirerag")
    summaries = [r for r in range(len(sire)) if sire.record(r)["level"] > 0]
    assert summaries, "a 60-passage slice has summary levels"
    assert len(sire.sources(summaries[-1])) > 1


@pytest.mark.parametrize("method", ["bm25", "dense", "hybrid"])
def test_base_methods_return_pool_nodes_with_sources(sire: tuple[Gearag, list[dict], Path], method: str) -> None:
    app, questions, _ = sire
    result = app.retrieve(questions[0]["question"], method, 20, pool="sirerag")
    assert 1 <= len(result.passages) <= 20
    assert all(h.collection == "sirerag" for h in result.passages)
    assert len({h.idx for h in result.passages}) == len(result.passages)
    row = json.loads(json.dumps(app.row(result, qid="q", question=questions[0]["question"])))
    ids = {p.id for p in app.index.passages}
    for entry in row["passages"]:
        assert {"id", "title", "text", "score", "collection", "level", "tree", "kind", "sources"} <= set(entry)
        assert entry["sources"] and all(s["id"] in ids for s in entry["sources"])
        if entry["kind"] == "chunk":
            assert entry["id"] == entry["sources"][0]["id"] and entry["title"]
        else:
            assert entry["id"].startswith("sirerag:") and entry["title"] == ""
    chunks = app.retrieve(questions[0]["question"], method, 5)
    assert all(h.collection == "passages" for h in chunks.passages)


def _pool_methods() -> list[str]:
    """Methods that read passages and take a pool (their config has the ``pool`` option)."""
    from gearag.options import option_specs

    return [m for m in REGISTRY.names("method") if m not in ("bm25", "dense", "hybrid")
            and "pool" in option_specs(REGISTRY.entry("method", m).config_class())]


def test_pool_option_reaches_syncge_and_gear() -> None:
    assert {"syncge", "naivege", "gear"} <= set(_pool_methods())


@pytest.mark.parametrize("name", _pool_methods())
def test_passage_methods_over_a_pool_return_unique_passages(sire: tuple[Gearag, list[dict], Path],
                                                            name: str) -> None:
    """SyncGE, NaiveGE and GEAR take the pool as their base retriever's collection: passages out."""
    app, questions, _ = sire
    for k in (1, 5):
        result = app.retrieve(questions[1]["question"], name, k, pool="sirerag")
        rows = [h.idx for h in result.passages]
        assert 1 <= len(rows) <= k and len(set(rows)) == len(rows)
        assert all(h.collection == "passages" for h in result.passages)
        json.dumps(app.row(result, qid="q"))


def test_pool_base_retriever_maps_nodes_to_sources_in_rank_order(sire: tuple[Gearag, list[dict], Path]) -> None:
    from gearag.retrieve import make_retriever
    from gearag.retrieve.config import RetrieverConfig
    from gearag.retrieve.pool import base_retriever

    app, questions, _ = sire
    config = RetrieverConfig(pool="sirerag")
    q = questions[2]["question"]
    nodes = make_retriever(app.index, "dense", "sirerag", config).retrieve(q, 200)
    hits = base_retriever(app.index, "dense", config).retrieve(q, 15)
    coll = app.index.collection("sirerag")
    expected: list[int] = []
    for node in nodes:
        for row in coll.sources(node.idx):
            if row not in expected:
                expected.append(row)
    assert len(hits) == 15
    # The same passages as node-by-node expansion; within a node the order may follow the passage ranking.
    first_node_of = {}
    for rank, node in enumerate(nodes):
        for row in coll.sources(node.idx):
            first_node_of.setdefault(row, rank)
    ranks = [first_node_of[h.idx] for h in hits]
    assert ranks == sorted(ranks) and {h.idx for h in hits} <= set(expected)


def test_missing_pool_is_a_clear_error(tmp_path: Path) -> None:
    rows, _ = wiki_slice(20, 0)
    passages = [Passage(f"p{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    index = build_index(passages, tmp_path / "plain", IndexConfig(trees=TreesConfig(raptor=True)))
    assert "raptor" in index.collections and "sirerag" not in index.collections
    app = Gearag(Index.load(tmp_path / "plain"))
    with pytest.raises(ConfigError, match=r"no 'sirerag' pool in this index .*--sirerag"):
        app.retrieve("Who?", "dense", 5, pool="sirerag")
    with pytest.raises(ConfigError, match="unknown value 'trees'"):
        app.retrieve("Who?", "dense", 5, pool="trees")
    assert app.retrieve("Who?", "bm25", 5, pool="raptor").passages


def test_cli_retrieve_pool_and_eval_answer_recall(sire: tuple[Gearag, list[dict], Path], cli,
                                                  tmp_path: Path) -> None:
    app, questions, out = sire
    qfile = tmp_path / "questions.json"
    qfile.write_text(json.dumps(questions), encoding="utf-8")
    corpus = write_jsonl(tmp_path / "corpus.jsonl",
                         [{"id": p.id, "title": p.title, "text": p.text} for p in app.index.passages])
    run = tmp_path / "run.jsonl"
    res = cli("retrieve", out, qfile, "--pool", "sirerag", "--method", "dense", "--top-k", "20", "--out", run)
    assert res.code == 0, res.stderr
    rows = [json.loads(line) for line in run.read_text().splitlines()]
    assert len(rows) == len(questions) and all(len(r["passages"]) == 20 for r in rows)
    assert all("sources" in e and "level" in e and "tree" in e for r in rows for e in r["passages"])
    report = tmp_path / "report.json"
    res = cli("eval", qfile, run, "--k", "5,20", "--corpus", corpus, "--json", report)
    assert res.code == 0, res.stderr
    assert "AR@5" in res.stdout and "AR@20" in res.stdout and "via sources" in " ".join(res.stderr.split())
    data = json.loads(report.read_text())
    assert set(data["answer_recall"]) == {"AR@5", "AR@20"}
    assert data["answer_recall"]["AR@20"] >= data["answer_recall"]["AR@5"]
    assert data["recall"]["R@20"] >= data["recall"]["R@5"] > 0


@pytest.mark.parametrize("option", [("--engine", "openai"), ("--sirerag-pool-aggregates", "cross-passage"),
                                    ("--sirerag-aggregate-text", "facts")])
def test_cli_index_rejects_tree_options_without_trees(cli, tmp_path: Path, option: tuple[str, str]) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"title": "A", "text": "B is C."}])
    res = cli("index", corpus, "--out", tmp_path / "i", *option)
    assert res.code == 2 and "apply only with --sirerag" in res.stderr


def test_pools_share_one_copy_of_each_node(sire: tuple[Gearag, list[dict], Path]) -> None:
    """Every pool selects its rows from one node table: the leaves (and every shared node) are stored once."""
    app, _, out = sire
    index = app.index
    specs = {name: index.collection(name).spec for name in POOL_COLLECTIONS}
    assert len({(s.vectors, s.records, json.dumps(s.sources)) for s in specs.values()}) == 1
    assert len({s.bm25 for s in specs.values()}) == len(specs)  # BM25 stays per pool
    table = np.load(out / specs["sirerag"].vectors)
    # plus_propositions holds every kind of node, so the table is exactly its rows.
    assert len(table) == index.manifest["trees"]["pools"]["plus_propositions"]["nodes"]
    records = [json.loads(line) for line in (out / specs["sirerag"].records).read_text().splitlines()]
    assert len(records) == len(table)
    assert sum(r["kind"] == "chunk" for r in records) == len(index.passages)
    assert not list((out / "vectors").glob("raptor*.npy")) and not list((out / "pools").glob("sirerag*.jsonl"))
    for name in POOL_COLLECTIONS:
        coll = index.collection(name)
        select = coll.selection()
        rows = np.arange(len(table)) if select is None else select
        assert len(rows) == len(coll) == len(set(rows.tolist()))
        np.testing.assert_array_equal(np.asarray(coll.vectors), table[rows])
        assert [coll.record(r) for r in range(len(coll))] == [records[int(x)] for x in rows]


def test_aggregates_are_titled_by_default(sire: tuple[Gearag, list[dict], Path]) -> None:
    """Each block of an aggregate's text opens with the title of one of the passages the aggregate covers."""
    app, _, _ = sire
    index = app.index
    assert index.manifest["trees"]["aggregate_text"] == "titled"
    coll = index.collection("sirerag")
    rows = [r for r in range(len(coll)) if coll.record(r)["kind"] == "aggregate"]
    assert rows
    for r in rows:
        titles = {index.passages[int(s)].title for s in coll.sources(r)}
        blocks = coll.record(r)["text"].split("\n\n")
        assert {b.split("\n", 1)[0] for b in blocks} <= titles
        assert all(len(b.split("\n")) >= 2 for b in blocks)
