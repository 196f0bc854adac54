"""Embedders: static wordllama (exact concatenation arithmetic) and all-MiniLM-L6-v2."""

from __future__ import annotations

import numpy as np
import pytest

from gearag.embed import Embedder, make_embedder
from gearag.embed.base import normalise_rows
from gearag.embed.static import StaticEmbedder
from gearag.errors import ConfigError
from gearag.registry import REGISTRY


@pytest.fixture(scope="module")
def wordllama() -> StaticEmbedder:
    embedder = make_embedder("wordllama")
    assert isinstance(embedder, StaticEmbedder)
    return embedder


def test_registry() -> None:
    assert set(REGISTRY.names("embedder")) == {"wordllama", "minilm"}
    with pytest.raises(ConfigError, match="unknown embedder 'glove'"):
        make_embedder("glove")


def test_make_embedder_is_cached(wordllama: StaticEmbedder) -> None:
    assert make_embedder("wordllama") is wordllama


def test_normalise_rows_keeps_zero_rows() -> None:
    m = np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32)
    out = normalise_rows(m)
    assert out is m
    np.testing.assert_allclose(m, [[0.6, 0.8], [0.0, 0.0]])


def test_wordllama_unit_rows(wordllama: StaticEmbedder) -> None:
    texts = ["Stephen Curry plays basketball.", "a", "Ein Satz auf Deutsch.", "x" * 5000]
    v = wordllama.encode(texts)
    assert isinstance(wordllama, Embedder)
    assert wordllama.name == "wordllama" and wordllama.dim == 256
    assert v.shape == (4, 256) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    # Deterministic and independent of batch composition.
    np.testing.assert_allclose(wordllama.encode(texts[:1])[0], v[0], atol=1e-6)


def test_wordllama_empty_text_is_a_zero_row(wordllama: StaticEmbedder) -> None:
    v = wordllama.encode(["", "hello"])
    assert not np.isnan(v).any()
    assert not v[0].any()
    assert np.linalg.norm(v[1]) == pytest.approx(1.0, abs=1e-5)
    assert wordllama.encode([]).shape == (0, 256)


def test_wordllama_is_mean_of_token_vectors(wordllama: StaticEmbedder) -> None:
    text = "The Davidson Wildcats play in North Carolina"
    (ids,) = wordllama.token_ids([text])
    sums, counts = wordllama.token_sums([text])
    assert counts[0] == len(ids) > 0
    np.testing.assert_allclose(sums[0], wordllama.vectors[ids].sum(axis=0), rtol=1e-5, atol=1e-5)
    mean = wordllama.vectors[ids].mean(axis=0)
    np.testing.assert_allclose(wordllama.encode([text])[0], mean / np.linalg.norm(mean), atol=1e-5)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Stephen Curry played", "for the Davidson Wildcats"),
        ("Dell Curry drafted by Utah Jazz", "Utah Jazz based in Salt Lake City"),
        ("Liverpool", "is in England"),
    ],
)
def test_token_sums_concatenation_is_exact(wordllama: StaticEmbedder, a: str, b: str) -> None:
    joined = f"{a} {b}"  # how graph expansion joins the triples of a path
    ids_a, ids_b, ids_ab = wordllama.token_ids([a, b, joined])
    # Precondition: the tokenizer splits the concatenation at the seam.
    assert ids_ab == ids_a + ids_b
    sums, counts = wordllama.token_sums([a, b])
    combined = sums[0] + sums[1]
    combined /= np.linalg.norm(combined)
    np.testing.assert_allclose(combined, wordllama.encode([joined])[0], atol=1e-5)
    assert counts.sum() == len(ids_ab)


def test_token_sums_add_each_texts_vectors_in_order_whatever_shares_the_call(wordllama: StaticEmbedder,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Bit for bit: a row is its text's token vectors added one after the other from zero, alone or among
    texts of other lengths, in one batch or several (so any chunking of a build gives the same vectors)."""
    import gearag.embed.static as static

    texts = [f"text number {i} with some words " * (1 + i % 3) for i in range(30)] + ["", "x"]
    full, counts = wordllama.token_sums(texts)
    for i, text in enumerate(texts):
        ids = wordllama.token_ids([text])[0]
        want = np.zeros(wordllama.dim, dtype=np.float32)
        for t in ids:
            want = want + wordllama.vectors[t]
        assert counts[i] == len(ids)
        np.testing.assert_array_equal(full[i], want)
        alone, _ = wordllama.token_sums([text])
        np.testing.assert_array_equal(alone[0], full[i])
    assert counts[-2] == 0 and not full[-2].any()
    monkeypatch.setattr(static, "TEXTS_PER_BATCH", 7)
    batched, batched_counts = wordllama.token_sums(texts)
    np.testing.assert_array_equal(batched, full)
    np.testing.assert_array_equal(batched_counts, counts)


def test_wordllama_similarity_is_sensible(wordllama: StaticEmbedder) -> None:
    q, para, other = wordllama.encode([
        "Who was the father of Stephen Curry?",
        "Dell Curry is the father of the basketball player Stephen Curry.",
        "Photosynthesis turns sunlight into chemical energy in plants.",
    ])
    assert q @ para > q @ other


@pytest.mark.neural
def test_minilm_unit_rows_and_ranking() -> None:
    minilm = make_embedder("minilm")
    assert minilm.name == "minilm" and minilm.dim == 384
    v = minilm.encode([
        "A man is playing a guitar on stage.",
        "Someone performs music with a guitar in front of an audience.",
        "The stock market fell sharply on Tuesday.",
        "",
    ])
    assert v.shape == (4, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v[:3], axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    assert minilm.encode([]).shape == (0, 384)
    # Deterministic across calls and batch sizes.
    np.testing.assert_allclose(minilm.encode(["A man is playing a guitar on stage."])[0], v[0], atol=1e-5)
