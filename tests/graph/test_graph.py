"""Entity resolution, the token trie, PPR and the passage graph."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from gearag.graph.passage_graph import PassageGraph, PassageGraphConfig
from gearag.graph.ppr import PageRankOperator, personalized_pagerank
from gearag.graph.resolve import build_lexicon, leading_name, opening_names, title_names
from gearag.graph.trie import TokenTrie, name_key, tokens
from gearag.text import is_named
from oracles import graph_arrays, resolve_corpus
from prepared_oracle import GraphArrays, graph_of

# -- trie -------------------------------------------------------------------


def test_trie_finds_leftmost_longest_names() -> None:
    trie = TokenTrie()
    for i, name in enumerate(["Stephen Curry", "Stephen", "Curry", "Golden State Warriors"]):
        trie.add(name, i)
    found = [(m.name, m.start, m.end) for m in trie.scan(tokens("Stephen Curry's Golden State Warriors won"))]
    assert found == [(0, 0, 2), (3, 3, 6)]


def test_trie_capitalisation_and_case_sensitivity() -> None:
    trie = TokenTrie()
    trie.add("Home", 0)
    assert [m.name for m in trie.scan(tokens("they went home"), require_capital=True)] == []
    assert [m.name for m in trie.scan(tokens("they went Home"), require_capital=True)] == [0]
    exact = TokenTrie(case_sensitive=True)
    exact.add("Home", 0)
    assert list(exact.scan(tokens("home"))) == []


def test_name_key_normalises() -> None:
    assert name_key("The Beatles") == name_key("beatles") == "beatles"
    assert name_key("Akron, Ohio") == "akron ohio"
    assert name_key("Pérez") == "perez"


# -- resolution ---------------------------------------------------------------

CORPUS = [
    ("Stephen Curry", "Wardell Stephen Curry II (born 1988) is a basketball player. He played for the "
                      "Davidson Wildcats."),
    ("Stephen Curry (comedian)", "Stephen Curry (born 1976) is an Australian comedian."),
    ("Dell Curry", 'Wardell Stephen "Dell" Curry (born 1964) is a former player.'),
    ("Duke Blue Devils men's basketball", "The Duke Blue Devils men's basketball team represents Duke."),
    ("Seth Curry", "Seth Curry is a player. He played for the Duke Blue Devils."),
    ("Akron, Ohio", "Akron is a city in Summit County."),
]


def _resolve(corpus, triples=()):
    titles = [t for t, _ in corpus]
    texts = [x for _, x in corpus]
    subjects = [s for s, _, _, _ in triples]
    objects = [o for _, _, o, _ in triples]
    owner = [p for _, _, _, p in triples]
    return resolve_corpus(titles, texts, subjects, objects, owner, is_named)


def _about(res, name: str) -> dict[int, float]:
    keys = res.key_index()
    row = res.about.getrow(keys[name_key(name)])
    return {int(c): float(v) for c, v in zip(row.indices, row.data, strict=True)}


def test_title_variants() -> None:
    assert ("stephen curry", "base") in title_names("Stephen Curry (comedian)")
    assert ("akron", "base") in title_names("Akron, Ohio")
    assert leading_name("Duke Blue Devils men's basketball") == "Duke Blue Devils"
    assert leading_name("Bank of America Stadium") is None
    assert "dell curry" in opening_names("Dell Curry", CORPUS[2][1])
    assert "wardell stephen dell curry" in opening_names("Dell Curry", CORPUS[2][1])
    assert opening_names("Seth Curry", "He is a player.") == []


def test_parenthetical_title_is_a_weaker_candidate_for_the_same_name() -> None:
    res = _resolve(CORPUS)
    about = _about(res, "Stephen Curry")
    assert set(about) == {0, 1}
    assert about[0] > about[1] > 0
    assert sum(about.values()) == pytest.approx(1.0)


def test_prefix_of_a_title_resolves_to_it() -> None:
    res = _resolve(CORPUS, [("Seth Curry", "played for", "Duke Blue Devils", 4)])
    assert _about(res, "Duke Blue Devils") == {3: pytest.approx(1.0)}
    # The triple's object and the name found in Seth Curry's text are one entity, mentioned by passage 4.
    links = res.passage_links()
    assert links[4, 3] > 0
    assert _about(res, "Akron") == {5: pytest.approx(1.0)}


def test_two_entities_with_one_name_share_it_equally() -> None:
    corpus = [("Paris", "Paris is the capital of France."), ("Paris", "Paris is a city in Texas."),
              ("Texas", "Texas is a state. Its cities include Paris.")]
    res = _resolve(corpus)
    assert _about(res, "Paris") == {0: pytest.approx(0.5), 1: pytest.approx(0.5)}
    assert res.passage_links()[2, 0] == res.passage_links()[2, 1] > 0


def test_corpus_without_titles_resolves_nothing_and_does_not_break() -> None:
    corpus = [("", "Seth Curry played for the Duke Blue Devils."), ("", "The Duke Blue Devils are a team.")]
    res = _resolve(corpus, [("Seth Curry", "played for", "Duke Blue Devils", 0),
                            ("Duke Blue Devils", "are", "team", 1)])
    assert res.n_names == 0 and res.about.nnz == 0
    assert res.passage_links().nnz == 0
    assert res.mentions.nnz == 3  # endpoints are still entities that passages mention
    graph = graph_of(graph_arrays(["", ""], [x for _, x in corpus], ["Seth Curry", "Duke Blue Devils"],
                                           ["Duke Blue Devils", "team"], [0, 1], is_named))
    ranked = graph.rank("Where did Seth Curry play?", [(0, 1.0)], [], 2)
    assert ranked[0] == 0 and set(ranked) == {0, 1}


def test_lexicon_skips_stop_word_titles() -> None:
    assert "it" not in build_lexicon(["It"], ["It is a novel."])


# -- PPR ----------------------------------------------------------------------


def _dense_ppr(adj: np.ndarray, seeds: np.ndarray, d: float) -> np.ndarray:
    """Closed form: p = (1-d) s + d (M p + (dangling·p) s), solved as a linear system."""
    n = len(seeds)
    out = adj.sum(axis=0)
    m = np.divide(adj, out, out=np.zeros_like(adj), where=out > 0)
    s = seeds / seeds.sum()
    dangling = (out == 0).astype(float)
    system = np.eye(n) - d * (m + np.outer(s, dangling))
    return np.linalg.solve(system, (1 - d) * s)


@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_ppr_matches_an_independent_linear_solve(damping: float) -> None:
    rng = np.random.default_rng(0)
    adj = rng.random((12, 12)) * (rng.random((12, 12)) < 0.3)
    adj = adj + adj.T
    adj[:, 11] = 0  # a dangling node
    adj[11, 0] = 1.0
    seeds = np.zeros(12)
    seeds[[2, 5]] = [0.7, 0.3]
    got = personalized_pagerank(sparse.csr_matrix(adj), seeds, damping=damping, tol=1e-12, max_iter=1000)
    assert got.sum() == pytest.approx(1.0)
    assert got == pytest.approx(_dense_ppr(adj, seeds, damping), abs=1e-9)


def test_ppr_on_a_path_by_hand() -> None:
    # 0 - 1 - 2 undirected, seed 0, d = 0.5: p0 = .5 + .5·p1/2, p1 = .5(p0 + p2), p2 = .5·p1/2.
    adj = sparse.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    p = personalized_pagerank(adj, np.array([1.0, 0, 0]), damping=0.5, tol=1e-14, max_iter=500)
    p1 = 0.5 / (2 - 0.25 - 0.25)  # from p0 = .5 + p1/4, p2 = p1/4, p1 = (p0 + p2)/2
    assert p == pytest.approx([0.5 + p1 / 4, p1, p1 / 4])


def test_ppr_rejects_bad_input() -> None:
    adj = sparse.eye(3, format="csr")
    with pytest.raises(ValueError):
        personalized_pagerank(adj, np.array([1.0, 0]))
    with pytest.raises(ValueError):
        personalized_pagerank(adj, np.array([-1.0, 0, 0]))
    assert not personalized_pagerank(adj, np.zeros(3)).any()


def _random_graph(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    adj = rng.random((n, n)) * (rng.random((n, n)) < 0.3)
    adj = adj + adj.T
    adj[:, n - 1] = 0  # a dangling node (no out-edges), reached from node 0
    adj[n - 1, 0] = 1.0
    return adj


@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_push_stays_below_the_exact_vector_by_exactly_its_residual(damping: float) -> None:
    adj = _random_graph(12, 1)
    seeds = np.zeros(12)
    seeds[[2, 5]] = [0.7, 0.3]
    exact = _dense_ppr(adj, seeds, damping)
    op = PageRankOperator(sparse.csr_matrix(adj))
    for eps in (1e-2, 1e-4, 1e-8):
        est, residual = op.run_push(seeds, damping=damping, eps=eps)
        gap = exact - est
        assert gap.min() > -1e-12  # an under-estimate, node by node
        assert gap.sum() == pytest.approx(residual, abs=1e-10)  # the residual left is the whole L1 error
    assert est == pytest.approx(exact, abs=1e-6)  # and it vanishes as eps does


def test_push_is_local_on_a_long_path() -> None:
    # A path of 2,000 nodes seeded at one end: power iteration touches every node; push stops
    # where the residual falls below eps × degree, a few dozen hops in, whatever the length.
    n = 2000
    adj = sparse.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    seeds = np.zeros(n)
    seeds[0] = 1.0
    est, residual = PageRankOperator(adj).run_push(seeds, damping=0.5, eps=1e-6)
    reached = np.flatnonzero(est)
    assert reached.max() < 40 and residual < 1e-5
    exact = personalized_pagerank(adj, seeds, damping=0.5, tol=1e-14, max_iter=500)
    assert np.argsort(-est)[:10].tolist() == np.argsort(-exact)[:10].tolist()


def test_push_rejects_bad_input() -> None:
    op = PageRankOperator(sparse.eye(3, format="csr"))
    with pytest.raises(ValueError):
        op.run_push(np.array([1.0, 0, 0]), eps=0.0)
    with pytest.raises(ValueError):
        op.run_push(np.array([-1.0, 0, 0]))
    est, residual = op.run_push(np.zeros(3))
    assert not est.any() and residual == 0.0


def test_sparse_push_equals_the_dense_one_and_leaves_its_work_arrays_clean() -> None:
    """run_push_sparse (what a query runs: no node-sized allocation or scan) gives the dense push's
    estimates at the nodes it pushed, and resets its per-thread arrays, whatever runs before it."""
    import threading

    adj = sparse.csr_matrix(_random_graph(40, 3))
    op = PageRankOperator(adj)
    runs = []
    for seed_nodes in ([3], [0, 7, 19], [39, 1]):
        seeds = np.zeros(40)
        seeds[seed_nodes] = np.linspace(1.0, 2.0, len(seed_nodes))
        dense, residual = op.run_push(seeds, eps=1e-7)
        at = np.flatnonzero(seeds)
        nodes, est, left = op.run_push_sparse(at, seeds[at], eps=1e-7, residual=True)
        assert nodes.tolist() == np.flatnonzero(dense).tolist() and np.array_equal(est, dense[nodes])
        assert left == pytest.approx(residual, abs=1e-12)
        runs.append((at, seeds[at], nodes, est))
    ws = op._workspace()
    assert not ws.p.any() and not ws.r.any()  # reset where touched
    bad: list[int] = []

    def again(i: int) -> None:
        for _ in range(30):
            at, vals, nodes, est = runs[i % 3]
            got_nodes, got, _ = op.run_push_sparse(at, vals, eps=1e-7)
            bad.extend([i] if not (np.array_equal(got_nodes, nodes) and np.array_equal(got, est)) else [])

    threads = [threading.Thread(target=again, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_a_push_over_the_touched_nodes_only_gives_the_dense_arrays_results_bit_for_bit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Above dense_nodes a push keeps arrays over the nodes it reaches (a query's memory does not grow with the
    graph), with the same nodes, estimates and residual as the dense per-thread arrays, dangling restarts
    included; on a long path it holds a few dozen nodes of 2,000."""
    from gearag.graph import ppr

    sizes: list[int] = []

    class Recorded(ppr._Touched):
        def reset(self, nodes: np.ndarray) -> None:
            sizes.append(len(self.nodes))
            assert np.array_equal(self.nodes, np.unique(nodes))  # exactly the nodes the run reached

    monkeypatch.setattr(ppr, "_Touched", Recorded)
    adj = sparse.csr_matrix(_random_graph(60, 5))
    dense, touched = PageRankOperator(adj), PageRankOperator(adj, dense_nodes=0)
    for seed_nodes in ([59], [0, 7, 19], [58, 1, 30, 31]):
        at = np.asarray(seed_nodes, dtype=np.int64)
        at.sort()
        vals = np.linspace(1.0, 2.0, len(at))
        for eps in (1e-3, 1e-7):
            want = dense.run_push_sparse(at, vals, eps=eps, residual=True)
            got = touched.run_push_sparse(at, vals, eps=eps, residual=True)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]) and got[2] == want[2]
    n = 2000
    path = sparse.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    sizes.clear()
    PageRankOperator(path, dense_nodes=0).run_push_sparse(np.array([0]), np.array([1.0]), eps=1e-6)
    assert 0 < sizes[0] < 50


