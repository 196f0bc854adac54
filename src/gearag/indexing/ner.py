"""The passages' named-entity spans, a per-passage file every index built with ``--index-ner-mentions`` keeps.

The NER mention edge kind (:mod:`gearag.graph.edge_kinds`) reads the spans of
every passage of the corpus. They depend on the passage alone, so each build
and each shard an add writes computes them once for its own passages
(:class:`NerStage`, ``ner_spans.jsonl``: one JSON list of span texts per
passage row); a generation reads them back from its shards
(:func:`stored_ner_spans`) instead of running spaCy over the corpus again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson

from gearag.config import ResolveConfig
from gearag.errors import IndexFormatError
from gearag.graph.edge_kinds import EDGE_KINDS, stored_kinds
from gearag.graph.ner import ner_spans
from gearag.indexing.stage import Build

#: The spans' file, beside ``passages.jsonl`` (row ``i``: passage row ``i``'s span texts).
NER_SPANS = "ner_spans.jsonl"


def keeps_ner_spans(config: ResolveConfig) -> bool:
    """Whether an index built with ``config`` stores NER mentions (and so keeps its passages' spans)."""
    return EDGE_KINDS["ner_mentions"] in stored_kinds(config)


class NerStage:
    """Named-entity spans of the build's passages (:func:`gearag.graph.ner.ner_spans`), written and kept."""

    name = "ner"

    def run(self, build: Build) -> None:
        if not keeps_ner_spans(build.config.resolve):
            return
        build.ner_spans = ner_spans([p.text for p in build.passages])
        build.writer.write_jsonl(NER_SPANS, build.ner_spans)


def stored_ner_spans(directory: Path, texts: Sequence[str]) -> list[list[str]]:
    """The spans ``directory`` (an index or a shard of ``len(texts)`` passages) keeps; computed from ``texts``
    when it keeps none (built before they were kept)."""
    path = directory / NER_SPANS
    if not path.exists():
        return ner_spans(texts)
    spans = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    if len(spans) != len(texts) or not all(isinstance(s, list) and all(isinstance(x, str) for x in s)
                                           for s in spans):
        raise IndexFormatError(f"{path}: not one list of span texts per passage ({len(texts)} passages); "
                               "rebuild the index")
    return spans
