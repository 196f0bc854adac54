"""Trees and the pool: provenance, every leaf once, variants; an end-to-end build on real passages."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("umap")
pytest.importorskip("sklearn")

from gearag.model import Passage
from gearag.sirerag.aggregates import AggregateConfig, Proposition
from gearag.sirerag.pipeline import SiReRAGConfig, build_sirerag_trees, leaf_texts, single_propositions
from gearag.sirerag.pool import VARIANTS, build_pool, search
from gearag.sirerag.summarise import ExtractiveConfig, ExtractiveSummariser, split_sentences, text_units
from gearag.sirerag.tree import TreeConfig, build_tree

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _hash_encode(texts):  # a tiny deterministic bag-of-words embedder for unit tests
    # crc32, not hash(): str hashes change with every process (PYTHONHASHSEED), and so would the
    # bucket collisions between topics, which made a ranking test fail in some processes.
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().split():
            out[i, zlib.crc32(w.strip(".,").encode()) % 64] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def _synthetic_passages(n_topics: int = 6, per: int = 8) -> list[Passage]:
    out = []
    for t in range(n_topics):
        for j in range(per):
            words = " ".join(f"topic{t}word{k}" for k in range(6))
            out.append(Passage(f"p{t}-{j}", f"Title {t} {j}", f"{words} item{j}. He was born in {1900 + j}."))
    return out


def _trees(passages, facts=None, cross=False):
    encode = _hash_encode
    summariser = ExtractiveSummariser(encode, ExtractiveConfig(max_words=40))
    facts = facts if facts is not None else [[Proposition(p.text, (p.title.split()[1],))] for p in passages]
    emb = encode(leaf_texts(passages))
    cfg = TreeConfig(min_nodes=3)
    return build_sirerag_trees(passages, emb, facts, encode=encode, summariser=summariser,
                               config=SiReRAGConfig(similarity=cfg, relatedness=cfg, cross_tree=cross))


def test_summary_sources_are_union_of_children_and_leaves() -> None:
    passages = _synthetic_passages()
    trees = _trees(passages)
    sim = trees.similarity
    assert len(sim) > sim.n_leaves, "some summaries were built"
    for row in range(sim.n_leaves, len(sim)):
        kids = sim.children[row]
        assert kids and all(k < row for k in kids)
        assert sim.sources[row] == tuple(sorted(set().union(*(sim.sources[k] for k in kids))))
        assert sim.levels[row] > max(sim.levels[k] for k in kids)
    assert int(sim.levels.max()) <= 3


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_leaf_exactly_once(variant: str) -> None:
    passages = _synthetic_passages()
    trees = _trees(passages)
    props = single_propositions([[Proposition(p.text, ("x",))] for p in passages], _hash_encode)
    pool = build_pool(trees.similarity, trees.relatedness, variant=variant, propositions=props)
    chunks = [i for i, k in enumerate(pool.kinds) if k == "chunk"]
    assert [tuple(pool.sources(i)) for i in chunks] == [(i,) for i in range(len(passages))]
    assert [pool.texts[i] for i in chunks] == leaf_texts(passages)
    assert pool.embeddings.shape == (len(pool), 64)
    assert len(pool.sources_indptr) == len(pool) + 1
    kinds = set(pool.kinds)
    _sim_s, aggs, rel_s, singles = VARIANTS[variant]
    assert ("aggregate" in kinds) == aggs and ("proposition" in kinds) == singles
    rel_summary = any(k == "summary" and t == "relatedness" for k, t in zip(pool.kinds, pool.trees, strict=True))
    assert rel_summary == (rel_s and len(trees.relatedness) > trees.relatedness.n_leaves)


def test_cross_tree_pool() -> None:
    passages = _synthetic_passages()
    trees = _trees(passages, cross=True)
    pool = build_pool(trees.similarity, trees.relatedness, variant="sirerag")
    assert pool.kinds.count("chunk") == len(passages)
    assert {t for t, k in zip(pool.trees, pool.kinds, strict=True) if k == "summary"} <= {"cross"}


def test_search_is_deterministic_top_k() -> None:
    passages = _synthetic_passages()
    trees = _trees(passages)
    pool = build_pool(trees.similarity, trees.relatedness)
    q = _hash_encode(["topic2word3 topic2word1"])
    rows, scores = search(pool, q, k=5)
    assert rows.shape == (1, 5) and np.all(np.diff(scores[0]) <= 0)
    assert 2 * 8 <= min(pool.sources(int(rows[0, 0]))) < 3 * 8


def test_sentence_units_and_headers() -> None:
    assert split_sentences("J. R. R. Tolkien wrote it. He lived in St. Louis. Done!") == [
        "J. R. R. Tolkien wrote it.", "He lived in St. Louis.", "Done!"]
    units = text_units("Some Title\nFirst one. Second one.\n\nOther\nThird.")
    assert units == [("Some Title", "First one."), ("Some Title", "Second one."), ("Other", "Third.")]
    assert text_units("A fact.\nAnother fact.") == [("", "A fact."), ("", "Another fact.")]
    assert text_units("Amber (song)\nIt is a song.") == [("Amber (song)", "It is a song.")]
    assert text_units("Arthur!\nArthur! is a film.") == [("Arthur!", "Arthur! is a film.")]


def test_extractive_summary_budget_whole_sentences() -> None:
    texts = ["T1\nAlpha beta gamma. Delta epsilon zeta eta theta.", "T2\nAlpha beta iota. Kappa lambda."]
    emb = _hash_encode(texts)
    s = ExtractiveSummariser(_hash_encode, ExtractiveConfig(max_words=6))
    (out,) = s.summarise([[0, 1]], texts, emb)
    sentences = [u[1] for u in text_units(out)]
    all_sentences = {u[1] for t in texts for u in text_units(t)}
    assert sentences and set(sentences) <= all_sentences
    assert sum(len(x.split()) for x in sentences) <= 6
    assert s.summarise([[0, 1]], texts, emb) == [out]


@pytest.mark.skipif(not (DATA / "hotpotqa_train").exists(), reason="needs ../shared/data")
def test_end_to_end_on_real_slice() -> None:
    from gearag.embed import make_embedder
    from gearag.sirerag.propositions import offline_propositions

    corpus = json.loads((DATA / "hotpotqa_train" / "hotpotqa_train_corpus.json").read_text(encoding="utf-8"))
    passages = [Passage(f"p{i}", t, " ".join(s)) for i, (t, s) in enumerate(list(corpus.items())[:150])]
    embedder = make_embedder("wordllama")
    facts = offline_propositions(passages)
    assert len(facts) == 150 and sum(map(len, facts)) > 300
    # Pronoun subjects resolved to the title: no fact starts with "He " / "She ".
    assert not any(f.text.startswith(("He ", "She ")) for fs in facts for f in fs)
    emb = embedder.encode(leaf_texts(passages))
    summariser = ExtractiveSummariser(embedder.encode)
    trees = build_sirerag_trees(passages, emb, facts, encode=embedder.encode, summariser=summariser)
    assert len(trees.aggregates) > 50
    assert len(trees.similarity) > 150 and len(trees.relatedness) > len(trees.aggregates)
    pool = build_pool(trees.similarity, trees.relatedness)
    assert pool.kinds.count("chunk") == 150
    assert len(pool) == len(trees.similarity) + len(trees.relatedness)
    for row in range(len(pool)):
        assert len(pool.sources(row)) >= 1
    rows, _ = search(pool, embedder.encode(["Who created the dice game Demon Dice?"]), k=5)
    covered = set().union(*(set(pool.sources(int(r)).tolist()) for r in rows[0]))
    assert any(passages[i].title == "Demon Dice" for i in covered)


def test_tree_build_is_deterministic() -> None:
    passages = _synthetic_passages()
    a, b = _trees(passages), _trees(passages)
    assert a.similarity.texts == b.similarity.texts and a.similarity.children == b.similarity.children
    assert a.relatedness.texts == b.relatedness.texts
    assert np.array_equal(a.similarity.embeddings, b.similarity.embeddings)


def test_tree_stops_without_progress_and_on_small_levels() -> None:
    texts = ["Same title\nThe same sentence here."] * 30
    emb = _hash_encode(texts)
    tree = build_tree("similarity", texts, emb, [(i,) for i in range(30)], encode=_hash_encode,
                      summariser=ExtractiveSummariser(_hash_encode), config=TreeConfig(levels=4, min_nodes=3))
    # Identical leaves form one cluster -> one summary; a level of one node is not clustered again.
    assert tree.level_sizes() == {0: 30, 1: 1}
    assert tree.sources[30] == tuple(range(30))
    assert tree.texts[30] == "Same title\nThe same sentence here."


def test_cross_passage_aggregates_keep_only_multi_passage_aggregates() -> None:
    """An entity of one passage gives a one-passage aggregate; an entity shared by passages a cross-passage one."""
    passages = _synthetic_passages()
    facts = [[Proposition(f"{p.title} fact one.", (p.title, f"group{i % 4}")),
              Proposition(f"{p.title} fact two.", (p.title,))] for i, p in enumerate(passages)]
    trees = _trees(passages, facts)
    rel = trees.relatedness
    single = [r for r in range(rel.n_leaves) if len(rel.sources[r]) == 1]
    multi = [r for r in range(rel.n_leaves) if len(rel.sources[r]) > 1]
    assert single and multi
    full = build_pool(trees.similarity, rel)
    cut = build_pool(trees.similarity, rel, cross_passage_aggregates=True)
    aggs = [i for i, k in enumerate(cut.kinds) if k == "aggregate"]
    assert [cut.texts[i] for i in aggs] == [rel.texts[r] for r in multi]
    assert all(len(cut.sources(i)) > 1 for i in aggs)
    assert len(full) - len(cut) == len(single)
    # Summaries and passages are untouched.
    assert [t for t, k in zip(cut.texts, cut.kinds, strict=True) if k != "aggregate"] == \
        [t for t, k in zip(full.texts, full.kinds, strict=True) if k != "aggregate"]


@pytest.mark.parametrize("titled", [True, False])
def test_relatedness_summaries_keep_the_title_of_each_fact(titled: bool) -> None:
    """Titled aggregates (default): the relatedness tree's leaves and extractive summaries attribute every
    sentence to the title of a passage the node covers; the released text gives headerless sentences."""
    passages = _synthetic_passages()
    facts = [[Proposition(f"It was made in {1900 + i}.", (f"group{i % 4}",))] for i, _ in enumerate(passages)]
    encode = _hash_encode
    cfg = TreeConfig(min_nodes=3)
    trees = build_sirerag_trees(
        passages, encode(leaf_texts(passages)), facts, encode=encode,
        summariser=ExtractiveSummariser(encode, ExtractiveConfig(max_words=40)),
        config=SiReRAGConfig(similarity=cfg, relatedness=cfg, aggregates=AggregateConfig(titled=titled)))
    rel = trees.relatedness
    assert len(rel) > rel.n_leaves, "some relatedness summaries were built"
    for row in range(len(rel)):
        headers = {h for h, _ in text_units(rel.texts[row])}
        if titled:
            assert headers <= {passages[s].title for s in rel.sources[row]} and "" not in headers
        else:
            assert headers == {""}