# -- passage graph --------------------------------------------------------------


def _demo_arrays() -> GraphArrays:
    from gearag.demo import PASSAGES

    triples = [("Seth Curry", "played for", "Duke Blue Devils", 4), ("Stephen Curry", "born in", "Akron, Ohio", 0),
               ("Stephen Curry", "son of", "Dell Curry", 0), ("Seth Curry", "brother of", "Stephen Curry", 4)]
    return graph_arrays([t for t, _ in PASSAGES], [x for _, x in PASSAGES], [s for s, *_ in triples],
                        [o for _, _, o, _ in triples], [p for *_, p in triples], is_named)


def _demo_graph(config: PassageGraphConfig = PassageGraphConfig()) -> PassageGraph:
    return graph_of(_demo_arrays(), config)


def test_ppr_steps_from_a_fact_to_the_page_about_its_object() -> None:
    graph = _demo_graph()
    q = "Who coached the college basketball team of Seth Curry?"
    ranked = graph.rank(q, [(4, 1.0)], [0], 5)  # proximal: (Seth Curry, played for, Duke Blue Devils)
    # Seth Curry first; Duke Blue Devils men's basketball (two hops: fact → entity → page) in the top 3,
    # beside Sonya Curry (one hop: her passage mentions Seth Curry).
    assert ranked[0] == 4 and 5 in ranked[:3]
    off = _demo_graph(PassageGraphConfig(about_weight=0.0)).rank(q, [(4, 1.0)], [0], 5)
    assert 5 not in off  # without the about edges nothing leads to the team's page


