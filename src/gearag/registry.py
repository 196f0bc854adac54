"""One registry for every pluggable part of gearag.

Each entry is a *kind* (``method``, ``extractor``, ``embedder``,
``retriever``, ``engine``), a *name*, a factory given as ``"module:attr"``
and imported only when the entry is used (so ``import gearag`` stays light),
and optionally a frozen config dataclass with documented defaults. The CLI
derives its options from those dataclasses (:mod:`gearag.options`), so every
default lives in exactly one place.

Factory signatures by kind:

* ``method``    — ``factory(index, config) -> Method`` (``Method(question, k) -> Result``);
* ``retriever`` — ``factory(index, collection, config) -> Retriever``;
* ``engine``    — ``factory(index, config) -> Engine`` (the agent's roles);
* ``embedder``  — ``factory() -> Embedder``;
* ``backend``   — ``factory(location, verify=False) -> Index`` (where an index is stored);
* ``extractor`` — ``factory(arg, config) -> TripleExtractor`` (``arg`` is the
  part after ``:`` in a spec such as ``openie:FILE``).

Adding a part is one module plus one :func:`register` call; the built-ins
are the table at the end of this module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gearag.errors import ConfigError

KINDS = ("method", "extractor", "embedder", "retriever", "engine", "backend")


def _import(target: str) -> Any:
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class Entry:
    """One registered part: where its factory and its config class live."""

    kind: str
    name: str
    factory: str | Callable[..., Any]
    config: str | type | None = None
    help: str = ""

    def load(self) -> Callable[..., Any]:
        """The factory, imported on first use."""
        return _import(self.factory) if isinstance(self.factory, str) else self.factory

    def config_class(self) -> type | None:
        """The frozen config dataclass, or None for parts without settings."""
        return _import(self.config) if isinstance(self.config, str) else self.config


class Registry:
    """Name → :class:`Entry` per kind; aliases resolve to a canonical name."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self._aliases: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}

    def register(
        self,
        kind: str,
        name: str,
        factory: str | Callable[..., Any],
        config: str | type | None = None,
        *,
        help: str = "",
        aliases: tuple[str, ...] = (),
    ) -> None:
        if kind not in self._entries:
            raise ValueError(f"unknown registry kind {kind!r} (choose from {', '.join(KINDS)})")
        self._entries[kind][name] = Entry(kind, name, factory, config, help)
        for alias in aliases:
            self._aliases[kind][alias] = name

    def names(self, kind: str) -> list[str]:
        return list(self._entries[kind])

    def entry(self, kind: str, name: str) -> Entry:
        """The entry called ``name`` (or an alias of it); a ConfigError names the choices otherwise."""
        table = self._entries[kind]
        canonical = self._aliases[kind].get(name, name)
        if canonical not in table:
            raise ConfigError(f"unknown {kind} {name!r} (choose from {', '.join(table)})")
        return table[canonical]


REGISTRY = Registry()
register = REGISTRY.register

# ---------------------------------------------------------------------------- built-in parts
_R = "gearag.retrieve.config:RetrieverConfig"
register("retriever", "bm25", "gearag.retrieve.bm25:bm25_retriever", _R, help="BM25 (bm25s, Lucene variant)")
register("retriever", "dense", "gearag.retrieve.dense:dense_retriever", _R, help="cosine over the index's embeddings")
register("retriever", "hybrid", "gearag.retrieve.hybrid:hybrid_retriever", _R, help="RRF of bm25 and dense")

_M = "gearag.baselines.qa:BaseMethodConfig"
register("method", "bm25", "gearag.baselines.base_method:BaseMethod.bm25", _M, help="BM25 over passages or a pool")
register("method", "dense", "gearag.baselines.base_method:BaseMethod.dense", _M,
         help="dense retrieval over passages or a pool")
