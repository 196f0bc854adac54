"""The build streams its large outputs (vectors to disk in chunks, BM25 tokens as arrays) and keeps the index
it always wrote: a streamed build equals, file for file, a build through the in-memory code paths."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import StubExtractor, wiki_slice
from gearag.config import IndexConfig
from gearag.indexing import build_index, write_index
from gearag.indexing.bm25 import TOKEN_FILES
from gearag.indexing.embed import EmbedStage, embed_to_file, load_or_embed
from gearag.indexing.executor import LocalExecutor, embed_texts
from gearag.indexing.extract import ExtractStage
from gearag.indexing.graph import GraphStage
from gearag.indexing.ner import NerStage
from gearag.indexing.stage import Build, TripleColumns
from gearag.indexing.trees import TreesStage
from gearag.model import Fact, Passage
from gearag.retrieve import bm25 as bm25_module
from gearag.retrieve.bm25 import _sorted_vocabulary, build_bm25, save_bm25
from gearag.store import checksum
from gearag.tokenizer import stemmer as _stemmer


class InMemoryExecutor:
    """Runs here like the local executor, but is not one: the embed stage then takes its in-memory path
    (the whole array of each collection returned, then written with ``np.save``), as before streaming."""

    name = "local"

    def __init__(self) -> None:
        self._local = LocalExecutor()

    def extract(self, extractor: Any, passages: Sequence[Passage], *,
                description: str) -> Iterator[tuple[int, list[Fact]]]:
        return self._local.extract(extractor, passages, description=description)

    def embed(self, embedder: str, collections: Mapping[str, Sequence[str]], *, batch: int,
              description: str) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        return self._local.embed(embedder, {k: list(v) for k, v in collections.items()}, batch=batch,
                                 description=description)

    def describe(self) -> dict[str, Any]:
        return {"name": "local"}


def whole_corpus_bm25(texts: Sequence[str], k1: float, b: float) -> object:
    """BM25 as built before chunked tokenisation: every text's token lists at once, then sorted term ids."""
    import bm25s

    model = bm25s.BM25(k1=k1, b=b)
    tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=_stemmer(), show_progress=False)
    model.index(_sorted_vocabulary(tokens), show_progress=False)
    return model


class WholeCorpusBM25Stage:
    name = "bm25"

    def run(self, build: Build) -> None:
        cfg = build.config.bm25
        for name, coll in build.collections.items():
            rel = f"bm25/{name}"
            save_bm25(whole_corpus_bm25(list(coll.texts), cfg.k1, cfg.b), build.writer.path(rel))
            coll.spec = replace(coll.spec, bm25=rel)


def _files(index: Path) -> dict[str, str]:
    manifest = json.loads((index / "manifest.json").read_text())
    return {rel: meta[checksum.WRITTEN] for rel, meta in manifest["files"].items()}


def _manifest_rest(index: Path) -> dict[str, Any]:
    manifest = json.loads((index / "manifest.json").read_text())
    manifest["resolve"].pop("seconds")  # timings
    return {k: v for k, v in manifest.items() if k not in ("created", "build_seconds", "files")}


@pytest.fixture(scope="module")
def corpus() -> list[Passage]:
    rows, _ = wiki_slice(120, 0)
    return [Passage(f"w{i}", r["title"], " ".join(r["text"].split()) if i % 7 else r["text"] + "  extra   spaces")
            for i, r in enumerate(rows)]