def test_question_page_weight_seeds_the_pages_about_the_questions_entities() -> None:
    q = "Who is the father of Seth Curry?"
    off = _demo_graph(PassageGraphConfig(question_page_weight=0.0)).seeds(q)
    on = _demo_graph(PassageGraphConfig(question_page_weight=0.5)).seeds(q)
    n_passages = _demo_graph().n_passages
    assert not off[:n_passages].any()  # no base passages given: only entity nodes are seeded
    assert np.flatnonzero(on[:n_passages]).tolist() == [4]  # Seth Curry's own page
    # Seth Curry passes half its seed to its page; the question's seeds still total 1
    assert on[4] == pytest.approx(0.5) and on.sum() == pytest.approx(1.0) == off.sum()


def test_both_solvers_rank_the_demo_graph_alike() -> None:
    q = "Who coached the college basketball team of Seth Curry?"
    push = _demo_graph(PassageGraphConfig(solver="push")).rank(q, [(4, 1.0)], [0], 6)
    power = _demo_graph(PassageGraphConfig(solver="power")).rank(q, [(4, 1.0)], [0], 6)
    assert push == power and len(push) >= 4


def test_question_entities_skip_stop_word_matches() -> None:
    graph = _demo_graph()
    keys = _demo_arrays().resolution.keys
    assert [keys[e] for e in graph.question_entities("Where was Stephen Curry born?")] == ["stephen curry"]


