"""The BM25 score matrix built from flat token ids in pieces is bm25s's own, byte for byte."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from conftest import wiki_slice
from gearag.retrieve import bm25_matrix
from gearag.retrieve.bm25 import _sorted_token_ids, _sorted_vocabulary, build_bm25, save_bm25
from gearag.tokenizer import stemmer as _stemmer


def bm25s_model(texts: list[str], k1: float, b: float) -> object:
    """What bm25s builds from the whole corpus's token lists (the reference)."""
    import bm25s

    model = bm25s.BM25(k1=k1, b=b)
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer(), show_progress=False)
    model.index(_sorted_vocabulary(tokens), show_progress=False)
    return model


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture(scope="module")
def texts() -> list[str]:
    rows, _ = wiki_slice(60, 0)
    rng = random.Random(3)
    words = [w for r in rows for w in r["text"].split()]
    short = [" ".join(rng.choice(words) for _ in range(rng.randrange(1, 9))) for _ in range(300)]
    # repeated words (term counts > 1), documents with no terms, and one much longer than a piece
    return short + [r["text"] for r in rows] + ["the of", "", "war war war peace war", " ".join(words[:400])]


@pytest.mark.parametrize("chunk_tokens", [1, 7, 100, 10**9])
@pytest.mark.parametrize("k1,b", [(1.5, 0.75), (1.2, 0.3)])
def test_pieces_give_bm25s_files(texts: list[str], tmp_path: Path, chunk_tokens: int, k1: float, b: float) -> None:
    import bm25s

    save_bm25(bm25s_model(texts, k1, b), tmp_path / "bm25s")
    terms, ids, indptr = _sorted_token_ids(texts, 1000)
    model = bm25s.BM25(k1=k1, b=b)
    bm25_matrix.index_flat(model, terms, ids, indptr, chunk_tokens=chunk_tokens)
    save_bm25(model, tmp_path / "flat")
    want, got = files(tmp_path / "bm25s"), files(tmp_path / "flat")
    assert set(want) == set(got)
    assert [name for name in want if want[name] != got[name]] == []
    query = [t for t in bm25s.tokenize(["war peace river"], stopwords="en", stemmer=_stemmer(),
                                       return_ids=False, show_progress=False)[0]]
    assert np.array_equal(model.get_scores(query), bm25s_model(texts, k1, b).get_scores(query))


def test_build_bm25_uses_pieces(texts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save_bm25(bm25s_model(texts, 1.5, 0.75), tmp_path / "bm25s")
    monkeypatch.setattr(bm25_matrix, "CHUNK_TOKENS", 13)
    seen: list[tuple[int, int]] = []
    pieces = bm25_matrix._pieces
    monkeypatch.setattr(bm25_matrix, "_pieces", lambda *a: (seen.append(p) or p for p in pieces(*a)))
    save_bm25(build_bm25(texts, chunk=50), tmp_path / "built")
    assert len(seen) > 100  # really cut into pieces (two passes)
    assert files(tmp_path / "bm25s") == files(tmp_path / "built")


def test_other_methods_are_refused() -> None:
    import bm25s

    with pytest.raises(ValueError, match="lucene"):
        bm25_matrix.score_matrix(bm25s.BM25(method="bm25+"), np.zeros(1, np.int32), np.array([0, 1]), 1)
