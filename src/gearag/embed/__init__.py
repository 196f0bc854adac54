"""Dense text embedders behind one interface."""

from gearag.embed.base import Embedder, index_embedder, make_embedder

__all__ = ["Embedder", "index_embedder", "make_embedder"]
