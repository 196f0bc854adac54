"""Triple extraction for the offline index: one interface, several extractors."""

from gearag.extract.base import RawTriple, TripleExtractor, make_extractor

__all__ = ["RawTriple", "TripleExtractor", "make_extractor"]
