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
from itertools import chain

from gearag.progress import track

#: spaCy (OntoNotes) labels that name an entity; DATE, TIME, PERCENT, MONEY,
#: QUANTITY, ORDINAL and CARDINAL are values, not things with a page.
NAME_LABELS = frozenset({"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW",
                         "LANGUAGE"})


def _names_in(pieces: list[str]) -> list[list[str]]:
    """Per piece, its named-entity spans whose label is in :data:`NAME_LABELS`: one ``nlp.pipe`` call, the
    ``ner`` component alone (a worker's task)."""
    from gearag.extract.spacy.pipeline import load_nlp

    nlp = load_nlp()
    with nlp.select_pipes(enable=["ner"]):
        return [[e.text.strip() for e in doc.ents if e.label_ in NAME_LABELS and e.text.strip()]
                for doc in nlp.pipe(pieces, batch_size=len(pieces))]


def ner_spans(texts: Sequence[str]) -> list[list[str]]:
    """Per text, its distinct named-entity spans (first-seen order) whose label is in :data:`NAME_LABELS`.

    The pieces are parsed in runs of bounded characters (a long passage's pieces not all at once), in worker
    processes for a large input (:func:`gearag.extract.spacy.pool.processes_for`); each run is one spaCy call
    either way, so the spans do not depend on the number of processes.
    """
    from gearag.extract.spacy.pipeline import DEFAULT_BATCH_SIZE, DEFAULT_PARSE_CHARS, bounded_runs, text_pieces
    from gearag.extract.spacy.pool import processes_for, run_tasks

    pieces, owner = text_pieces(texts)
    runs = bounded_runs([len(p) for p in pieces], DEFAULT_BATCH_SIZE, DEFAULT_PARSE_CHARS)
    processes = processes_for(len(texts), sum(map(len, pieces)), len(runs))
    found = chain.from_iterable(run_tasks(_names_in, (pieces[a:b] for a, b in runs), processes))
    out: list[dict[str, None]] = [{} for _ in texts]
    for i, names in zip(owner, track(found, total=len(pieces), description="named entities"), strict=True):
        for name in names:
            out[i].setdefault(name, None)
    return [list(d) for d in out]
