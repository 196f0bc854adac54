"""An interrupted tree build resumes at the level it reached: finished levels are not clustered again."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("umap")
pytest.importorskip("sklearn")

import gearag.sirerag.tree as tree_mod
from conftest import StubExtractor, wiki_slice
from gearag.config import IndexConfig, TreesConfig
from gearag.indexing import build_index, work_dir_for
from gearag.model import Passage
from gearag.sirerag.levels import LevelStore
from gearag.sirerag.tree import SIMILARITY, TreeConfig, build_tree


class InjectedError(RuntimeError):
    pass


def encode(texts: Sequence[str]) -> np.ndarray:
    """Deterministic unit vectors from the texts' hashes (stands in for the embedder)."""
    rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[:16].astype(np.float32) - 127.5
            for t in texts]
    out = np.asarray(rows, dtype=np.float32).reshape(len(texts), 16)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


class Summariser:
    """Joins the first word of each child; raises on call ``fail_on`` (1-based) when set."""

    key = "test-summariser"

    def __init__(self, fail_on: int | None = None) -> None:
        self.calls = 0
        self.fail_on = fail_on

    def summarise(self, clusters: list[list[int]], texts: Sequence[str], embeddings: np.ndarray) -> list[str]:
        self.calls += 1
        if self.fail_on is not None and self.calls == self.fail_on:
            raise InjectedError(f"summariser stopped at call {self.calls}")
        return [" ".join(texts[r].split()[0] for r in c) + f" /{len(c)}" for c in clusters]


def leaves(n: int = 360, groups: int = 36, dim: int = 16) -> tuple[list[str], np.ndarray, list[tuple[int]]]:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(groups, dim))
    emb = centres[np.arange(n) % groups] + 0.05 * rng.normal(size=(n, dim))
    emb = (emb / np.linalg.norm(emb, axis=1, keepdims=True)).astype(np.float32)
    return [f"leaf{i} group{i % groups}" for i in range(n)], emb, [(i,) for i in range(n)]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Sizes of the inputs the tree builder clusters, one per call."""
    sizes: list[int] = []
    real = tree_mod.cluster

    def spy(embeddings, tokens, config, stats=None):
        sizes.append(len(embeddings))
        return real(embeddings, tokens, config, stats)

    monkeypatch.setattr(tree_mod, "cluster", spy)
    return sizes


def test_a_failed_build_resumes_without_clustering_finished_levels(tmp_path: Path, counted: list[int]) -> None:
    texts, emb, sources = leaves()
    cfg = TreeConfig(levels=4, min_nodes=3)
    reference = build_tree(SIMILARITY, texts, emb, sources, encode=encode, summariser=Summariser(), config=cfg)
    levels_built = int(reference.levels.max())
    assert levels_built >= 2, "the synthetic corpus must give at least two summary levels"
    full = list(counted)
    counted.clear()

    store = LevelStore(tmp_path / "levels")
    with pytest.raises(InjectedError):  # level 1 is clustered and summarised; level 2's summaries fail
        build_tree(SIMILARITY, texts, emb, sources, encode=encode, summariser=Summariser(fail_on=2), config=cfg,
                   store=store)
    assert counted == full[:2] and store.writes == 1
    counted.clear()

    again = build_tree(SIMILARITY, texts, emb, sources, encode=encode, summariser=Summariser(), config=cfg,
                       store=store)
    assert counted == full[1:], "a finished level was clustered again"
    assert store.hits == 1
    assert again.texts == reference.texts and again.children == reference.children
    assert again.sources == reference.sources
    np.testing.assert_array_equal(again.levels, reference.levels)
    np.testing.assert_allclose(again.embeddings, reference.embeddings, atol=1e-6)
    assert again.log[0].get("resumed") == 1.0

    # Every level is now stored: a third build clusters nothing; other settings reuse nothing.
    counted.clear()
    build_tree(SIMILARITY, texts, emb, sources, encode=encode, summariser=Summariser(), config=cfg, store=store)
    assert counted == []
    other = TreeConfig(levels=4, min_nodes=3, max_level_ratio=0.95)
    build_tree(SIMILARITY, texts, emb, sources, encode=encode, summariser=Summariser(), config=other, store=store)
    assert counted == full
    counted.clear()
    build_tree(SIMILARITY, texts, emb, sources, encode=encode, summariser=Summariser(), config=cfg, store=store,
               salt="another embedder")
    assert counted == full


def test_damaged_level_file_is_rebuilt(tmp_path: Path, counted: list[int]) -> None:
    texts, emb, sources = leaves(120, 12)
    store = LevelStore(tmp_path / "levels")
    cfg = TreeConfig(levels=2, min_nodes=3)
    first = build_tree(SIMILARITY, texts, emb, sources, encode=encode, summariser=Summariser(), config=cfg,
                       store=store)
    (path,) = (tmp_path / "levels").glob("*.npz")
    path.write_bytes(b"not an npz")
    counted.clear()
    again = build_tree(SIMILARITY, texts, emb, sources, encode=encode, summariser=Summariser(), config=cfg,
                       store=store)
    assert len(counted) == 1 and again.texts == first.texts


def test_interrupted_sirerag_index_build_resumes_at_the_level_it_reached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: list[int]) -> None:
    """build_index --sirerag fails after the similarity tree's first level; the rerun does not redo it."""
    rows, _ = wiki_slice(60, 0)
    passages = [Passage(f"p{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    out = tmp_path / "index"
    config = IndexConfig(trees=TreesConfig(sirerag=True))
    real = tree_mod.cluster  # the spy
    state = {"calls": 0}

    def failing(embeddings, tokens, cfg, stats=None):
        state["calls"] += 1
        if state["calls"] == 2:
            raise InjectedError("killed between levels")
        return real(embeddings, tokens, cfg, stats)

    monkeypatch.setattr(tree_mod, "cluster", failing)
    with pytest.raises(InjectedError):
        build_index(passages, out, config, extractor=StubExtractor())
    assert counted == [len(passages)]  # the similarity tree's leaf level was clustered, then the build died
    assert len(list((work_dir_for(out) / "sirerag-levels").glob("*.npz"))) == 1
    monkeypatch.setattr(tree_mod, "cluster", real)
    counted.clear()
    index = build_index(passages, out, config, extractor=StubExtractor())
    # This slice's similarity tree has one summary level (the next would hold <= 11 nodes), so the rerun
    # takes it from the checkpoint and its first clustering is the relatedness tree's leaves (the aggregates).
    assert set(index.manifest["trees"]["similarity_levels"]) == {"0", "1"}
    assert counted[0] == index.manifest["trees"]["aggregates"] != len(passages)
    assert len(passages) not in counted, "the similarity tree's first level was clustered again"
    assert index.manifest["trees"]["levels_resumed"] == 1
    assert index.manifest["trees"]["similarity_levels"]["1"] > 0
    assert not work_dir_for(out).exists()
