"""Static (averaged token vector) embeddings, with exact concatenation arithmetic."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from pathlib import Path

import numpy as np

from gearag.embed.base import normalise_rows
from gearag.errors import ConfigError

#: Texts tokenised and summed together by :meth:`StaticEmbedder.token_sums` (bounds its temporaries).
TEXTS_PER_BATCH = 2048


class StaticEmbedder:
    """Mean of static token vectors: ``embed(text) = sum(E[tokens]) / n_tokens``.

    Since cosine ignores scale, the direction of the embedding of a
    concatenation ``a ∘ b`` is ``sum_a + sum_b``: :meth:`token_sums` returns
    the per-text sums (and token counts) that make this exact.
    """

    def __init__(self, name: str, vectors: np.ndarray, tokenizer: object) -> None:
        self.name = name
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.dim = int(self.vectors.shape[1])
        self._tokenizer = tokenizer

    @classmethod
    def wordllama(cls) -> StaticEmbedder:
        """Load WordLlama's 256-d vectors from inside its wheel, never from the network."""
        import logging

        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise ConfigError("the 'wordllama' package is not installed") from exc
        finally:
            # wordllama calls logging.basicConfig(INFO) on import; undo it so that other
            # libraries' log records (bm25s, numba) do not flood the CLI's stderr.
            root.handlers[:], root.level = handlers, level
        model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(model.tokenizer.to_str())
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return cls("wordllama", model.embedding, tokenizer)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        flat, lengths = self._flat_ids(texts)
        return [ids.tolist() for ids in np.split(flat, np.cumsum(lengths)[:-1])] if len(texts) else []

    def _flat_ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The texts' token ids, one after the other (ids past the vocabulary clamped to its last), and each
        text's count."""
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)  # type: ignore[attr-defined]
        ids = [enc.ids for enc in encoded]  # each a new list: read once
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        return np.minimum(flat, self.vectors.shape[0] - 1), lengths

    def token_sums(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per-text sums of token vectors ``(n, dim)`` and token counts ``(n,)``.

        Each text's vectors are added one after the other in its token order
        (float32, from zero), so a row's bits depend on its own text only,
        whichever texts share the call. The sums are made position by
        position over the texts of a batch (every text's first token, then
        every second token, ...), never gathering every token's vector at
        once: at 143k tokens that took 0.05 s where a gather and
        ``np.add.reduceat`` (which sums in another order) took 0.8 s
        (docs/benchmarks-log.md, "Static embeddings summed position by position").
        """
        n = len(texts)
        sums = np.zeros((n, self.dim), dtype=np.float32)
        counts = np.zeros(n, dtype=np.int32)
        for start in range(0, n, TEXTS_PER_BATCH):
            flat, lengths = self._flat_ids(texts[start : start + TEXTS_PER_BATCH])
            counts[start : start + len(lengths)] = lengths
            self._accumulate(flat, lengths, sums[start : start + len(lengths)])
        return sums, counts

    def _accumulate(self, flat: np.ndarray, lengths: np.ndarray, sums: np.ndarray) -> None:
        """Add each text's token vectors (``flat``, ``lengths`` per text) into its row of ``sums``, in order."""
        if not len(flat):
            return
        starts = np.cumsum(lengths) - lengths
        longest_first = np.argsort(-lengths, kind="stable")
        # Texts with more than k tokens are the first ``reaching[k]`` of longest_first.
        reaching = np.searchsorted(-lengths[longest_first], -np.arange(int(lengths.max())), side="left")
        for k, n_rows in enumerate(reaching.tolist()):
            rows = longest_first[:n_rows]
            sums[rows] += self.vectors[flat[starts[rows] + k]]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        sums, _ = self.token_sums(texts)
        return normalise_rows(sums)
