"""Cluster summarisers behind one protocol: offline extractive and LLM.

A :class:`Summariser` turns every cluster of a tree level into one text. The
tree builder calls it once per level with all the level's clusters, so an
implementation can batch (the extractive one embeds all new sentences at once;
the LLM one can rely on the LLM layer's cache and concurrency).

* :class:`ExtractiveSummariser` (offline). Deviation from the paper (GPT-4o
  "summarise with as many key details as needed"): the summary is made of
  whole sentences of the cluster's texts, those nearest the centroid of the
  members' embeddings, picked greedily with a redundancy penalty (MMR) within
  a word budget. A sentence is never cut; one longer than the budget is used
  only when nothing else fits. Each sentence keeps the header (the passage
  title) of the text it comes from, so ``"He was born in 1950."`` stays
  attributable; the output is blocks ``header\\nsentence sentence`` joined by
  blank lines, which the summariser reads back at the next level.
  Deterministic, and the same on every machine: scores are fixed-point dot
  products (:mod:`gearag.sirerag.exact`), ties break by position.
* :class:`LLMSummariser`: joins the cluster's texts with blank lines (as
  RAPTOR does) and calls ``summarize(text) -> str`` — the signature of
  :meth:`gearag.llm.roles.LLMRoles.summarize`. No length cap (as released).
  An empty summary (the reply held no text) is replaced by the extractive
  summary of the same cluster, unless the fallback is off (:mod:`gearag.llm.fallback`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from gearag.sirerag.exact import MAX_BITS, quantise

Encode = Callable[[Sequence[str]], np.ndarray]


@runtime_checkable
class Summariser(Protocol):
    """Summaries of clusters. ``clusters[i]`` are rows of ``texts``/``embeddings``."""

    #: Identity of the summariser and its settings (for caches and index metadata).
    key: str

    def summarise(
        self, clusters: Sequence[Sequence[int]], texts: Sequence[str], embeddings: np.ndarray
    ) -> list[str]: ...


# --------------------------------------------------------------------------- text units

_BLOCKS = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)]?\s+(?=[\"“'(\[]?[A-Z0-9])")
_ABBREV = frozenset(
    (
        "mr", "mrs", "ms", "dr", "st", "jr", "sr", "inc", "ltd", "co", "vs", "etc", "no", "mt", "gen", "col",
        "lt", "sgt", "capt", "prof", "rev", "ft", "u.s", "u.k", "e.g", "i.e", "approx", "jan", "feb", "mar",
        "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    )
)
_HEADER_MAX_WORDS = 12


def split_sentences(text: str) -> list[str]:
    """Sentences of one line of text (a regex splitter that respects common abbreviations and initials)."""
    text = " ".join(text.split())
    if not text:
        return []
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        piece = text[start : m.start()].rstrip("\"'”’)")
        last = piece.rsplit(" ", 1)[-1].rstrip(".!?").lower()
        if (len(last) == 1 and last.isalpha()) or last in _ABBREV:
            continue  # "J. R. R. Tolkien", "St. Louis"
        out.append(text[start : m.end()].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def _is_header(line: str) -> bool:
    """A short first line not ending like a sentence: a title (``"Amber (song)"``, ``"Arthur!"``).

    Titles may end in ``)``, ``!``, ``?`` or a quote; facts and sentences end in a period.
    """
    line = line.strip()
    return bool(line) and line[-1] not in ".;:," and len(line.split()) <= _HEADER_MAX_WORDS


def text_units(text: str) -> list[tuple[str, str]]:
    """``(header, sentence)`` pairs of a text: a leaf ``title\\nbody`` or a summary's blocks."""
    units: list[tuple[str, str]] = []
    for block in _BLOCKS.split(text.strip()):
        lines = [ln for ln in block.split("\n") if ln.strip()]
        header = ""
        if len(lines) > 1 and _is_header(lines[0]):
            header, lines = lines[0].strip(), lines[1:]
        for line in lines:
            units.extend((header, s) for s in split_sentences(line))
    return units


def render_units(units: Sequence[tuple[str, str]]) -> str:
    """Blocks of consecutive units under the same header; headerless units one per line."""
    blocks: list[str] = []
    i = 0
    while i < len(units):
        header = units[i][0]
        j = i
        while j < len(units) and units[j][0] == header:
            j += 1
        sentences = [s for _, s in units[i:j]]
        blocks.append(f"{header}\n{' '.join(sentences)}" if header else "\n".join(sentences))
        i = j
    return "\n\n".join(blocks)


