"""Graph expansion (GEAR §4): path scorers, the expander, NaiveGE/SyncGE and the offline reader."""

from __future__ import annotations

import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import wiki_slice
from gearag.config import IndexConfig
from gearag.embed import index_embedder
from gearag.errors import ConfigError
from gearag.expand import expansion as expansion_module
from gearag.expand import scoring
from gearag.expand.beam import Beam, BeamConfig, flatten_breadth_first
from gearag.expand.expansion import GraphExpander, triples_of_passages
from gearag.expand.reader import OfflineReader, OfflineReaderConfig
from gearag.expand.scoring import NeuralPathScorer, StaticPathScorer, make_path_scorer
from gearag.methods import make_method
from gearag.model import Fact, Passage
from gearag.retrieve import make_retriever
from gearag.retrieve.fusion import rrf
from gearag.store.index import Index
from gearag.text import normalise_entity

#: 2Wiki questions whose gold passages go into the slice (HippoRAG's 2Wiki-1000 order).
N_QUESTIONS = 6
N_PASSAGES = 190

PERFORMER_Q = "Where was the place of death of the performer of song I Can'T See Myself Leaving You?"
SPOUSE_Q = "Who is the spouse of the director of film West Of Shanghai?"


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """~200 real 2Wiki passages (incl. the gold passages of the first questions), spaCy rule triples."""
    from gearag.indexing import build_index

    rows, questions = wiki_slice(N_PASSAGES, N_QUESTIONS)
    passages = [Passage(f"w{i}", p["title"], p["text"]) for i, p in enumerate(rows)]
    out = tmp_path_factory.mktemp("wiki-expand") / "index"
    index = build_index(passages, out, IndexConfig.of(extractor="spacy"))
    assert {q["question"] for q in questions} >= {PERFORMER_Q, SPOUSE_Q}
    return SimpleNamespace(index=index, questions=questions, row={p.title: i for i, p in enumerate(passages)})


# --------------------------------------------------------------------------- path scorers


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_static_scorer_is_exact_for_concatenated_paths(tiny_index: Index) -> None:
    query = "Which team drafted the father of Stephen Curry?"
    scorer = make_path_scorer(tiny_index, query)
    assert isinstance(scorer, StaticPathScorer)
    qvec = index_embedder(tiny_index).encode([query])[0]
    cands = np.arange(len(tiny_index.triples), dtype=np.int64)
    for path in [(0,), (11,), (13, 16), (9, 13, 18)]:
        got = scorer.extend(path, cands)
        texts = [" ".join(tiny_index.triples.text(t) for t in (*path, int(c))) for c in cands]
        expected = [_cos(qvec, v) for v in index_embedder(tiny_index).encode(texts)]
        np.testing.assert_allclose(got, expected, atol=1e-5)
    start = scorer.start(cands)
    expected = [_cos(qvec, v) for v in index_embedder(tiny_index).encode(tiny_index.triples.texts())]
    np.testing.assert_allclose(start, expected, atol=1e-5)


class FakeEmbedder:
    """Deterministic unit vectors per text; records every ``encode`` call."""

    dim = 8

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    @staticmethod
    def vector(text: str) -> np.ndarray:
        rng = np.random.default_rng(zlib.crc32(text.encode()))
        v = rng.normal(size=FakeEmbedder.dim)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.vector(t) for t in texts])


def _fake_index(names: list[str], vectors: np.ndarray | None = None) -> SimpleNamespace:
    embedder = FakeEmbedder()
    if vectors is None:
        vectors = np.stack([embedder.vector(n) for n in names])
    cache: dict[str, object] = {"embedder": embedder}  # what gearag.embed.index_embedder reads
    triples = SimpleNamespace(vectors=vectors, weights=None)
    return SimpleNamespace(
        path=Path("/nonexistent/fake-index", "-".join(names)),
        collection=lambda name: triples,
        triples=SimpleNamespace(text=lambda t: names[t]),
        embedder=embedder,
        cached=lambda key, build: cache.setdefault(key, build()) if key not in cache else cache[key],
    )


@pytest.fixture
def clean_path_cache():
    cache = getattr(scoring, "_PATH_CACHE", None)  # the process-wide path-embedding LRU, if there is one
    if cache is not None:
        cache.clear()
    yield
    if cache is not None:
        cache.clear()


