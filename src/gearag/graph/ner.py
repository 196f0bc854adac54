"""Named-entity spans of passages, an optional mention source for entity resolution (``ResolveConfig.ner_mentions``).

LinearRAG (ICLR 2026) builds its whole graph from spaCy NER; HippoRAG links
query entities by NER. Here the spans are one more mention source: each span
that names something (not a date, number or quantity) is resolved like a
triple endpoint, a second stream of names in each shard's endpoint table
(:mod:`gearag.derive.endpoints`). The pipeline is the spaCy extractor's (:func:`gearag.extract.spacy.load_nlp`),
run with its ``ner`` component alone (it has its own token vectors), over
the same cleaned pieces the extractor parses.
"""

from __future__ import annotations

from collections.abc import Sequence

from gearag.progress import track

#: spaCy (OntoNotes) labels that name an entity; DATE, TIME, PERCENT, MONEY,
#: QUANTITY, ORDINAL and CARDINAL are values, not things with a page.
NAME_LABELS = frozenset({"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW",
                         "LANGUAGE"})

#: Documents per ``nlp.pipe`` batch.
BATCH = 64


def ner_spans(texts: Sequence[str]) -> list[list[str]]:
    """Per text, its distinct named-entity spans (first-seen order) whose label is in :data:`NAME_LABELS`."""
    from gearag.extract.spacy.clean import clean_text, split_pieces
    from gearag.extract.spacy.pipeline import load_nlp, parse

    nlp = load_nlp()
    pieces: list[str] = []
    owner: list[int] = []
    for i, text in enumerate(texts):
        for piece in split_pieces(clean_text(text)):
            pieces.append(piece)
            owner.append(i)
    out: list[dict[str, None]] = [{} for _ in texts]
    with nlp.select_pipes(enable=["ner"]):
        docs = parse(nlp, pieces, BATCH)  # calls of bounded characters: a long passage's pieces not all at once
        for i, doc in zip(owner, track(docs, total=len(pieces), description="named entities"), strict=True):
            for ent in doc.ents:
                if ent.label_ in NAME_LABELS and ent.text.strip():
                    out[i].setdefault(ent.text.strip(), None)
    return [list(d) for d in out]
