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
    """``n`` leaves in ``groups`` tight groups, the groups in 6 well-separated families (a two-level hierarchy)."""
    rng = np.random.default_rng(7)
    families = rng.normal(size=(6, dim)) * 4
    centres = families[np.arange(groups) % 6] + rng.normal(size=(groups, dim))
    emb = centres[np.arange(n) % groups] + 0.05 * rng.normal(size=(n, dim))
    emb = (emb / np.linalg.norm(emb, axis=1, keepdims=True)).astype(np.float32)
    return [f"leaf{i} group{i % groups}" for i in range(n)], emb, [(i,) for i in range(n)]


def structured(leaf_emb: np.ndarray):
    """An embedder for the summaries of :class:`Summariser`: the mean of the leaves a summary names.

    A level-1 summary names its cluster's leaves, so it sits at its group's centre; a level-2 summary
    names one leaf per child, so it sits in its family. The hierarchy of :func:`leaves` thus carries
    up the tree, and a second summary level follows from the data, not from a float-level outcome.
    """
    def encode_summaries(texts: Sequence[str]) -> np.ndarray:
        rows = [leaf_emb[[int(w[4:]) for w in t.split() if w.startswith("leaf")]].mean(axis=0) for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), leaf_emb.shape[1])
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    return encode_summaries


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
    embed = structured(emb)
    cfg = TreeConfig(levels=4, min_nodes=3)
    reference = build_tree(SIMILARITY, texts, emb, sources, encode=embed, summariser=Summariser(), config=cfg)
    levels_built = int(reference.levels.max())
    assert levels_built >= 2, "groups in families give at least two summary levels"
    full = list(counted)
    counted.clear()

    store = LevelStore(tmp_path / "levels")
    with pytest.raises(InjectedError):  # level 1 is clustered and summarised; level 2's summaries fail
        build_tree(SIMILARITY, texts, emb, sources, encode=embed, summariser=Summariser(fail_on=2), config=cfg,
                   store=store)
    assert counted == full[:2] and store.writes == 1
    counted.clear()

    again = build_tree(SIMILARITY, texts, emb, sources, encode=embed, summariser=Summariser(), config=cfg,
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
    build_tree(SIMILARITY, texts, emb, sources, encode=embed, summariser=Summariser(), config=cfg, store=store)
    assert counted == []
    other = TreeConfig(levels=4, min_nodes=3, max_level_ratio=0.95)
    build_tree(SIMILARITY, texts, emb, sources, encode=embed, summariser=Summariser(), config=other, store=store)
    assert counted == full
    counted.clear()
    build_tree(SIMILARITY, texts, emb, sources, encode=embed, summariser=Summariser(), config=cfg, store=store,
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
    """build_index --sirerag dies after the similarity tree's first level; the rerun takes that level from its
    checkpoint, clusters everything else once, and ends with the index an uninterrupted build makes.

    Nothing here depends on how many levels the trees get (that is the data's and the clustering's
    business): the rerun is compared with an uninterrupted build of the same passages.
    """
    rows, _ = wiki_slice(60, 0)
    passages = [Passage(f"p{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    config = IndexConfig(trees=TreesConfig(sirerag=True))
    reference = build_index(passages, tmp_path / "reference", config, extractor=StubExtractor())
    full = list(counted)  # the sizes of every clustering of an uninterrupted build, in order
    assert full[0] == len(passages) and len(full) >= 2, "the leaves and at least one more set are clustered"
    counted.clear()

    out = tmp_path / "index"
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
    assert counted == full[:1]  # the similarity tree's leaf level was clustered, then the build died
    assert len(list((work_dir_for(out) / "sirerag-levels").glob("*.npz"))) == 1
    monkeypatch.setattr(tree_mod, "cluster", real)
    counted.clear()
    index = build_index(passages, out, config, extractor=StubExtractor())
    assert counted == full[1:], "the rerun must redo exactly what the interrupted build had not finished"
    assert index.manifest["trees"]["levels_resumed"] == 1
    assert not work_dir_for(out).exists()

    def trees(manifest: dict) -> dict:
        return {k: v for k, v in manifest["trees"].items() if k not in ("seconds", "levels_resumed")}

    assert trees(index.manifest) == trees(reference.manifest)
    assert index.manifest["trees"]["similarity_levels"]["1"] > 0
    for name in ("raptor", "sirerag"):
        got, want = index.collection(name), reference.collection(name)
        assert len(got) == len(want)
        assert [got.record(r) for r in range(len(got))] == [want.record(r) for r in range(len(want))]
        assert [got.sources(r) for r in range(len(got))] == [want.sources(r) for r in range(len(want))]
        np.testing.assert_array_equal(np.asarray(got.vectors), np.asarray(want.vectors))