def test_neural_sum_mode_is_the_normalised_sum_of_unit_vectors() -> None:
    s = np.sqrt(0.5)
    vectors = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [s, s, 0]], dtype=np.float32)
    index = _fake_index(["a", "b", "c", "d"], vectors)
    q = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    scorer = NeuralPathScorer(q, index, mode="sum")
    np.testing.assert_allclose(scorer.start(np.array([0, 1, 2, 3])), [0.6, 0.8, 0.0, s * 1.4], atol=1e-6)
    got = scorer.extend((0,), np.array([1, 2, 3]))
    # [a, b]: (1, 1, 0)/√2 → 1.4/√2; [a, c]: (1, 0, 1)/√2 → 0.6/√2; [a, d]: (1+s, s, 0)/|.| .
    ad = np.array([1 + s, s, 0.0])
    expected = [1.4 / np.sqrt(2), 0.6 / np.sqrt(2), float(ad @ q) / np.linalg.norm(ad)]
    np.testing.assert_allclose(got, expected, atol=1e-6)
    # Longer paths: the sum of all three unit vectors.
    np.testing.assert_allclose(scorer.extend((0, 1), np.array([2])), [1.4 / np.sqrt(3)], atol=1e-6)
    assert index.embedder.calls == []  # sum mode never encodes


def test_neural_exact_mode_encodes_each_new_path_once(clean_path_cache: None) -> None:
    names = ["alpha fact", "beta fact", "gamma fact", "delta fact"]
    index = _fake_index(names)
    q = FakeEmbedder.vector("the question")
    scorer = NeuralPathScorer(q, index, mode="exact")
    got = scorer.extend((0,), np.array([1, 2]))
    expected = [float(FakeEmbedder.vector(f"{names[0]} {names[c]}") @ q) for c in (1, 2)]
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert index.embedder.calls == [["alpha fact beta fact", "alpha fact gamma fact"]]
    # Same paths again: served from the cache.
    np.testing.assert_allclose(scorer.extend((0,), np.array([2, 1])), expected[::-1], atol=1e-6)
    assert len(index.embedder.calls) == 1
    # One new path among known ones: only it is encoded.
    scorer.extend((0,), np.array([1, 3, 2]))
    assert index.embedder.calls[1:] == [["alpha fact delta fact"]]
    # Path embeddings are query-independent: another query's scorer reuses them.
    other = NeuralPathScorer(FakeEmbedder.vector("another question"), index, mode="exact")
    other.extend((0,), np.array([1, 2, 3]))
    assert len(index.embedder.calls) == 2


def test_neural_exact_cache_does_not_leak_between_indices(clean_path_cache: None) -> None:
    first = _fake_index(["alpha fact", "beta fact"])
    second = _fake_index(["red herring", "blue whale"])
    q = FakeEmbedder.vector("the question")
    NeuralPathScorer(q, first, mode="exact").extend((0,), np.array([1]))
    got = NeuralPathScorer(q, second, mode="exact").extend((0,), np.array([1]))
    # Same triple ids, different index: the path is "red herring blue whale", not the first index's.
    assert got[0] == pytest.approx(float(FakeEmbedder.vector("red herring blue whale") @ q), abs=1e-6)


def test_unknown_scoring_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="scoring"):
        NeuralPathScorer(np.ones(3), _fake_index(["a"]), mode="approximate")


# --------------------------------------------------------------------------- the expander


