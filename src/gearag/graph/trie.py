"""A token trie for multi-pattern name matching.

Finding every known name (all passage titles, aliases, entity names) in a
text by scanning name by name costs O(names) per text. The trie walks the
text's tokens once: at each position it follows the tokens as far as some
name continues and keeps the longest complete name (leftmost-longest, no
overlaps), as Aho–Corasick matchers do in their "longest match" mode.

Tokens are runs of letters and digits with accents stripped, so
"Stephen Curry's" yields ``stephen``, ``curry``, ``s`` and the name
"Stephen Curry" matches its first two tokens. Matching is case-insensitive
(``casefold``) by default; ``case_sensitive=True`` compares the tokens as
written (the title-mention baseline's "verbatim" test).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np

_TOKEN = re.compile(r"[^\W_]+")
#: Combining diacritical marks (U+0300–U+036F) left by NFKD decomposition.
_COMBINING = re.compile("[\u0300-\u036f]")
_ARTICLES = frozenset({"the", "a", "an"})
_END = -1  # key in a trie node: the id of the name that ends there


@lru_cache(maxsize=1 << 16)
def _strip_accents(text: str) -> str:
    if text.isascii():
        return text
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text))


def tokens(text: str) -> list[str]:
    """Letter/digit runs of ``text`` as written (accents stripped)."""
    return _TOKEN.findall(_strip_accents(text))


def starts_name(tok: str) -> bool:
    """Whether ``tok`` begins as a name does in running text: an upper-case letter or a digit."""
    return tok[:1].isupper() or tok[:1].isdigit()


def name_key(text: str) -> str:
    """The canonical key of a name: case-folded tokens, a leading article dropped.

    "The Beatles", "the Beatles'" and "Beatles" share the key ``beatles``;
    "Akron, Ohio" has the key ``akron ohio``.
    """
    toks = [t.casefold() for t in tokens(text)]
    if len(toks) > 1 and toks[0] in _ARTICLES:
        toks = toks[1:]
    return " ".join(toks)


@dataclass(frozen=True)
class Match:
    """Name ``name`` found at tokens ``[start, end)`` of the scanned text."""

    name: int
    start: int
    end: int


class _NameTokens:
    """Case folding shared by the name matchers: a name's tokens as they are compared."""

    case_sensitive: bool

    def _fold(self, toks: Iterable[str]) -> list[str]:
        return list(toks) if self.case_sensitive else [t.casefold() for t in toks]

    def _name_tokens(self, name: str | list[str]) -> list[str]:
        return self._fold(tokens(name) if isinstance(name, str) else name)


class TokenTrie(_NameTokens):
    """Names (token sequences) → integer ids; finds them in token streams."""

    def __init__(self, case_sensitive: bool = False) -> None:
        self.case_sensitive = case_sensitive
        self.root: dict = {}
        self.size = 0

    def add(self, name: str | list[str], value: int) -> None:
        """Register ``name`` (a string or its tokens) with id ``value``; a later add of the same name wins."""
        toks = self._name_tokens(name)
        if not toks:
            return
        node = self.root
        for tok in toks:
            node = node.setdefault(tok, {})
        if _END not in node:
            self.size += 1
        node[_END] = value

    def get(self, name: str | list[str]) -> int | None:
        node: dict[Any, Any] = self.root
        for tok in self._name_tokens(name):
            child = node.get(tok)
            if child is None:
                return None
            node = child
        value = node.get(_END)
        return int(value) if value is not None else None

    def scan(self, toks: list[str], require_capital: bool = False) -> Iterator[Match]:
        """Leftmost-longest, non-overlapping matches in ``toks`` (tokens as written).

        ``require_capital`` accepts a match only when its first token starts
        with an upper-case letter or a digit: names in running text are
        written that way, so the common word "home" does not match the
        title "Home" while "Home" at a name position does.
        """
        folded = self._fold(toks)
        n = len(folded)
        i = 0
        root = self.root
        while i < n:
            node = root.get(folded[i])
            best = None
            if node is not None and (not require_capital or starts_name(toks[i])):
                j = i
                while node is not None:
                    if _END in node:
                        best = (node[_END], j + 1)
                    j += 1
                    if j >= n:
                        break
                    node = node.get(folded[j])
            if best is None:
                i += 1
                continue
            yield Match(best[0], i, best[1])
            i = best[1]


#: FNV-1a, 64 bits (Fowler, Noll and Vo): the stable hash of :class:`HashedNames`.
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


