"""HashedNames and NameLookup scan exactly as the dict TokenTrie does (they replace it where memory or time matter)."""

from __future__ import annotations

import random

import pytest

from gearag.graph.trie import HashedNames, TokenTrie, tokens


def _pair(names: list[tuple[str, int]], case_sensitive: bool = False) -> tuple[TokenTrie, HashedNames]:
    trie, hashed = TokenTrie(case_sensitive), HashedNames(case_sensitive)
    for name, value in names:
        trie.add(name, value)
        hashed.add(name, value)
    return trie, hashed.freeze()


def test_same_matches_as_the_trie_on_random_names_and_texts() -> None:
    rng = random.Random(0)
    vocab = ["New", "York", "City", "the", "Beatles", "Akron", "Ohio", "Jr", "2", "Élan", "home", "Home", "of"]
    names = [(" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 4))), i) for i in range(300)]
    names += [("New York", 1000), ("New York", 1001)]  # a later add wins, in both
    for case_sensitive in (False, True):
        trie, hashed = _pair(names, case_sensitive)
        assert hashed.size == trie.size
        for _ in range(400):
            toks = tokens(" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 12))))
            for capital in (False, True):
                assert list(hashed.scan(toks, capital)) == list(trie.scan(toks, capital))
        for name, _ in [*names[:50], ("New York", 0), ("Nowhere", 0), ("", 0)]:
            assert hashed.get(name) == trie.get(name)


def test_leftmost_longest_without_overlap() -> None:
    _, hashed = _pair([("New York", 1), ("New York City", 2), ("City Hall", 3), ("Hall", 4)])
    found = [(m.name, m.start, m.end) for m in hashed.scan(tokens("in New York City Hall today"))]
    assert found == [(2, 1, 4), (4, 4, 5)]
    assert list(hashed.scan(tokens("new york"), require_capital=True)) == []


def test_name_lookup_scans_name_keys_as_the_trie_does() -> None:
    """NameLookup (the generation's exact matcher over name keys) finds what a trie of the same keys finds."""
    from gearag.graph.trie import NameLookup, name_key

    rng = random.Random(1)
    vocab = ["New", "York", "City", "the", "Beatles", "Akron", "Ohio", "Jr", "2", "Élan", "home", "Home", "of"]
    keys = list(dict.fromkeys(name_key(" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 5))))
                              for _ in range(300)))
    trie, lookup = TokenTrie(), NameLookup(keys)
    for i, key in enumerate(keys):
        trie.add(key.split(" "), i)
    assert lookup.size == trie.size
    # Spans of the first half's keys extended with the rest (an add), or with spans left from keys since gone and
    # first tokens no key starts with (a delete keeps them): the same spans, or longer ones, and the same matches.
    half = len(keys) // 2
    extended = NameLookup(keys, longest=(dict(NameLookup(keys[:half]).longest), half))
    assert extended.longest == lookup.longest
    stale = {first: span + 3 for first, span in lookup.longest.items()} | {"beatles": 9, "zz": 2}
    over = NameLookup(keys, longest=(stale, len(keys)))
    for _ in range(600):
        toks = tokens(" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 14))))
        for capital in (False, True):
            want = list(trie.scan(toks, capital))
            assert list(lookup.scan(toks, capital)) == want
            assert list(over.scan(toks, capital)) == want


def test_key_hashes_are_fnv1a_of_each_key_and_of_its_prefixes_before_a_space() -> None:
    """The vectorised hashes equal the per-string ones the scan computes (stable across processes)."""
    from gearag.graph.trie import fnv1a, key_hashes

    keys = ["new york city", "élan", "a b", "x", "", "日本 語", "new york"]
    names, prefixes = key_hashes(keys)
    assert names.tolist() == [fnv1a(k.encode()) for k in keys]
    expected = [fnv1a(k[:i].encode()) for k in keys for i, ch in enumerate(k) if ch == " "]
    assert sorted(prefixes.tolist()) == sorted(expected)
    assert fnv1a(b"new york") == fnv1a(b" york", fnv1a(b"new"))
    assert fnv1a(b"") == 0xCBF29CE484222325 and fnv1a(b"a") == 0xAF63DC4C8601EC8C  # the published FNV-1a 64 values


def test_key_hashes_on_threads_are_the_same_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut into parts hashed on threads, the keys hash as on one thread, in the keys' order."""
    from gearag.graph import trie

    keys = [f"name {i} of {'x' * (i % 7)} kind" for i in range(50)] + ["", "solo"]
    one = trie.key_hashes(keys, workers=1)
    monkeypatch.setattr(trie, "THREAD_KEYS", 8)
    for workers in (2, 3, 5):
        names, prefixes = trie.key_hashes(keys, workers=workers)
        assert names.tolist() == one[0].tolist()
        assert sorted(prefixes.tolist()) == sorted(one[1].tolist())
