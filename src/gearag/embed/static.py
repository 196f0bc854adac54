"""Static (averaged token vector) embeddings, with exact concatenation arithmetic."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gearag.embed.base import normalise_rows
from gearag.errors import ConfigError

#: Token budget per gather; bounds peak memory at about this × dim × 4 bytes.
_TOKENS_PER_CHUNK = 200_000


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
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)  # type: ignore[attr-defined]
        top = self.vectors.shape[0] - 1
        return [[min(i, top) for i in enc.ids] for enc in encoded]

    def token_sums(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per-text sums of token vectors ``(n, dim)`` and token counts ``(n,)``."""
        n = len(texts)
        sums = np.zeros((n, self.dim), dtype=np.float32)
        counts = np.zeros(n, dtype=np.int32)
        start = 0
        batch = 2048
        while start < n:
            ids = self.token_ids(texts[start : start + batch])
            self._accumulate(ids, sums[start : start + len(ids)], counts[start : start + len(ids)])
            start += batch
        return sums, counts

    def _accumulate(self, ids: list[list[int]], sums: np.ndarray, counts: np.ndarray) -> None:
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        counts[:] = lengths
        row = 0
        while row < len(ids):
            # Gather a chunk of rows whose tokens fit the budget (at least one row).
            end, budget = row, 0
            while end < len(ids) and (end == row or budget + lengths[end] <= _TOKENS_PER_CHUNK):
                budget += int(lengths[end])
                end += 1
            flat = np.fromiter((t for x in ids[row:end] for t in x), dtype=np.int64, count=budget)
            if budget:
                # Rows with no tokens keep their zero sum; reduceat over the
                # start offsets of the others sums each row's slice.
                offsets = np.concatenate(([0], np.cumsum(lengths[row:end])[:-1]))
                nonempty = lengths[row:end] > 0
                block = sums[row:end]
                block[nonempty] = np.add.reduceat(self.vectors[flat], offsets[nonempty], axis=0)
            row = end

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        sums, _ = self.token_sums(texts)
        return normalise_rows(sums)