# --------------------------------------------------------------------------- extractive


@dataclass(frozen=True, slots=True)
class ExtractiveConfig:
    """Options of :class:`ExtractiveSummariser` (all ours: the paper's summaries come from GPT-4o)."""

    #: Word budget of a summary (RAPTOR caps LLM summaries at 100 tokens, SiReRAG does not cap).
    max_words: int = 120
    #: MMR trade-off: 1.0 = nearest to the centroid only, lower = more diverse.
    mmr_lambda: float = 0.75
    #: At most this many sentences from any one member text (spreads the summary over members).
    max_per_text: int = 2


def extractive_key(config: ExtractiveConfig) -> str:
    """The :attr:`ExtractiveSummariser.key` of ``config``: bump its version when the summaries change."""
    return f"extractive-v3:w{config.max_words}:l{config.mmr_lambda}:p{config.max_per_text}"


class ExtractiveSummariser:
    """Offline summaries: the sentences nearest the cluster centroid, within a word budget."""

    def __init__(self, encode: Encode, config: ExtractiveConfig | None = None) -> None:
        self.config = config or ExtractiveConfig()
        self.key = extractive_key(self.config)
        self._encode = encode
        self._cache: dict[str, np.ndarray] = {}

    def _vectors(self, keys: Sequence[str]) -> None:
        missing = [k for k in dict.fromkeys(keys) if k not in self._cache]
        if missing:
            vecs = np.asarray(self._encode(missing), dtype=np.float32)
            for k, v in zip(missing, vecs, strict=True):
                self._cache[k] = v

    def summarise(
        self, clusters: Sequence[Sequence[int]], texts: Sequence[str], embeddings: np.ndarray
    ) -> list[str]:
        needed = sorted({int(r) for c in clusters for r in c})
        units_of = {r: text_units(texts[r]) for r in needed}
        self._vectors([_unit_key(u) for r in needed for u in units_of[r]])
        return [self._one([int(r) for r in c], units_of, embeddings) for c in clusters]

    def _one(self, rows: list[int], units_of: dict[int, list[tuple[str, str]]], embeddings: np.ndarray) -> str:
        cfg = self.config
        # Candidate units in cluster order, each once (first occurrence wins).
        cands: list[tuple[str, str]] = []
        owner: list[int] = []
        seen: set[tuple[str, str]] = set()
        for pos, r in enumerate(rows):
            for u in units_of[r]:
                if u not in seen:
                    seen.add(u)
                    cands.append(u)
                    owner.append(pos)
        if not cands:
            return ""
        # Scores in fixed point (gearag.sirerag.exact): a float32 BLAS product differs in its last bits
        # between CPUs, enough to swap two near-equal sentences and so the summary and the level above.
        # Every dot product below is a sum of integers, exact in any order; each score is rounded once.
        centroid = np.asarray(embeddings[rows], dtype=np.float64).mean(axis=0)
        peak = float(np.abs(centroid).max())
        vecs = quantise(np.stack([self._cache[_unit_key(u)] for u in cands]), MAX_BITS)
        unit = 2.0 ** (-2 * MAX_BITS)
        rel = np.zeros(len(cands))
        if peak > 0:
            c = quantise(centroid / peak, MAX_BITS)
            rel = (vecs @ c) / (math.sqrt(float(c @ c)) * 2.0**MAX_BITS)  # cosine to the centroid
        words = np.array([len(s.split()) for _, s in cands])
        chosen: list[int] = []
        used = 0
        per_text: dict[int, int] = {}
        redundancy = np.zeros(len(cands))
        available = np.ones(len(cands), dtype=bool)
        while available.any():
            score = cfg.mmr_lambda * rel - (1 - cfg.mmr_lambda) * redundancy
            score = np.where(available, score, -np.inf)
            best = int(np.argmax(score))  # first maximum: deterministic ties by position
            available[best] = False
            fits = used + words[best] <= cfg.max_words
            if not (fits or not chosen) or per_text.get(owner[best], 0) >= cfg.max_per_text:
                continue
            chosen.append(best)
            used += int(words[best])
            per_text[owner[best]] = per_text.get(owner[best], 0) + 1
            redundancy = np.maximum(redundancy, (vecs @ vecs[best]) * unit)  # exact integer products
            if used >= cfg.max_words:
                break
        chosen.sort()  # back to cluster order, so a text's sentences stay in sequence
        return render_units([cands[i] for i in chosen])


