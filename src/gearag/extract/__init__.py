"""Triple extraction for the offline index: one interface, several extractors."""

from gearag.extract.base import TripleExtractor, make_extractor

__all__ = ["TripleExtractor", "make_extractor"]
