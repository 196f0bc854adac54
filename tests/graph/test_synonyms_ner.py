"""Synonym edges between entity names and NER-span mentions in the passage graph.

Hand-built corpora; the synonym tests embed with the default embedder (wordllama, no torch), the NER
tests use the spaCy extractor's model.
"""

from __future__ import annotations

import numpy as np
import pytest

from gearag.config import ResolveConfig
from gearag.graph.edge_kinds import EdgeInputs
from gearag.graph.passage_graph import PassageGraph, PassageGraphConfig
from gearag.graph.trie import name_key
from gearag.text import is_named
from oracles import graph_arrays, resolve_corpus, with_edge_kinds
from prepared_oracle import GraphArrays, graph_of, prepare, stored_graph_arrays

CORPUS = [
    ("John F. Kennedy", "John F. Kennedy was an American politician from Boston."),
    ("Boston", "Boston is the most populous city in Massachusetts."),
    ("Profiles in Courage", "Profiles in Courage is a 1956 book. It was written by John Kennedy and edited in Maine."),
    ("Duke Blue Devils men's basketball", "The team represents Duke University in Durham."),
    ("Akron, Ohio", "Akron is a city in Summit County."),
]
TRIPLES = [("Profiles in Courage", "written by", "John Kennedy", 2), ("John F. Kennedy", "from", "Boston", 0)]


def _embed(keys: list[str]) -> np.ndarray:
    from gearag.embed import make_embedder

    return make_embedder("wordllama").encode(keys)


def _arrays(embed=_embed, ner_spans=None, triples=TRIPLES, threshold: float = 0.8) -> GraphArrays:
    """The corpus's graph arrays, with synonym edges when ``embed`` is given (through the edge-kind registry)."""
    arrays = graph_arrays([t for t, _ in CORPUS], [x for _, x in CORPUS], [s for s, *_ in triples],
                               [o for _, _, o, _ in triples], [p for *_, p in triples], is_named,
                               ner_spans=ner_spans)
    if embed is None:
        return arrays
    config = ResolveConfig(synonyms=True, synonym_threshold=threshold)
    return with_edge_kinds(arrays, config, EdgeInputs(embed=embed))


def _synonym(arrays: GraphArrays, a: str, b: str) -> float:
    keys = arrays.resolution.key_index()
    assert arrays.synonyms is not None
    return float(arrays.synonyms[keys[name_key(a)], keys[name_key(b)]])


def test_synonym_edge_between_near_identical_names_and_none_between_unrelated() -> None:
    arrays = _arrays()
    # "John Kennedy" (an endpoint with no page) and the page title "John F. Kennedy" (wordllama: cosine 0.95).
    weight = _synonym(arrays, "John Kennedy", "John F. Kennedy")
    assert weight >= 0.8
    assert weight == _synonym(arrays, "John F. Kennedy", "John Kennedy")  # symmetric
    assert _synonym(arrays, "John F. Kennedy", "Boston") == 0.0
    assert _synonym(arrays, "Akron, Ohio", "Duke Blue Devils men's basketball") == 0.0
    assert arrays.synonyms.diagonal().sum() == 0  # no self-edges


def test_synonym_edges_follow_the_threshold() -> None:
    def embed_for(triples: list) -> object:  # entity 1's name at cosine 0.6 with entity 0's, the rest apart
        first, second = _arrays(embed=None, triples=triples).resolution.keys[:2]

        def embed(keys: list[str]) -> np.ndarray:
            out = np.zeros((len(keys), 3), dtype=np.float32)
            out[:, 2] = 1.0
            for i, key in enumerate(keys):
                if key in (first, second):
                    out[i] = [1.0, 0.0, 0.0] if key == first else [0.6, 0.8, 0.0]
            return out

        return embed

    arrays = _arrays(embed=embed_for(TRIPLES))
    assert arrays.synonyms is not None
    assert arrays.synonyms[0, 1] == 0.0  # 0.6 < 0.8
    low = _arrays(embed=embed_for([]), triples=[], threshold=0.5)
    assert low.synonyms is not None and low.synonyms[0, 1] == pytest.approx(0.6)


def test_synonym_weight_lets_the_walk_reach_the_page_of_a_spelling_variant() -> None:
    arrays = _arrays()
    keys = arrays.resolution.key_index()
    variant = keys[name_key("John Kennedy")]
    seeds_for = {}
    for weight in (0.0, 1.0):
        graph = graph_of(arrays, PassageGraphConfig(synonym_weight=weight))
        seeds = np.zeros(graph.n_passages + graph.n_entities)
        seeds[graph.n_passages + variant] = 1.0
        seeds_for[weight] = graph.scores(seeds)
    # Without synonym edges the variant's walk reaches only the passage naming it; with them, the page.
    assert seeds_for[1.0][0] > seeds_for[0.0][0]
    assert seeds_for[1.0][0] > seeds_for[1.0][1]


