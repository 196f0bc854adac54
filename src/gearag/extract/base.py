"""The triple-extractor seam.

An extractor turns passages into raw triples, one list of
:class:`~gearag.model.Fact` (``subject``, ``predicate``, ``object`` as text,
``source=None``) per passage, in input order. The index builder ties each
triple to its passage, normalises entities and builds the triple graph;
extractors only read text.

Extractors are named by a spec string (the CLI's ``--extractor``):

* ``spacy`` — offline rules over spaCy's parse and named entities (default);
* ``openie:FILE`` — precomputed OpenIE results in HippoRAG's JSON format;
* ``llm`` — an LLM with the triple-extraction prompt (the LLM layer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from gearag.errors import ConfigError
from gearag.model import Fact, Passage
from gearag.registry import REGISTRY, register


@runtime_checkable
class TripleExtractor(Protocol):
    """Reads passages, yields their triples."""

    #: Stable identity of the extractor and its settings; keys the resumable
    #: extraction checkpoint, so change it whenever output would change.
    key: str

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[Fact]]:
        """Yield one list of triples per passage, in the order given.

        Implementations may batch internally but must yield in order and
        lazily, so that the caller can checkpoint and show progress.
        """
        ...


ExtractorFactory = Callable[[str, dict[str, object]], TripleExtractor]


def register_extractor(name: str, factory: ExtractorFactory | str, help: str = "") -> None:
    """Register ``factory(arg, options)`` for specs ``name`` or ``name:arg`` (in :data:`gearag.registry.REGISTRY`)."""
    register("extractor", name, factory, help=help)


def make_extractor(spec: str, **options: object) -> TripleExtractor:
    """Build an extractor from a spec such as ``spacy`` or ``openie:path.json``.

    ``options`` go to the extractor's factory (the LLM extractor takes
    ``llm_base_url=``, ``llm_model=`` and ``llm_gguf=``; spaCy ``processes=``); others ignore them.
    """
    name, _, arg = spec.partition(":")
    try:
        entry = REGISTRY.entry("extractor", name)
    except ConfigError:
        raise ConfigError(f"unknown extractor {spec!r} (known: {', '.join(REGISTRY.names('extractor'))})") from None
    return entry.load()(arg, dict(options))
