"""Base retrievers over passages or triples: BM25, dense and hybrid (RRF)."""

from gearag.retrieve.base import Retriever
from gearag.retrieve.factory import BASE_METHODS, make_retriever
from gearag.retrieve.fusion import rrf

__all__ = ["BASE_METHODS", "Retriever", "make_retriever", "rrf"]
