"""Dense text embedders behind one interface."""

from gearag.embed.base import EMBEDDERS, Embedder, make_embedder

__all__ = ["EMBEDDERS", "Embedder", "make_embedder"]