def test_ner_span_mention_resolves_to_the_page() -> None:
    titles = [t for t, _ in CORPUS]
    texts = [x for _, x in CORPUS]
    # The politician's page is named by a span in the book's text, not by any triple of the book's.
    spans = [["Boston"], ["Massachusetts"], ["John F. Kennedy", "Maine"], ["Duke University", "Durham"], ["Akron"]]
    res = resolve_corpus(titles, texts, [], [], [], is_named, ner_spans=spans)
    assert res.ner_mentions is not None
    keys = res.key_index()
    person = keys[name_key("John F. Kennedy")]
    assert res.ner_mentions[2, person] == 1.0
    assert res.about[person, 0] > 0  # ... and that name is about the person's page
    # A span the lexicon lacks becomes a new entity, in no page.
    assert name_key("Maine") in keys and res.about.getrow(keys[name_key("Maine")]).nnz == 0
    # Spans that contain a title resolve through it: "Akron" is the base name of "Akron, Ohio".
    assert res.about[keys[name_key("Akron")], 4] > 0
    # Without NER spans nothing changes in the other arrays.
    plain = resolve_corpus(titles, texts, [], [], [], is_named)
    assert plain.ner_mentions is None
    assert (plain.mentions != res.mentions[:, : plain.mentions.shape[1]]).nnz == 0


def test_ner_mentions_in_the_graph_follow_the_config() -> None:
    spans = [[], [], ["John F. Kennedy"], [], []]
    arrays = _arrays(embed=None, ner_spans=spans)
    person = arrays.resolution.key_index()[name_key("John F. Kennedy")]
    on = graph_of(arrays, PassageGraphConfig())
    off = graph_of(arrays, PassageGraphConfig(ner_mentions=False))

    def mentions(graph: PassageGraph, passage: int, entity: int) -> bool:  # an edge passage -> entity
        _, targets, _ = graph.prepared.columns.edges(np.asarray([passage]), np.ones(1))
        return graph.n_passages + entity in targets

    assert mentions(on, 2, person) and not mentions(off, 2, person)
    seeds = np.zeros(on.n_passages + on.n_entities)
    seeds[2] = 1.0  # the book's passage
    assert on.scores(seeds)[0] > off.scores(seeds)[0]


def test_ner_spans_from_spacy_are_names_not_values() -> None:
    from gearag.graph.ner import ner_spans

    spans = ner_spans(["Seth Curry played for the Duke Blue Devils in 2011 and scored 20 points.", ""])
    assert spans[1] == []
    assert any("Duke" in s for s in spans[0])
    assert not any(s in ("2011", "20") for s in spans[0])


def test_ner_spans_are_the_same_in_worker_processes(monkeypatch) -> None:
    """A large input's NER pass runs in worker processes, one spaCy call per run of pieces as in this process:
    the same spans per passage, in order."""
    import gearag.extract.spacy.pool as pool
    from gearag.extract.spacy.pipeline import DEFAULT_BATCH_SIZE as BATCH
    from gearag.graph.ner import ner_spans

    # More pieces than one run holds (every text one piece), a few passages without names, an empty one.
    texts = [f"{name} moved to {city} in {1900 + i} and met {other}." if i % 7 else ""
             for i, (name, city, other) in enumerate(
                 [(f"Anna Keller {i}", ("Boston", "Paris", "Akron")[i % 3], f"Duke Ellington {i}")
                  for i in range(2 * BATCH + 5)])]
    seen: list[int] = []

    def processes(n_passages: int, n_chars: int, n_tasks: int, wanted: int | None = None) -> int:
        seen.append(n_tasks)
        return 2

    here = ner_spans(texts)
    monkeypatch.setattr(pool, "processes_for", processes)
    assert ner_spans(texts) == here
    assert seen and seen[0] >= 2  # several tasks, in two worker processes
    assert any(here) and here[0] == []