def test_graph_arrays_round_trip(tmp_path) -> None:
    class Writer:
        def path(self, rel):
            p = tmp_path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            return p

        def write_json(self, rel, value):
            import json

            self.path(rel).write_text(json.dumps(value))

        def write_array(self, rel, array):
            np.save(self.path(rel), array)

    from oracles import write_graph_arrays

    arrays = _demo_arrays()
    write_graph_arrays(Writer(), arrays, prepare=False)
    loaded = GraphArrays.load(tmp_path / "graph")
    assert loaded.resolution.keys == arrays.resolution.keys
    assert (loaded.resolution.about != arrays.resolution.about).nnz == 0
    assert (loaded.relations != arrays.relations).nnz == 0


def test_proximal_weight_scales_the_memory_seeds_against_the_question() -> None:
    """The agent's output ranking seeds its gist memory at ``memory_weight`` of the question's entities."""
    graph = _demo_graph()
    q = "Who coached the college basketball team of Seth Curry?"
    memory = [1]  # (Stephen Curry, born in, Akron, Ohio): a fact the question does not ask about
    full = graph.seeds(q, proximal=memory, ranked=False)
    half = graph.seeds(q, proximal=memory, ranked=False, proximal_weight=0.5)
    assert full.sum() == pytest.approx(2.0) and half.sum() == pytest.approx(1.5)
    akron, seth = 6, 4
    s_full, s_half = graph.scores(full), graph.scores(half)
    assert s_half[akron] / s_half[seth] < s_full[akron] / s_full[seth]
    assert graph.rank(q, (), memory, 12, ranked=False, proximal_weight=0.0) == graph.rank(q, (), (), 12)


