"""Token indices: the rows holding every token of a name, as a scan of every row finds them."""

from __future__ import annotations

import random

import numpy as np

from gearag.derive.token_index import TokenIndex, TokenQuery

WORDS = ["Paris", "paris", "Texas", "John", "Smith", "de", "la", "Rosa", "River", "Old", "New", "York"]


def _texts(n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 8))) for _ in range(n)]


def test_rows_holding_a_name_are_those_whose_tokens_include_all_of_it() -> None:
    rng = random.Random(7)
    texts = _texts(300, rng)
    index = TokenIndex.compute(texts, lambda text: text.split())
    names = ["Paris", "John Smith", "de la Rosa", "New York River", "Moon", "Old Moon", "paris Texas", "RIVER",
             *(" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(40))]
    held = [{w.casefold() for w in text.split()} for text in texts]
    want = {row for name in names for row, words in enumerate(held)
            if {w.casefold() for w in name.split(" ")} <= words}
    query = TokenQuery.of(names)
    assert set(index.holding_any(names).tolist()) == want == set(index.holding_any(query).tolist())
    assert set(index.holding_any(["de Rosa"]).tolist()) == {r for r, w in enumerate(held) if {"de", "rosa"} <= w}
    assert len(index.holding_any([])) == 0 and len(index.holding_any(["Moon"])) == 0
    assert np.array_equal(query.starts[[0, -1]], [0, len(query.hashes)])
