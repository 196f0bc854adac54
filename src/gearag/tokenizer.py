"""BM25's tokenizer: bm25s's English one (its ``tokenize`` with ``stopwords="en"`` and a Snowball stemmer), token
for token, without its per-call overhead. It sits below both retrieval and storage: the Lance backend's
full-text search tokenises its column and its queries with it.

``bm25s.tokenize`` splits each lower-cased text on ``(?u)\\b\\w\\w+\\b``,
drops the English stop words and stems each distinct token once with
PyStemmer. It also makes three tqdm progress bars per call (disabled, yet
constructed) and a set of the stop words per text: for the one-text calls of
a query (the offline reader tokenises every candidate fact) that was most of
the time, ~0.25 ms a call, and a large part of the build's BM25 stage
(docs/benchmarks-log.md, "BM25's tokenizer without bm25s's per-call costs").

The same steps here, with bm25s's own stop-word list made a set once.
Stemming is per word, so stemming each distinct token of a batch gives what
bm25s gives; ``tests/retrieve/test_tokenizer.py`` checks the
output against ``bm25s.tokenize`` on real passages.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

#: bm25s's token pattern (scikit-learn CountVectorizer's default).
_SPLIT = re.compile(r"(?u)\b\w\w+\b").findall

_local = threading.local()


def stemmer() -> object:
    """This thread's Snowball stemmer: a PyStemmer instance has internal state and must not be shared
    between threads (its docstring says so), and the service tokenises queries from several threads."""
    found = getattr(_local, "stemmer", None)
    if found is None:
        import Stemmer

        found = _local.stemmer = Stemmer.Stemmer("english")
    return found


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """bm25s's English stop words (``stopwords="en"``), read from its ``stopwords`` module alone: importing the
    package first imports numba and more (~0.35 s of every ``gearag add`` and query process that needs no
    other part of bm25s)."""
    import importlib.util
    from pathlib import Path

    found = importlib.util.find_spec("bm25s")  # finds the package without running it
    origin = found.origin if found is not None else None
    spec = importlib.util.spec_from_file_location("gearag._bm25s_stopwords", Path(origin).parent / "stopwords.py") \
        if origin else None
    words = None
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            words = getattr(module, "STOPWORDS_EN", None)
        except (OSError, SyntaxError, ImportError):  # not the module bm25s ships: the plain import below
            words = None
    if words is None:  # laid out otherwise: the plain import
        from bm25s.stopwords import STOPWORDS_EN

        words = STOPWORDS_EN
    return frozenset(words)


def _words(text: str, stop: frozenset[str]) -> list[str]:
    """``text``'s lower-cased words of two or more characters, stop words dropped (bm25s's split, before stems)."""
    return [t for t in _SPLIT(text.lower()) if t not in stop]


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Lower-case word tokens, English stop words removed, Snowball-stemmed (``bm25s.tokenize``'s strings)."""
    stop = stop_words()
    docs = [_words(text, stop) for text in texts]
    distinct = list({t: None for doc in docs for t in doc})
    stems = dict(zip(distinct, stemmer().stemWords(distinct), strict=True))  # type: ignore[attr-defined]
    return [[stems[t] for t in doc] for doc in docs]


def token_ids(texts: Sequence[str], terms: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """``texts`` tokenised as :func:`tokenize` does, as ids into ``terms`` (stem → id, extended in place with the
    stems it lacks, in order of first appearance): the flat ids (int64) and each text's token count."""
    stop = stop_words()
    local: defaultdict[str, int] = defaultdict()
    local.default_factory = local.__len__  # a word's id: its rank of first appearance in these texts
    flat: list[int] = []
    lengths = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        words = _words(text, stop)
        flat.extend(map(local.__getitem__, words))
        lengths[i] = len(words)
    distinct = list(local)
    stems = stemmer().stemWords(distinct) if distinct else []  # type: ignore[attr-defined]
    remap = np.fromiter((terms.setdefault(s, len(terms)) for s in stems), dtype=np.int64, count=len(stems))
    return remap[np.asarray(flat, dtype=np.int64)] if flat else np.zeros(0, dtype=np.int64), lengths
