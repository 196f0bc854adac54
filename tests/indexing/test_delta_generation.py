"""``gearag add --delta``: an add written as a delta over the last full generation ranks as a full add (issue 14)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import StubExtractor, use_stub_extractor, wiki_slice
from gearag.api import Gearag
from gearag.cli import main
from gearag.config import IndexConfig
from gearag.errors import ConfigError
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents, compact, delete_documents
from gearag.indexing.union_graph import EndpointTable
from gearag.model import Passage
from gearag.store.index import Index, read_manifest
from gearag.store.shards import DELTA, GENERATIONS_DIR, generation_ref

METHODS = ("syncge", "gear", "hipporag")


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
    add_documents(tmp_path / "full", passages[100:130])  # a sharded index: its generation is the base
    shutil.copytree(tmp_path / "full", tmp_path / "delta")
    for n, batch in enumerate((passages[130:170] + namesakes, passages[170:])):
        add_documents(tmp_path / "full", batch)
        if n:  # the shards since the base are resolved again, but their tables are the previous delta's
            computed: list[int] = []

            def counted(*args, _seen=computed, _compute=EndpointTable.compute, **kwargs):
                _seen.append(1)
                return _compute(*args, **kwargs)

            monkeypatch.setattr(EndpointTable, "compute", counted)
            add_documents(tmp_path / "delta", batch, delta=True)
            monkeypatch.undo()
            assert len(computed) == 1  # the new shard's table only
        else:  # from the command line
            corpus_file = tmp_path / "batch.jsonl"
            corpus_file.write_text("".join(json.dumps({"id": p.id, "title": p.title, "text": p.text}) + "\n"
                                           for p in batch), encoding="utf-8")
            assert main(["add", str(tmp_path / "delta"), str(corpus_file), "--delta"]) == 0
            capsys.readouterr()
            assert main(["info", str(tmp_path / "delta")]) == 0
            info = json.loads(capsys.readouterr().out)
            assert info["generation"]["kind"] == "delta" and info["generation"]["shards_since_base"] == 1
        gen = _generation(tmp_path / "delta")
        assert isinstance(gen.get(DELTA), dict) and len(gen["delta"]["shards"]) == 2  # over the same base
        assert not isinstance(_generation(tmp_path / "full").get(DELTA), dict)
        Index.load(tmp_path / "delta", verify=True)  # every file listed and checksummed
        _same_results(tmp_path / "delta", tmp_path / "full", questions)
    with pytest.raises(ConfigError, match="compact"):
        from gearag.store.lance.export import export_index

        export_index(tmp_path / "delta", tmp_path / "lance")
    # A delete (and a compact) writes a full generation, from the base's state and the shards since.
    ids = [p.id for p in passages[100:110]] + [namesakes[0].id]
    for root in ("full", "delta"):
        delete_documents(tmp_path / root, ids)
    assert not isinstance(_generation(tmp_path / "delta").get(DELTA), dict)
    _same_results(tmp_path / "delta", tmp_path / "full", questions)
    compact(tmp_path / "delta")
    _same_results(tmp_path / "delta", tmp_path / "full", questions)


def test_a_delta_add_that_moves_the_hub_cut_writes_a_full_generation(tmp_path: Path, corpus) -> None:
    passages, namesakes, questions = corpus
    build_index(passages[:100], tmp_path / "full", IndexConfig.of(extractor="stub"))
    add_documents(tmp_path / "full", passages[100:130])
    shutil.copytree(tmp_path / "full", tmp_path / "delta")
    add_documents(tmp_path / "full", passages[130:] + namesakes)
    add_documents(tmp_path / "delta", passages[130:] + namesakes, delta=True)  # "it" becomes a hub here
    assert not isinstance(_generation(tmp_path / "delta").get(DELTA), dict)
    _same_results(tmp_path / "delta", tmp_path / "full", questions)


def test_a_crash_in_a_delta_add_leaves_the_index_and_the_add_resumes(tmp_path: Path, corpus, monkeypatch) -> None:
    import gearag.indexing.delta_generation as delta_generation
    from gearag.store.index import manifest_identity

    passages = corpus[0]
    config = IndexConfig.of(extractor="stub")
    build_index(passages[:60], tmp_path / "idx", replace(config, graph=replace(config.graph, max_entity_share=1.0)))
    add_documents(tmp_path / "idx", passages[60:80])
    before = manifest_identity(tmp_path / "idx")

    def crash(*args, **kwargs):
        raise RuntimeError("killed while applying the delta")

    monkeypatch.setattr(delta_generation, "apply_delta", crash)
    with pytest.raises(RuntimeError, match="killed"):
        add_documents(tmp_path / "idx", passages[80:100], delta=True)
    assert manifest_identity(tmp_path / "idx") == before  # the previous index, untouched
    Index.load(tmp_path / "idx", verify=True)
    monkeypatch.undo()
    add_documents(tmp_path / "idx", passages[80:100], delta=True)  # the shard built before the crash is reused
    assert isinstance(_generation(tmp_path / "idx").get(DELTA), dict)
    assert len(list((tmp_path / "idx" / GENERATIONS_DIR).iterdir())) == 1  # the half-written one is gone