def test_streamed_build_equals_the_in_memory_build(corpus: list[Passage], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Small chunks, so that the streamed paths really cut the collections into many pieces.
    config = IndexConfig.from_dict({"extract": {"extractor": "stub"}, "embed": {"embedder": "wordllama", "batch": 37}})
    reference = build_index(corpus, tmp_path / "reference", config, extractor=StubExtractor(),
                            executor=InMemoryExecutor(),  # type: ignore[arg-type]
                            stages=(ExtractStage(), NerStage(), GraphStage(), TreesStage(),
                                    WholeCorpusBM25Stage(), EmbedStage()))
    monkeypatch.setattr(bm25_module, "TOKENIZE_CHUNK", 53)
    # write_index (what `gearag index` runs): the same build, returning the manifest without loading the index.
    manifest = write_index(corpus, tmp_path / "streamed", config, extractor=StubExtractor())
    assert manifest == json.loads((tmp_path / "streamed" / "manifest.json").read_text())
    assert reference.manifest["counts"]["triples"] > 500
    ref_files, new_files = _files(reference.path), _files(tmp_path / "streamed")
    assert "vectors/triples.npy" in new_files and "vectors/triple_weights.npy" in new_files
    assert "bm25/triples/data.csc.index.npy" in new_files
    assert {rel for rel in ref_files if ref_files[rel] != new_files.get(rel)} == set()
    # Besides the reference's files, the build keeps the passages' and triples' BM25 token ids (for gearag add).
    assert set(new_files) - set(ref_files) == {f"tokens/{c}/{f}" for c in ("passages", "triples") for f in TOKEN_FILES}
    assert set(ref_files) <= set(new_files)
    assert _manifest_rest(reference.path) == _manifest_rest(tmp_path / "streamed")


def test_chunked_bm25_writes_the_whole_corpus_files(corpus: list[Passage], tmp_path: Path) -> None:
    texts = [p.content for p in corpus] + ["", "the of and", "Ünïcode café naïve"]
    save_bm25(whole_corpus_bm25(texts, 1.5, 0.75), tmp_path / "whole")
    save_bm25(build_bm25(texts, chunk=11), tmp_path / "chunked")
    names = sorted(p.name for p in (tmp_path / "whole").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "chunked").iterdir())
    assert [n for n in names if (tmp_path / "whole" / n).read_bytes() != (tmp_path / "chunked" / n).read_bytes()] == []


def test_embed_to_file_is_the_saved_array_and_is_reused(tmp_path: Path) -> None:
    from gearag.embed import make_embedder

    model = make_embedder("wordllama")
    texts = [f"text number {i} about Utah Jazz and Liverpool" for i in range(100)]
    vec_path, weights_path, dim = embed_to_file(tmp_path, "wordllama", model, "triples", texts, 17)
    vectors, weights = embed_texts(model, texts, "reference", 17)
    np.save(tmp_path / "ref.npy", vectors)
    assert dim == vectors.shape[1]
    assert vec_path.read_bytes() == (tmp_path / "ref.npy").read_bytes()
    assert weights_path is not None and weights is not None
    np.testing.assert_array_equal(np.load(weights_path), weights)
    # A resumed build finds the finished file (no embedder needed), and so does the trees stage's lookup.
    stamp = vec_path.stat().st_mtime_ns
    assert embed_to_file(tmp_path, "wordllama", None, "triples", texts, 17) == (vec_path, weights_path, dim)
    assert vec_path.stat().st_mtime_ns == stamp
    again, again_weights = load_or_embed(tmp_path, "wordllama", None, "triples", texts, 17)
    np.testing.assert_array_equal(again, vectors)
    assert again_weights is not None


def test_triple_columns_share_clean_strings_and_texts_are_made_on_access() -> None:
    from gearag.indexing.graph import triple_columns

    s, o = "Utah Jazz", "Salt Lake City"
    cols: TripleColumns = triple_columns([[Fact(s, "based in", o), Fact(" Utah  Jazz", "team of", "Utah")]])
    assert cols.subjects[0] is s and cols.objects[0] is o  # already clean: the same object, not a copy
    assert cols.subjects[1] == "Utah Jazz"
    texts = cols.lazy_texts()
    assert len(texts) == 2 and list(texts) == cols.texts() and texts[1:] == cols.texts()[1:]
    assert texts[0] == "Utah Jazz based in Salt Lake City"