def fnv1a(data: bytes, h: int = _FNV_OFFSET) -> int:
    """The 64-bit FNV-1a hash of ``data``, continued from the state ``h`` (so a key's hash extends its prefix's)."""
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def key_hashes(keys: Sequence[str], workers: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fnv1a` of every key's UTF-8 and of each of its prefixes that ends before a space, as ``uint64``:
    (one hash per key, the prefixes' hashes in no particular order).

    Vectorised across keys, byte position by byte position (the keys sorted by
    length, so the keys still running are a leading slice): the work is the
    keys' total bytes in numpy, ~1 s per million keys, where a Python loop
    over them takes ~10 s. From :data:`THREAD_KEYS` keys a part, the keys are
    cut into ``workers`` parts (default: up to two, the cores there are)
    hashed on threads of their own (numpy releases the GIL); each key's hash
    is its own, so the result is the same.
    """
    workers = min(2, os.cpu_count() or 1) if workers is None else workers
    parts = min(workers, len(keys) // THREAD_KEYS)
    if parts <= 1:
        return _key_hashes(keys)
    bounds = np.linspace(0, len(keys), parts + 1).astype(np.int64).tolist()
    with ThreadPoolExecutor(max_workers=parts, thread_name_prefix="gearag-hash") as pool:
        done = list(pool.map(_key_hashes, [keys[a:b] for a, b in pairwise(bounds)]))
    return np.concatenate([d[0] for d in done]), np.concatenate([d[1] for d in done])


#: Keys a part from which :func:`key_hashes` hashes on threads.
THREAD_KEYS = 1 << 19


def _key_hashes(keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`key_hashes` on the calling thread."""
    data = [k.encode("utf-8", "surrogatepass") for k in keys]
    lengths = np.fromiter(map(len, data), dtype=np.int64, count=len(data))
    order = np.argsort(-lengths, kind="stable")
    buf = np.frombuffer(b"".join([data[i] for i in order.tolist()]), dtype=np.uint8)  # a list: 30% faster
    del data
    lens = lengths[order]
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    h = np.full(len(keys), _FNV_OFFSET, dtype=np.uint64)
    prime = np.uint64(_FNV_PRIME)
    prefixes: list[np.ndarray] = []
    running = len(keys)
    for k in range(int(lens[0]) if len(lens) else 0):
        while running and lens[running - 1] <= k:
            running -= 1
        byte = buf[starts[:running] + k]
        space = byte == 0x20
        if space.any():
            prefixes.append(h[:running][space])
        h[:running] = (h[:running] ^ byte) * prime
    out = np.empty_like(h)
    out[order] = h
    return out, (np.concatenate(prefixes) if prefixes else np.zeros(0, dtype=np.uint64))


class HashedNames(_NameTokens):
    """The names of a :class:`TokenTrie` as sorted 64-bit hashes: the same ``scan``, ~16 bytes per name.

    The trie's nested dicts cost ~0.5 KB per name (3 GB for the 6.7M entity
    keys of a million-passage index); here each name and each of its token
    prefixes is one ``uint64`` (:func:`fnv1a` of its folded tokens joined by
    spaces, which tokens never contain) in sorted arrays searched per scan
    step. The hash is stable across processes, so the arrays can be stored
    with an index and memory-mapped (:mod:`gearag.graph.prepared`): a scan
    then touches a few pages per step, whatever the number of names. Names
    are added with :meth:`add` (or all at once, :meth:`from_keys`) and
    frozen by :meth:`freeze` before the first scan. Two different names
    share a hash with a chance of about n²/2^65 — about 10^-5 at 17M names
    and prefixes — and a question could then match the wrong name.
    """

    def __init__(self, case_sensitive: bool = False) -> None:
        self.case_sensitive = case_sensitive
        self._keys: list[str] = []
        self._ids: list[int] = []
        self.nodes = np.zeros(0, dtype=np.uint64)  #: every name and name prefix, sorted
        self.name_hashes = np.zeros(0, dtype=np.uint64)  #: every name, sorted
        self.name_ids = np.zeros(0, dtype=np.int64)  #: the id of each of ``name_hashes``

    @classmethod
    def from_keys(cls, keys: Sequence[str], ids: np.ndarray) -> HashedNames:
        """Frozen names from keys already folded and joined by single spaces (:func:`name_key`'s form)."""
        out = cls()
        out._freeze(keys, np.asarray(ids, dtype=np.int64))
        return out

    @classmethod
    def from_arrays(cls, nodes: np.ndarray, name_hashes: np.ndarray, name_ids: np.ndarray) -> HashedNames:
        """Frozen names from their stored arrays (:meth:`arrays`; memory-mapped ones are not copied)."""
        out = cls()
        out.nodes, out.name_hashes, out.name_ids = nodes, name_hashes, name_ids
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        return {"nodes": self.nodes, "name_hashes": self.name_hashes, "name_ids": self.name_ids}

    def add(self, name: str | list[str], value: int) -> None:
        """Register ``name`` (a string or its tokens) with id ``value``; a later add of the same name wins."""
        toks = self._name_tokens(name)
        if toks:
            self._keys.append(" ".join(toks))
            self._ids.append(value)

    def freeze(self) -> HashedNames:
        keys, ids = self._keys, np.asarray(self._ids, dtype=np.int64)
        self._keys, self._ids = [], []
        self._freeze(keys, ids)
        return self

    def _freeze(self, keys: Sequence[str], ids: np.ndarray) -> None:
        names, prefixes = key_hashes(keys)
        # The last add of a name wins (as in the trie): sorted stably, the last of each run of equal hashes.
        order = np.argsort(names, kind="stable")
        ordered = names[order]
        last = np.ones(len(ordered), dtype=bool)
        last[:-1] = ordered[1:] != ordered[:-1]
        self.name_hashes, self.name_ids = ordered[last], ids[order[last]]
        nodes = np.sort(np.concatenate([self.name_hashes, prefixes]))
        keep = np.ones(len(nodes), dtype=bool)
        keep[1:] = nodes[1:] != nodes[:-1]
        self.nodes = nodes[keep]

    @property
    def size(self) -> int:
        return len(self.name_hashes)

    @staticmethod
    def _find(sorted_hashes: np.ndarray, h: int) -> int:
        """Position of ``h`` in ``sorted_hashes``, -1 when absent."""
        pos = int(np.searchsorted(sorted_hashes, np.uint64(h)))
        return pos if pos < len(sorted_hashes) and int(sorted_hashes[pos]) == h else -1

    def _has_node(self, h: int) -> bool:
        """Whether ``h`` is the hash of a name or of a name's token prefix."""
        return self._find(self.nodes, h) >= 0

    def _id_of(self, h: int) -> int | None:
        """The id of the name hashed ``h``, None when no name has that hash."""
        pos = self._find(self.name_hashes, h)
        return int(self.name_ids[pos]) if pos >= 0 else None

    def get(self, name: str | list[str]) -> int | None:
        toks = self._name_tokens(name)
        return self._id_of(fnv1a(" ".join(toks).encode("utf-8", "surrogatepass"))) if toks else None

    def scan(self, toks: list[str], require_capital: bool = False) -> Iterator[Match]:
        """Leftmost-longest, non-overlapping matches in ``toks``, exactly as :meth:`TokenTrie.scan`."""
        folded = [t.encode("utf-8", "surrogatepass") for t in self._fold(toks)]
        n = len(folded)
        i = 0
        while i < n:
            best = None
            if not require_capital or starts_name(toks[i]):
                j, key = i, fnv1a(folded[i])
                while self._has_node(key):
                    found = self._id_of(key)
                    if found is not None:
                        best = (found, j + 1)
                    j += 1
                    if j >= n:
                        break
                    key = fnv1a(b" " + folded[j], key)
            if best is None:
                i += 1
                continue
            yield Match(best[0], i, best[1])
            i = best[1]


class NameLookup(_NameTokens):
    """Name keys → ids in one dict: the same ``scan`` as :class:`TokenTrie`, exact, built in one pass.

    Keys are names as :func:`name_key` writes them (case-folded tokens joined
    by spaces). At a token that starts some key the scan tries the longest
    span first, down to one token: the first key found is the trie's
    leftmost-longest match, since every prefix of a key is a trie node. The
    trie's nested dicts cost ~13 µs and ~0.5 KB per name to build (20 s for
    the 1.5M lexicon names of a million-passage index, rebuilt by every
    ``gearag add``); this costs a dict entry per name and one per first token.
    """

    def __init__(self, keys: Iterable[str], ids: dict[str, int] | None = None,
                 longest: tuple[dict[str, int], int] | None = None) -> None:
        """``ids``: ``keys`` → their positions, when the caller has that dict already (it is kept, not copied);
        ``longest``: :attr:`longest` of the first ``n`` keys (or of more keys, since gone) and ``n``, extended
        here with the rest instead of computed for every key (it is updated, not copied)."""
        self.case_sensitive = False
        keys = keys if isinstance(keys, list) else list(keys)
        self.ids: dict[str, int] = ids if ids is not None else dict(zip(keys, range(len(keys)), strict=True))
        #: first token → most tokens in a key starting with it, or more: a span longer than any key only costs
        #: the scan a few failed lookups, and a first token no key starts with finds none (the same matches)
        if longest is None:
            self.longest: dict[str, int] = dict.fromkeys([k for k in keys if " " not in k], 1)
            more = [k for k in keys if " " in k]
        else:
            self.longest, more = longest[0], keys[longest[1]:]
        spans = self.longest
        for key in more:
            first, space, rest = key.partition(" ")
            n = rest.count(" ") + 2 if space else 1
            if spans.get(first, 0) < n:
                spans[first] = n

    @property
    def size(self) -> int:
        return len(self.ids)

    def scan(self, toks: list[str], require_capital: bool = False) -> Iterator[Match]:
        """Leftmost-longest, non-overlapping matches in ``toks``, exactly as :meth:`TokenTrie.scan`."""
        folded = self._fold(toks)
        n = len(folded)
        i = 0
        ids, longest = self.ids, self.longest
        while i < n:
            span = longest.get(folded[i], 0)
            if span and (not require_capital or starts_name(toks[i])):
                for j in range(min(n, i + span), i, -1):
                    value = ids.get(" ".join(folded[i:j]))
                    if value is not None:
                        yield Match(value, i, j)
                        i = j
                        break
                else:
                    i += 1
                continue
            i += 1