def test_index_stores_synonyms_and_ner_mentions(tmp_path) -> None:
    from gearag.config import IndexConfig, ResolveConfig
    from gearag.demo import PASSAGES
    from gearag.graph.prepared import stored_prepared
    from gearag.indexing import build_index
    from gearag.model import Passage
    from numbering import resolution_keys
    from oracles import reference_build

    passages = [Passage(f"p{i}", t, x) for i, (t, x) in enumerate(PASSAGES)]
    config = IndexConfig(resolve=ResolveConfig(synonyms=True, ner_mentions=True))
    index = build_index(passages, tmp_path / "index", config)
    prepared = stored_prepared(index)
    assert prepared is not None and prepared.holds_ner
    assert "synonyms" in {s.name for s in prepared.columns.sources}
    # What the manifest records is what the union's derivation (the reference) counts.
    reference = stored_graph_arrays(reference_build(passages, tmp_path / "reference", config))
    assert reference is not None and reference.synonyms is not None and reference.resolution.ner_mentions is not None
    info = index.manifest["resolve"]
    assert info["ner_mentions"] == reference.resolution.ner_mentions.nnz > 0
    assert info["synonym_edges"] == reference.synonyms.nnz // 2 > 0
    res = reference.resolution
    assert prepared.n_entities == len(res.keys)
    assert np.array_equal(prepared.ner_keys, np.arange(res.n_mention_keys, len(res.keys)))  # a build's: the last
    # The agent's resolver ignores entities only NER found, with or without NER mentions in use.
    from gearag.agent.offline import Resolver

    keys = resolution_keys(index)
    resolver = Resolver(index)
    assert all(resolver.row(keys[k]) is None for k in prepared.ner_keys.tolist())
    # The default build stores neither.
    plain = stored_prepared(build_index(passages, tmp_path / "plain"))
    assert plain is not None and not plain.holds_ner and "synonyms" not in {s.name for s in plain.columns.sources}


def test_unused_ner_mentions_change_nothing() -> None:
    """An index that stores NER mentions ranks exactly like one without them when they are off."""
    # "Boston Marathon" exists only through NER and resolves (contained name) to the Boston page.
    spans = [["Boston"], ["Massachusetts"], ["John F. Kennedy", "Maine", "Akron"], ["Boston Marathon"], ["Akron"]]
    with_ner = graph_of(_arrays(embed=None, ner_spans=spans), PassageGraphConfig(ner_mentions=False))
    plain = graph_of(_arrays(embed=None), PassageGraphConfig())
    n = plain.n_passages + plain.n_entities
    for seed_node in range(n):
        seeds = np.zeros(n)
        seeds[seed_node] = 1.0
        wide = np.zeros(with_ner.n_passages + with_ner.n_entities)
        wide[:n] = seeds
        assert np.allclose(with_ner.scores(wide), plain.scores(seeds), atol=1e-6)


def test_the_agents_resolver_leaves_out_names_only_ner_found() -> None:
    """Through the prepared graph's name hashes: an NER-only name with a page is not resolved, so the agent behaves
    the same whether or not the index stores NER mentions."""
    from gearag.agent.offline import Resolver
    from gearag.graph.prepared import PreparedGraph

    spans = [["Boston"], ["Massachusetts"], ["John F. Kennedy", "Maine", "Akron"], ["Boston Marathon"], ["Akron"]]
    arrays = _arrays(embed=None, ner_spans=spans)
    res = arrays.resolution
    marathon = res.key_index()[name_key("Boston Marathon")]
    assert marathon >= res.n_mention_keys and res.about[marathon].max() >= Resolver.MIN_SHARE

    class Stored:  # how an index gives the resolver its names: its stored prepared graph
        def __init__(self, prepared: PreparedGraph) -> None:
            self.prepared = prepared

        def read_prepared(self, open_):  # type: ignore[no-untyped-def]
            return self.prepared

        def cached(self, key: str, build):  # type: ignore[no-untyped-def]
            return build()

    for config in (PassageGraphConfig(), PassageGraphConfig(ner_mentions=False)):
        resolver = Resolver(Stored(prepare(arrays, config)))  # type: ignore[arg-type]
        assert resolver.row("Boston Marathon") is None
        assert resolver.row("Akron") == resolver.row("akron") is not None


def test_synonym_matrix_is_the_same_whatever_ids_the_names_have() -> None:
    """The names are compared in key order: permuted ids (and ids without a name) give the same edges bit for
    bit, ties among equally near neighbours included (what lets a delta derive them in its own numbering)."""
    from gearag.graph.synonyms import synonym_matrix

    names = ["john kennedy", "john f kennedy", "jfk", "boston", "boston city", "akron", "akron ohio", "kennedy"]
    # "kennedy" twice as near to both spellings: a tie broken by key, not by id
    def embed(keys: list[str]) -> np.ndarray:
        out = _embed([k if k != "kennedy" else "john kennedy" for k in keys])
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    first = synonym_matrix(names, embed, 0.3, 1)
    order = np.random.default_rng(3).permutation(len(names))
    moved: list[str | None] = [None] * (len(names) + 2)  # two ids with no name among them
    at = np.asarray([i + (i >= 3) + (i >= 6) for i in range(len(names))])
    for j, i in enumerate(order):
        moved[at[j]] = names[i]
    second = synonym_matrix(moved, embed, 0.3, 1)
    back = np.full(len(moved), -1)
    back[at] = order  # a moved id → the first's
    assert second.nnz == first.nnz > 0
    got = second.tocoo()
    assert sorted(zip(back[got.row].tolist(), back[got.col].tolist(), got.data.tolist(), strict=True)) == \
        sorted(zip(*(a.tolist() for a in (first.tocoo().row, first.tocoo().col, first.tocoo().data)), strict=True))