register("method", "hybrid", "gearag.baselines.base_method:BaseMethod.hybrid", _M, help="RRF of BM25 and dense")
register("method", "naivege", "gearag.expand.methods:NaiveGE", "gearag.expand.config:NaiveGEConfig",
         help="graph expansion from all triples of the base passages (GEAR §6.2)")
register("method", "syncge", "gearag.expand.methods:SyncGE", "gearag.expand.config:SyncGEConfig",
         help="reader → tripleLink → diverse triple beam search, RRF with the base passages (GEAR §4)")
register("method", "titlelink", "gearag.baselines.titlelink:TitleLinkRetriever",
         "gearag.baselines.titlelink:TitleLinkConfig",
         help="baseline: BM25 plus the passages whose titles the top passages mention")
register("method", "gear", "gearag.agent.method:GearMethod", "gearag.agent.config:AgentConfig",
         help="the GEAR agent: SyncGE per step, gist memory, reasoning, rewriting, passageLink (GEAR §5)")

_B = "gearag.baselines"
register("method", "hipporag", f"{_B}.hipporag_method:HippoRAG", f"{_B}.config:HippoRAGConfig",
         help="HippoRAG v1: query entities → phrase nodes, PPR (damping 0.5), passages through their phrases")
register("method", "hipporag2", f"{_B}.hipporag_method:HippoRAG2", f"{_B}.config:HippoRAG2Config",
         help="HippoRAG 2: top facts → phrase seeds, dense passage seeds × 0.05, PPR over phrases and passages")
register("method", "ircot", f"{_B}.ircot:IRCoT", f"{_B}.config:IRCoTConfig",
         help="IRCoT: retrieve, one reasoning sentence, retrieve with it, up to max steps")
register("method", "hipporag-ircot", f"{_B}.ircot:HippoRAGIRCoT", f"{_B}.config:HippoRAGIRCoTConfig",
         help="HippoRAG w/ IRCoT: IRCoT's loop with HippoRAG retrieving at every step")

register("engine", "offline", "gearag.agent.offline:offline_engine", help="model-free roles (default)")
register("engine", "openai", "gearag.agent.llm_engine:llm_engine", aliases=("llm",),
         help="any OpenAI-compatible endpoint with the paper's prompts")
register("engine", "local", "gearag.agent.llm_engine:llm_engine",
         help="a GGUF model in process (llama.cpp; bundled SmolLM2-135M), the paper's prompts; extra local")

register("embedder", "wordllama", "gearag.embed.static:StaticEmbedder.wordllama",
         help="256-d static token vectors shipped in the wordllama wheel (no torch)")
register("embedder", "minilm", "gearag.embed.neural:SentenceTransformerEmbedder.minilm",
         help="all-MiniLM-L6-v2 via sentence-transformers (extra `neural`)")

register("extractor", "spacy", "gearag.extract.spacy:make_spacy_extractor", help="offline spaCy dependency rules")
register("extractor", "openie", "gearag.extract.openie:make_openie_extractor", help="HippoRAG OpenIE JSON: openie:FILE")
register("extractor", "llm", "gearag.extract.llm:make_llm_extractor", help="an LLM with the extraction prompt")
register("backend", "embedded", "gearag.store.index:Index.open", help="an index directory (default)")
register("backend", "lance", "gearag.store.lance.index:open_lance_index",
         help="Lance tables in a directory or object storage (extra `lance`; `gearag export`)")


def _load_plugins() -> None:
    """Let installed packages add parts: each ``gearag.plugins`` entry point is called with the registry.

    A plugin package declares, in its ``pyproject.toml``::

        [project.entry-points."gearag.plugins"]
        mine = "my_package.gearag_plugin:register"

    and ``register(registry)`` calls ``registry.register(...)``. Plugins are
    loaded once, when this module is first imported, so the CLI lists their
    methods and options like the built-ins.
    """
    from importlib.metadata import entry_points

    for ep in entry_points(group="gearag.plugins"):
        ep.load()(REGISTRY)


_load_plugins()
