"""Dense text embedders behind one interface."""

from gearag.embed.base import Embedder, make_embedder

__all__ = ["Embedder", "make_embedder"]