def test_stop_words_are_spacys_without_importing_spacy() -> None:
    """The word list is read from spaCy's file alone: importing the package would load spaCy and torch (~270 MB)."""
    import subprocess
    import sys

    code = ("import sys; from gearag.graph.resolve import stop_words; words = stop_words(); "

            "print(len(words), 'spacy' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split()[1:] == ["False", "False"]
    from spacy.lang.en.stop_words import STOP_WORDS

    from gearag.graph.resolve import stop_words


    assert stop_words() == frozenset(STOP_WORDS) and "the" in stop_words()


def test_sparse_ranking_equals_the_dense_seed_vectors_ranking() -> None:
    graph = _demo_graph()
    for question, base, proximal in (("Where was Stephen Curry born?", [(0, 2.0), (4, 1.0)], [1, 2]),
                                     ("Who is Seth Curry's brother?", [(4, 3.0)], [0, 3]),
                                     ("nothing named here", [], [])):
        seeds = graph.seeds(question, base, proximal)
        nodes, values = graph.seed_items(question, base, proximal)
        assert np.array_equal(np.flatnonzero(seeds), nodes) and np.array_equal(seeds[nodes], values)
        sc = graph.scores(seeds)
        reached = np.flatnonzero(sc > 0)
        expected = sorted(reached.tolist(), key=lambda r: (-sc[r], r))[:3]
        assert graph.rank(question, base, proximal, k=3) == expected


@pytest.mark.parametrize("ordered", [True, False])
def test_summed_csr_is_scipys_coo_conversion_array_for_array(ordered: bool) -> None:
    """Rows in order take the short path (no COO sort); either way the arrays are scipy's, duplicates summed
    in the same order (float32 sums are order-sensitive, so equality is exact)."""
    from prepared_oracle import summed_csr


    rng = np.random.default_rng(11)
    rows = rng.integers(0, 50, 4000)
    cols = rng.integers(0, 30, 4000)
    if ordered:
        rows = np.sort(rows)
    values = (rng.random(4000) * 10.0 ** rng.integers(-6, 6, 4000)).astype(np.float32)
    before = values.copy(), cols.copy()
    got = summed_csr(values, rows, cols, (60, 30))
    assert np.array_equal(values, before[0]) and np.array_equal(cols, before[1])  # the caller's arrays untouched
    want = sparse.csr_matrix((values, (rows, cols)), shape=(60, 30))
    want.sum_duplicates()
    for part in ("indptr", "indices", "data"):
        a, b = getattr(got, part), getattr(want, part)
        assert a.dtype == b.dtype and np.array_equal(a, b)