def test_expander_maps_flattened_beams_to_unique_passages_in_order(
    tiny_index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tiny index owners: 0 → passage 0, 11/13/14 → passage 1 (Dell Curry), 16/17 → passage 2 (Utah Jazz).
    beams = [Beam(2.0, (13, 16)), Beam(1.5, (11, 0)), Beam(1.0, (14, 17))]
    seen: dict[str, object] = {}

    def fake_search(initial, scorer, neighbours, config, owner=None):
        seen.update(initial=list(initial), config=config, owner=owner)
        return beams

    monkeypatch.setattr(expansion_module, "diverse_beam_search", fake_search)
    config = BeamConfig(width=3, length=2)
    result = GraphExpander(tiny_index, config).expand("question", [13, 11, 14])
    assert result.beams == beams
    assert result.triples == [13, 11, 14, 16, 0, 17]  # breadth-first: first triples, then second
    assert result.passages == [1, 2, 0]  # owners 1, 1, 1, 2, 0, 2 → unique, in order
    assert seen["initial"] == [13, 11, 14] and seen["config"] == config
    assert np.array_equal(seen["owner"], tiny_index.triples.passage)


def test_expander_with_no_initial_triples_finds_nothing(tiny_index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args, **kwargs):
        raise AssertionError("beam search must not run without initial triples")

    monkeypatch.setattr(expansion_module, "diverse_beam_search", fail)
    result = GraphExpander(tiny_index).expand("question", [])
    assert (result.beams, result.triples, result.passages) == ([], [], [])


def test_real_expansion_crosses_passages(tiny_index: Index) -> None:
    expander = GraphExpander(tiny_index, BeamConfig(width=4, length=2))
    result = expander.expand("Which team drafted the father of Stephen Curry?", [11, 13, 14])
    owner = tiny_index.triples.passage
    assert result.beams and len(result.beams) <= 4
    assert result.triples == flatten_breadth_first(result.beams)
    assert result.passages == list(dict.fromkeys(int(owner[t]) for t in result.triples))
    for beam in result.beams:
        assert beam.path[0] in (11, 13, 14)
        rows = [int(owner[t]) for t in beam.path]
        assert len(rows) == len(set(rows))  # cross-passage scope: every step is a hop
    # Dell Curry's (…, Utah) / (…, Jazz) triples reach the Utah Jazz passage.
    assert 2 in result.passages
    lines = expander.describe(result.beams)
    assert [line.count(" → ") for line in lines] == [len(b.path) - 1 for b in result.beams]


# --------------------------------------------------------------------------- NaiveGE and SyncGE


def test_naivege_starts_from_all_triples_of_the_base_passages(tiny_index: Index) -> None:
    question = "Which team drafted the father of Stephen Curry?"
    method = make_method(tiny_index, "naivege", base_k=3)
    recorded: list[list[int]] = []
    real_expand = method.expander.expand

    def spy(query, initial):
        recorded.append(list(initial))
        return real_expand(query, initial)

    method.expander.expand = spy
    result = method(question, 5)
    base_rows = [h.idx for h in make_retriever(tiny_index, "bm25", "passages").retrieve(question, 3)]
    expected = [t for row in base_rows for t in tiny_index.passage_triples(row)]
    assert recorded == [expected]
    assert triples_of_passages(tiny_index, base_rows).tolist() == expected
    expansion = real_expand(question, expected)
    fused = rrf([expansion.passages, base_rows])[:5]
    assert [h.idx for h in result.passages] == [i for i, _ in fused]
    # Reciprocal-rank sums are no score to show: the result says it is a rank, scored 1 / rank.
    assert result.score_kind == "rank"
    assert [h.score for h in result.passages] == [1 / r for r in range(1, len(fused) + 1)]


def test_syncge_with_offline_reader_is_rrf_of_expanded_and_base(wiki: SimpleNamespace) -> None:
    """Algorithm 1 as printed (``graph=beams``), then Eq. 3."""
    index = wiki.index
    method = make_method(index, "syncge", graph="beams")
    for question in (PERFORMER_Q, SPOUSE_Q):
        result = method(question, 10)
        base_rows = [h.idx for h in make_retriever(index, "bm25", "passages").retrieve(question, 10)]
        proximal = OfflineReader(index).read(question, base_rows)
        assert result.trace.proximal == [list(t.as_tuple()) for t in proximal]
        initial = [t.source for t in proximal]  # offline triples link to themselves
        expansion = GraphExpander(index, BeamConfig()).expand(question, initial)
        assert [b.path[0] for b in expansion.beams] and all(b.path[0] in initial for b in expansion.beams)
        fused = rrf([expansion.passages, base_rows])[:10]
        assert [h.idx for h in result.passages] == [i for i, _ in fused]
        assert result.score_kind == "rank"
        titles = [index.passages[p].title for p in expansion.passages[:10]]
        assert result.trace.expanded_passages == titles


def test_syncge_reaches_the_second_hop(wiki: SimpleNamespace) -> None:
    """The director's passage is outside BM25's top 10 but one hop from the film's triples."""
    index = wiki.index
    base = [index.passages[h.idx].title for h in make_retriever(index, "bm25", "passages").retrieve(SPOUSE_Q, 10)]
    assert "John Farrow" not in base
    result = make_method(index, "syncge")(SPOUSE_Q, 10)
    assert "John Farrow" in [index.passages[h.idx].title for h in result.passages]


# --------------------------------------------------------------------------- the offline reader


def _unrelated_rows(wiki: SimpleNamespace, n: int) -> list[int]:
    gold = {t for q in wiki.questions for t in q["supporting_facts"]}
    return [i for i, p in enumerate(wiki.index.passages) if p.title not in gold][:n]


def test_offline_reader_returns_index_triples_of_the_given_passages(wiki: SimpleNamespace) -> None:
    index = wiki.index
    rows = [*_unrelated_rows(wiki, 3), wiki.row["I Can't See Myself Leaving You"], wiki.row["Aretha Franklin"]]
    for max_triples in (3, 10):
        found = OfflineReader(index, OfflineReaderConfig(max_triples=max_triples)).read(PERFORMER_Q, rows)
        assert 0 < len(found) <= max_triples
        sources = [t.source for t in found]
        assert all(s is not None for s in sources)
        assert len(set(sources)) == len(sources)
        for t in found:
            assert int(index.triples.passage[t.source]) in rows
            assert index.triples[t.source].as_tuple() == t.as_tuple()


def test_offline_reader_caps_triples_per_passage(wiki: SimpleNamespace) -> None:
    index = wiki.index
    rows = [wiki.row["West of Shanghai"], wiki.row["John Farrow"], *_unrelated_rows(wiki, 2)]
    reader = OfflineReader(index, OfflineReaderConfig(max_triples=50, per_passage=2))
    found = reader.read(SPOUSE_Q, rows)
    allowed = {t for row in rows for t in list(index.passage_triples(row))[:2]}
    assert {t.source for t in found} <= allowed
    assert len(found) == len(allowed)


def test_offline_reader_ranks_question_entity_triples_first(wiki: SimpleNamespace) -> None:
    index = wiki.index
    film = wiki.row["West of Shanghai"]
    unrelated = _unrelated_rows(wiki, 3)
    rows = [*unrelated[:2], film, *unrelated[2:]]  # the film's passage is only third by retrieval rank
    reader = OfflineReader(index, OfflineReaderConfig(max_triples=3))
    found = reader.read(SPOUSE_Q, rows)
    film_norm = normalise_entity("West of Shanghai")

    def mentions(t: Fact) -> bool:
        return film_norm in (normalise_entity(t.subject), normalise_entity(t.object))

    assert found and all(mentions(t) for t in found)
    ranked = reader.rank_triples(SPOUSE_Q, rows)
    owner = index.triples.passage
    first_mention = next(i for i, t in enumerate(ranked) if mentions(Fact(*index.triples[t].as_tuple())))
    first_unrelated = next(i for i, t in enumerate(ranked) if int(owner[t]) in unrelated)
    assert first_mention < first_unrelated


def test_offline_reader_skips_remembered_triples(wiki: SimpleNamespace) -> None:
    index = wiki.index
    rows = [wiki.row["West of Shanghai"], wiki.row["John Farrow"]]
    reader = OfflineReader(index, OfflineReaderConfig(max_triples=4))
    first = reader.read(SPOUSE_Q, rows)
    assert len(first) == 4
    memory = first[:2]
    again = reader.read(SPOUSE_Q, rows, memory)
    assert len(again) == 4
    assert not {t.source for t in memory} & {t.source for t in again}


def test_offline_reader_with_no_passages_reads_nothing(tiny_index: Index) -> None:
    assert OfflineReader(tiny_index).read("Who?", []) == []


# --------------------------------------------------------------------------- configuration errors


def test_unknown_engine_is_a_config_error(tiny_index: Index) -> None:
    with pytest.raises(ConfigError, match="bogus"):
        make_method(tiny_index, "syncge", engine="bogus")


@pytest.mark.parametrize(
    "options",
    [
        {"beam_width": -1},
        {"beam_width": 0},
        {"beam_length": -2},
        {"neighbours": -5},
        {"gamma": 0},
        {"gamma": -1.5},
        {"scope": "sideways"},
        {"base": "telepathy"},
    ],
)
@pytest.mark.parametrize("name", ["naivege", "syncge"])
def test_bad_expansion_options_are_config_errors(tiny_index: Index, name: str, options: dict) -> None:
    with pytest.raises(ConfigError):
        make_method(tiny_index, name, **options)
