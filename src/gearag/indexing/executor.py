"""Where the per-passage build stages run: the executor seam.

Extraction and embedding are the two stages whose work is independent per
row (a passage's triples, a text's vector), so they can be spread over
workers. They do not loop over rows themselves: they hand the rows to the
build's :class:`BatchExecutor`, which returns each row's result keyed by its
position. The stages merge the results in row order, so the index is the
same whichever executor computed them.

* :class:`LocalExecutor` (default) runs in this process, exactly as a build
  always has: the extractor's own batching (spaCy's worker processes, the LLM
  extractor's concurrent requests), the embedder in batches of
  ``--embed-batch``.
* :class:`gearag.distributed.RayExecutor` (``gearag index --ray``) maps
  batches over Ray Data actors that load the extractor and the embedder once
  per worker (:mod:`gearag.distributed.ray_executor`).

Results may arrive in any order; the extraction stage appends each finished
row to the build's checkpoint as it arrives (driver side), so an interrupted
build resumes without extracting a row twice, whichever executor ran it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from gearag.embed import make_embedder
from gearag.extract.base import TripleExtractor
from gearag.model import Fact, Passage
from gearag.progress import track


@runtime_checkable
class BatchExecutor(Protocol):
    """Maps the per-row work of the extract and embed stages over rows."""

    #: Short name for the manifest and messages (``local``, ``ray``).
    name: str

    def extract(
        self, extractor: TripleExtractor, passages: Sequence[Passage], *, description: str
    ) -> Iterator[tuple[int, list[Fact]]]:
        """``(i, triples of passages[i])`` for every passage, each once, in any order, as they finish."""
        ...

    def embed(
        self, embedder: str, collections: Mapping[str, Sequence[str]], *, batch: int, description: str
    ) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        """Per collection, unit vectors of its texts with embedder ``embedder`` (row i = texts[i]),
        computed in chunks of ``batch`` texts; static embedders also give each text's token-sum
        norm (else ``None``). One call for every collection lets an executor start its workers once."""
        ...

    def describe(self) -> dict[str, Any]:
        """What the manifest records about how the build ran (``build_executor``)."""
        ...


def embed_chunk(embedder: Any, chunk: Sequence[str]) -> tuple[np.ndarray, np.ndarray | None]:
    """Unit vectors of one chunk of texts; static embedders also give the token-sum norms.

    Every row depends on its own text only, so splitting the texts into other
    chunks gives the same bits for a static embedder; a neural one pads each
    chunk to its longest text, so executors cut chunks where
    :func:`embed_texts` does (see docs/distributed.md for what still differs).
    """
    token_sums = getattr(embedder, "token_sums", None)
    if token_sums is None:
        return np.asarray(embedder.encode(list(chunk)), dtype=np.float32), None
    sums, _ = token_sums(list(chunk))
    norms = np.linalg.norm(sums, axis=1)
    np.divide(sums, norms[:, None], out=sums, where=norms[:, None] > 0)
    return sums, norms.astype(np.float32, copy=False)


def embed_texts(
    embedder: Any, texts: Sequence[str], description: str, batch: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """Unit vectors for ``texts`` in chunks of ``batch``; static embedders also give the token-sum norms."""
    vectors = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    weights = np.zeros(len(texts), dtype=np.float32) if hasattr(embedder, "token_sums") else None
    starts = range(0, len(texts), batch)
    for start in track(starts, total=len(starts), description=description):
        chunk_vectors, chunk_weights = embed_chunk(embedder, texts[start : start + batch])
        vectors[start : start + len(chunk_vectors)] = chunk_vectors
        if weights is not None and chunk_weights is not None:
            weights[start : start + len(chunk_weights)] = chunk_weights
    return vectors, weights


class LocalExecutor:
    """The in-process executor: today's code path, one process (plus the extractor's own workers)."""

    name = "local"

    def extract(
        self, extractor: TripleExtractor, passages: Sequence[Passage], *, description: str
    ) -> Iterator[tuple[int, list[Fact]]]:
        yield from enumerate(track(extractor.extract(passages), total=len(passages), description=description))

    def embed(
        self, embedder: str, collections: Mapping[str, Sequence[str]], *, batch: int, description: str
    ) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        model = make_embedder(embedder)
        return {name: embed_texts(model, texts, f"{description} {name}", batch) for name, texts in collections.items()}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


#: The executor of builds that name none.
LOCAL = LocalExecutor()