def _unit_key(unit: tuple[str, str]) -> str:
    header, sentence = unit
    return f"{header}\n{sentence}" if header else sentence


# --------------------------------------------------------------------------- LLM


class SummarizeRole(Protocol):
    def summarize(self, text: str) -> str: ...


class LLMSummariser:
    """Summaries from an LLM role (``LLMRoles.summarize``); children joined by blank lines.

    With a ``checkpoint`` (:class:`gearag.store.checkpoint.KeyedCheckpoint`)
    each cluster's summary is stored under a hash of its input as soon as it
    arrives, and a cluster already there is never sent again: a killed build
    rebuilds the same clusters (the tree is deterministic) and pays only for
    the ones it had not finished. Clusters run ``concurrency`` at a time.

    ``fallback`` (default: the role's ``llm_fallback``, else on): a cluster whose summary is empty gets
    the :class:`ExtractiveSummariser`'s (``offline`` config) of the same cluster, and each cluster counts
    as one ``summarize`` reply (:func:`gearag.llm.fallback.played`). The extractive summary needs sentence
    vectors: ``encode`` (without one there is no fallback). The checkpoint keeps the model's summaries under
    the ``key`` given, so it serves the fallback on or off; :attr:`key` (what tree levels and the manifest are keyed
    by) ends in ``+fallback:<extractive key>`` when the fallback is on. Deterministic: the extractive
    summary of a cluster depends on that cluster alone.
    """

    def __init__(
        self, role: SummarizeRole, key: str = "llm", *, checkpoint: Any = None, concurrency: int = 1,
        fallback: bool | None = None, encode: Encode | None = None, offline: ExtractiveConfig | None = None,
    ) -> None:
        self._role = role
        self._raw_key = key
        self._checkpoint = checkpoint
        self._concurrency = max(1, concurrency)
        # The extractive summary needs sentence vectors: no encoder, no fallback.
        self.fallback = encode is not None and (bool(getattr(role, "llm_fallback", True)) if fallback is None
                                                else fallback)
        self.encode = encode
        self._offline_config = offline or ExtractiveConfig()
        self._offline: ExtractiveSummariser | None = None
        #: Identity of the summaries this summariser gives (the model's, and with the fallback what replaces
        #: an empty one).
        self.key = f"{key}+fallback:{extractive_key(self._offline_config)}" if self.fallback else key

    def _one(self, text: str) -> str:
        return (self._role.summarize(text) or "").strip()

    def summarise(
        self, clusters: Sequence[Sequence[int]], texts: Sequence[str], embeddings: np.ndarray
    ) -> list[str]:
        return self._played(clusters, texts, embeddings, self._replies(clusters, texts))

    def _replies(self, clusters: Sequence[Sequence[int]], texts: Sequence[str]) -> list[str]:
        """The model's summary of every cluster, from the checkpoint where it is there."""
        from gearag.llm.base import ordered_map
        from gearag.store.checkpoint import text_key

        joined = ["\n\n".join(texts[int(r)] for r in c) for c in clusters]
        if self._checkpoint is None:
            return list(ordered_map(self._one, joined, self._concurrency))
        keys = [text_key(self._raw_key, j) for j in joined]
        first = {k: i for i, k in reversed(list(enumerate(keys)))}
        todo = [i for k, i in first.items() if k not in self._checkpoint]
        todo.sort()
        for i, summary in zip(todo, ordered_map(lambda i: self._one(joined[i]), todo, self._concurrency), strict=True):
            self._checkpoint.add(keys[i], summary)
        return [str(self._checkpoint.get(k)) for k in keys]

    def _played(self, clusters: Sequence[Sequence[int]], texts: Sequence[str], embeddings: np.ndarray,
                replies: list[str]) -> list[str]:
        """``replies`` with each empty one replaced by the extractive summary of its cluster (fallback on)."""
        from gearag.llm.fallback import played_all
        from gearag.llm.roles.sirerag import SUMMARIZE

        def offline(rows: list[int]) -> list[str]:
            if self._offline is None:  # one per summariser: its sentence vectors serve every level
                assert self.encode is not None
                self._offline = ExtractiveSummariser(self.encode, self._offline_config)
            return self._offline.summarise([clusters[i] for i in rows], texts, embeddings)

        return played_all(SUMMARIZE.name, replies, [bool(text) for text in replies],
                          offline if self.fallback else None)
