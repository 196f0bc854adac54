"""BM25's tokenizer gives bm25s's tokens (strings and ids), text for text, on real passages and odd inputs."""

from __future__ import annotations

import bm25s
import numpy as np

from conftest import wiki_slice
from gearag.tokenizer import stemmer, token_ids, tokenize

ODD = ["", "   ", "a I an", "The THE the", "Café Müller’s 1990s naïve co-operation", "x1 y22 __init__ 3.14 ½",
       "Straße İstanbul ǅemal", "don't won't it's", "北京 東京 서울", "running runs ran runner", "\n\t-- !!"]


def _texts() -> list[str]:
    rows, _ = wiki_slice(300, 1)
    return [f"{r['title']}\n{r['text']}" for r in rows] + ODD


def test_tokens_are_bm25s_s_text_for_text() -> None:
    texts = _texts()
    expected = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), return_ids=False, show_progress=False)
    assert tokenize(texts) == expected
    assert [tokenize([t])[0] for t in texts] == expected  # one text at a time, as a query is


def test_token_ids_number_bm25s_s_tokens() -> None:
    texts = _texts()
    expected = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), return_ids=False, show_progress=False)
    terms: dict[str, int] = {"already known": 0}
    ids, lengths = token_ids(texts[:100], terms)
    more, more_lengths = token_ids(texts[100:], terms)  # a second batch extends the same numbering
    names = list(terms)
    flat = np.concatenate([ids, more])
    assert names[0] == "already known" and len(set(names)) == len(names)
    assert np.concatenate([lengths, more_lengths]).tolist() == [len(doc) for doc in expected]
    assert [names[i] for i in flat.tolist()] == [t for doc in expected for t in doc]
    assert token_ids([], terms)[0].size == 0 and token_ids(["", "the"], terms)[1].tolist() == [0, 0]


def test_the_stop_words_are_bm25s_own_read_without_importing_bm25s() -> None:
    """bm25s's English list, read from its module alone: the package (numba and more) is not imported."""
    import subprocess
    import sys

    from bm25s.stopwords import STOPWORDS_EN

    from gearag.tokenizer import stop_words

    assert stop_words() == frozenset(STOPWORDS_EN)
    code = ("import sys; from gearag.tokenizer import stop_words; "
            "assert 'a' in stop_words(); print('bm25s' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
