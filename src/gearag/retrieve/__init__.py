"""Base retrievers over any collection of an index: BM25, dense and hybrid (RRF)."""

from gearag.retrieve.base import Retriever
from gearag.retrieve.factory import make_retriever
from gearag.retrieve.fusion import rrf

__all__ = ["Retriever", "make_retriever", "rrf"]
