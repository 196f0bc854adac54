"""Loading corpora and question sets from the formats people publish them in."""

from gearag.data.corpus import load_corpus
from gearag.data.questions import GoldMatcher, load_questions

__all__ = ["GoldMatcher", "load_corpus", "load_questions"]
