"""``gearag add``: an add written as a delta over the last full generation ranks as a full add, and the bound
decides when an add writes a full generation instead (docs/delta.md)."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import StubExtractor, use_stub_extractor, wiki_slice
from gearag.api import Gearag
from gearag.cli import main
from gearag.config import IndexConfig
from gearag.derive.endpoints import EndpointTable
from gearag.errors import ConfigError
from gearag.graph.prepared import stored_prepared
from gearag.indexing import build_index
from gearag.indexing.delta_generation import DeltaConfig
from gearag.indexing.incremental import add_documents, compact, delete_documents
from gearag.model import Passage
from gearag.store.index import Index, read_manifest
from gearag.store.shards import DELTA, GENERATIONS_DIR, generation_ref

METHODS = ("syncge", "gear", "hipporag")
DELTA_ADD, FULL_ADD = DeltaConfig(write="delta"), DeltaConfig(write="full")


def _generation(root: Path) -> dict:
    name, _ = generation_ref(root, read_manifest(root))
    return read_manifest(root / GENERATIONS_DIR / name)


def _same_results(a: Path, b: Path, questions: list[str]) -> None:
    """Every graph method returns the same passages (by id) over both indices."""
    ga, gb = Gearag.open(a), Gearag.open(b)
    for method in METHODS:
        for q in questions:
            ra, rb = ga.retrieve(q, method, 10), gb.retrieve(q, method, 10)
            ids_a = [ga.index.passages[h.idx].id for h in ra.passages]
            ids_b = [gb.index.passages[h.idx].id for h in rb.passages]
            assert ids_a == ids_b, (method, q)


@pytest.fixture(scope="module")
def corpus():
    use_stub_extractor(StubExtractor())
    rows, questions = wiki_slice(220, 10)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    namesakes = [Passage(f"n{i}", f"{p.title} (film)", f"{p.title} is a film. {p.text[:200]}")
                 for i, p in enumerate(passages[:140:10])]
    return passages, namesakes, [q["question"] for q in questions]


def test_delta_adds_rank_as_full_adds_and_a_delete_writes_a_full_generation(tmp_path: Path, corpus,
                                                                            monkeypatch, capsys) -> None:
    passages, namesakes, questions = corpus
    config = IndexConfig.of(extractor="stub")
    config = replace(config, graph=replace(config.graph, max_entity_share=1.0))  # no hub cut to move at this size
    build_index(passages[:100], tmp_path / "full", config)
    add_documents(tmp_path / "full", passages[100:130], delta=FULL_ADD)  # a sharded index: its generation is the base
    shutil.copytree(tmp_path / "full", tmp_path / "delta")
    for n, batch in enumerate((passages[130:170] + namesakes, passages[170:])):
        add_documents(tmp_path / "full", batch, delta=FULL_ADD)
        if n:  # the shards since the base are resolved again, but their tables are the previous delta's
            computed: list[int] = []

            def counted(*args, _seen=computed, _compute=EndpointTable.compute, **kwargs):
                _seen.append(1)
                return _compute(*args, **kwargs)

            monkeypatch.setattr(EndpointTable, "compute", counted)
            add_documents(tmp_path / "delta", batch, delta=DELTA_ADD)
            monkeypatch.undo()
            assert len(computed) == 2  # the new shard's only: its own triple graph's, then the generation's
        else:  # from the command line
            corpus_file = tmp_path / "batch.jsonl"
            corpus_file.write_text("".join(json.dumps({"id": p.id, "title": p.title, "text": p.text}) + "\n"
                                           for p in batch), encoding="utf-8")
            assert main(["add", str(tmp_path / "delta"), str(corpus_file), "--generation", "delta"]) == 0
            capsys.readouterr()
            assert main(["info", str(tmp_path / "delta")]) == 0
            info = json.loads(capsys.readouterr().out)
            assert info["generation"]["kind"] == "delta" and info["generation"]["shards_since_base"] == 1
        gen = _generation(tmp_path / "delta")
        assert isinstance(gen.get(DELTA), dict) and len(gen["delta"]["shards"]) == 2  # over the same base
        assert not isinstance(_generation(tmp_path / "full").get(DELTA), dict)
        Index.load(tmp_path / "delta", verify=True)  # every file listed and checksummed
        _same_results(tmp_path / "delta", tmp_path / "full", questions)
    # Other settings: the delta's stored sources weighed or joined otherwise, as the full add's graph prepared
    # anew (a weight of 0 drops edges; the entity-only graph; NER mentions off, of which there are none).
    from gearag.derive.graph_for import passage_graph_for
    from gearag.graph.passage_graph import PassageGraphConfig
    from gearag.graph.scaled import Scaled, source_degrees
    from oracles import index_graph_arrays
    from prepared_oracle import graph_of, stored_graph_arrays

    delta_index, full_index = Index.load(tmp_path / "delta"), Index.load(tmp_path / "full")
    layered = stored_prepared(delta_index).columns  # a base's rows and a delta's, counted as a push reads them
    assert isinstance(layered, Scaled) and not layered.layout.plain_layout
    np.testing.assert_array_equal(source_degrees(layered), layered.degree)
    for other in (PassageGraphConfig(about_weight=1.5, backlink_weight=0.5), PassageGraphConfig(about_weight=0.0),
                  PassageGraphConfig(backlink_weight=0.0, ner_mentions=False), PassageGraphConfig(passage_nodes=False)):
        derived = passage_graph_for(delta_index, other)
        # Nothing derived from the corpus: the delta's stored sources, weighed or joined otherwise.
        assert stored_graph_arrays(delta_index) is None and "derived_prepared" not in delta_index._cache
        fresh = graph_of(index_graph_arrays(full_index), other)
        for q in questions:
            assert [delta_index.passages[r].id for r in derived.rank(q, k=10)] == \
                [full_index.passages[r].id for r in fresh.rank(q, k=10)], (other, q)
    # A delete (and a compact) writes a full generation, from the base's state and the shards since.
    ids = [p.id for p in passages[100:110]] + [namesakes[0].id]
    for root in ("full", "delta"):
        delete_documents(tmp_path / root, ids)
    assert not isinstance(_generation(tmp_path / "delta").get(DELTA), dict)
    _same_results(tmp_path / "delta", tmp_path / "full", questions)
    compact(tmp_path / "delta")
    _same_results(tmp_path / "delta", tmp_path / "full", questions)


def test_auto_writes_deltas_within_the_bound_and_a_full_generation_past_it(tmp_path: Path, corpus,
                                                                          capsys) -> None:
    passages, _, questions = corpus
    config = IndexConfig.of(extractor="stub")
    config = replace(config, graph=replace(config.graph, max_entity_share=1.0))
    for root in ("auto", "full"):
        build_index(passages[:120], tmp_path / root, config)  # a plain index: its first add converts it
    policy = DeltaConfig(max_share=0.25)  # deltas while at most 30 passages were added since the base
    kinds = []
    for batch in (passages[120:135], passages[135:150], passages[150:160], passages[160:175]):
        add_documents(tmp_path / "auto", batch, delta=policy)
        add_documents(tmp_path / "full", batch, delta=FULL_ADD)
        gen = _generation(tmp_path / "auto")
        kinds.append((gen[DELTA]["shards"], len(gen["shards"])) if isinstance(gen.get(DELTA), dict) else "full")
    # 15 passages: a delta over the converted index's generation; 30 too; 40 is past the bound: a full
    # generation of 160 passages, the next base; then a delta over it.
    first = _generation(tmp_path / "full")["shards"]
    assert kinds == [(first[:1], 2), (first[:1], 3), "full", (first[:4], 5)]
    _same_results(tmp_path / "auto", tmp_path / "full", questions)
    # From the command line: a bad policy is refused before any work; --delta-share 0 always writes in full.
    corpus_file = tmp_path / "batch.jsonl"
    corpus_file.write_text("".join(json.dumps({"id": p.id, "title": p.title, "text": p.text}) + "\n"
                                   for p in passages[175:180]), encoding="utf-8")
    before = read_manifest(tmp_path / "auto")
    assert main(["add", str(tmp_path / "auto"), str(corpus_file), "--generation", "sometimes"]) == 2
    assert "--generation" in capsys.readouterr().err
    assert read_manifest(tmp_path / "auto") == before
    assert main(["add", str(tmp_path / "auto"), str(corpus_file), "--delta-share", "0"]) == 0
    assert "its generation is a full one, because 20 passages were added since the last full generation, " \
           "more than --delta-share 0 of its 160" in " ".join(capsys.readouterr().err.split())
    assert not isinstance(_generation(tmp_path / "auto").get(DELTA), dict)
    # The shards since the base are bounded too: many small adds stop paying for every shard at the bound.
    kinds = []
    for start in (180, 182, 184):
        add_documents(tmp_path / "auto", passages[start : start + 2], delta=DeltaConfig(max_share=1.0, max_shards=2))
        gen = _generation(tmp_path / "auto")
        kinds.append(len(gen[DELTA]["shards"]) if isinstance(gen.get(DELTA), dict) else "full")
    base_shards = len(first) + 1  # the four adds above, then the command line's full generation
    assert kinds == [base_shards, base_shards, "full"]
    before = read_manifest(tmp_path / "auto")
    assert main(["add", str(tmp_path / "auto"), str(corpus_file), "--delta-shards", "0"]) == 2
    assert "--delta-shards" in capsys.readouterr().err
    assert read_manifest(tmp_path / "auto") == before
    with pytest.raises(ConfigError, match="--generation"):
        DeltaConfig(write="sometimes")
    with pytest.raises(ConfigError, match="--delta-share"):
        DeltaConfig(max_share=-0.1)
    with pytest.raises(ConfigError, match="--delta-shards"):
        DeltaConfig(max_shards=0)


def test_a_delta_add_that_moves_the_hub_cut_writes_a_full_generation(tmp_path: Path, corpus, capsys,
                                                                     monkeypatch) -> None:
    import gearag.indexing.incremental as incremental
    from gearag.derive import delta_resolve
    from gearag.derive.delta_resolve import resolve_delta

    passages, namesakes, questions = corpus
    build_index(passages[:100], tmp_path / "full", IndexConfig.of(extractor="stub"))
    add_documents(tmp_path / "full", passages[100:130], delta=FULL_ADD)
    shutil.copytree(tmp_path / "full", tmp_path / "delta")
    add_documents(tmp_path / "full", passages[130:] + namesakes, delta=FULL_ADD)
    corpus_file = tmp_path / "batch.jsonl"  # "it" becomes a hub here
    corpus_file.write_text("".join(json.dumps({"id": p.id, "title": p.title, "text": p.text}) + "\n"
                                   for p in passages[130:] + namesakes), encoding="utf-8")
    capsys.readouterr()

    def from_nothing(*args, **kwargs):
        raise AssertionError("the add's delta is written whole, not the union derived from nothing")

    resolved = []

    def resolving(*args, **kwargs):
        resolved.append(True)
        return resolve_delta(*args, **kwargs)

    monkeypatch.setattr(incremental, "write_generation", from_nothing)
    monkeypatch.setattr(delta_resolve, "resolve_delta", resolving)
    assert main(["add", str(tmp_path / "delta"), str(corpus_file), "--generation", "delta"]) == 0
    monkeypatch.undo()
    assert not isinstance(_generation(tmp_path / "delta").get(DELTA), dict)
    # The add says why it wrote a full generation.
    said = " ".join(capsys.readouterr().err.split())
    assert re.search(r"full one, because the add moved the hub cut \(--max-entity-share 0\.005\) over [1-9]\d* of "
                     r"the base's entity names", said)
    assert _generation(tmp_path / "delta")["whole_because"].startswith("the add moved the hub cut")
    assert resolved == [True]  # the delta declined before resolving: the add resolved once, written whole
    _same_results(tmp_path / "delta", tmp_path / "full", questions)


def test_a_crash_in_a_delta_add_leaves_the_index_and_the_add_resumes(tmp_path: Path, corpus, monkeypatch) -> None:
    import gearag.indexing.delta_generation as delta_generation
    from gearag.store.index import manifest_identity

    passages = corpus[0]
    config = IndexConfig.of(extractor="stub")
    build_index(passages[:60], tmp_path / "idx", replace(config, graph=replace(config.graph, max_entity_share=1.0)))
    add_documents(tmp_path / "idx", passages[60:80], delta=FULL_ADD)
    before = manifest_identity(tmp_path / "idx")

    def crash(*args, **kwargs):
        raise RuntimeError("killed while applying the delta")

    monkeypatch.setattr(delta_generation, "apply_delta", crash)
    with pytest.raises(RuntimeError, match="killed"):
        add_documents(tmp_path / "idx", passages[80:100], delta=DELTA_ADD)
    assert manifest_identity(tmp_path / "idx") == before  # the previous index, untouched
    Index.load(tmp_path / "idx", verify=True)
    monkeypatch.undo()
    add_documents(tmp_path / "idx", passages[80:100], delta=DELTA_ADD)  # the shard of the crashed add is reused
    assert isinstance(_generation(tmp_path / "idx").get(DELTA), dict)
    assert len(list((tmp_path / "idx" / GENERATIONS_DIR).iterdir())) == 1  # the half-written one is gone
