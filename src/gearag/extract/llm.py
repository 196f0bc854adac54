"""Triple extraction with an LLM (GEAR §6.2, prompt of Appendix K.1): spec ``llm`` or ``llm:MODEL``.

Each passage is one request with the joint named-entity + triple prompt;
requests run concurrently (``LLMConfig.concurrency``) while results are
yielded lazily and in order, so :func:`gearag.extract.run.extract_with_checkpoint`
can append each finished passage to its checkpoint: a run killed at any point
resumes where it stopped, and with the response cache on (the default) even
replies that arrived out of order before the kill are not paid for again.

A reply that cannot be parsed is counted in :attr:`LLMTripleExtractor.parse_stats`.
A reply with nothing usable (the parser found no structure, or no triple) is,
with the fallback on (``fallback=True``; the ``llm`` spec's default, off with
``gearag index/add --no-llm-fallback``), replaced for that passage only by the
offline spaCy rules' triples of the same passage (:mod:`gearag.llm.fallback`),
and counted per role (``extract``) in :meth:`LLMTripleExtractor.fallbacks`, the
workers' reports and :meth:`~LLMTripleExtractor.summary`. The spaCy model is
loaded only when a fallback happens (in a worker process, there). Without the
fallback such a passage gets no triples. An endpoint that fails for good
raises :class:`~gearag.errors.LLMError` and stops the run, keeping the
checkpoint; so does a call that timed out for good, which query-time roles
play offline (:func:`gearag.llm.fallback.played_call`): here a rerun resumes
it, and the checkpoint never keeps spaCy triples for a passage the model
could have answered.

The key (:attr:`LLMTripleExtractor.key`), which names the extraction
checkpoint, ends in ``+fallback:spacy-rules-v1`` with the fallback on and is
the raw model's key, unchanged from before fallbacks existed, with it off: a
checkpoint (or an interrupted build) of the raw model is never resumed with
spaCy triples mixed in, nor the other way round. Both are deterministic (the
spaCy rules read one passage alone), so a resume or ``gearag add`` gives a
passage the triples a whole build would. An operator bound on the ``extract``
reply (``--llm-max-tokens extract=N``) is part of the key too.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from gearag.errors import ConfigError
from gearag.llm.base import LLM, ordered_map
from gearag.llm.bounds import bounds_fingerprint, check_overrides, parse_overrides
from gearag.llm.client import LLMClient
from gearag.llm.config import LLMConfig
from gearag.llm.fallback import describe, played, totals
from gearag.llm.parse import PARSER_VERSION, ParseStats
from gearag.llm.prompts import PromptSet
from gearag.llm.roles.gear import EXTRACT, extract_values
from gearag.llm.usage import UsageLedger, usage_scope
from gearag.model import Fact, Passage

if TYPE_CHECKING:
    from gearag.extract.spacy.extractor import SpacyRulesExtractor

#: Ledger role of extraction requests (and the role its fallbacks are counted under).
ROLE = EXTRACT.name
def _offline_extractor() -> SpacyRulesExtractor:
    """The offline engine an unusable reply falls back to: the spaCy rules, in this process (no spaCy loaded yet)."""
    from gearag.extract.spacy.extractor import SpacyExtractorConfig, SpacyRulesExtractor

    return SpacyRulesExtractor(SpacyExtractorConfig(processes=1))


class LLMTripleExtractor:
    """A :class:`~gearag.extract.base.TripleExtractor` backed by an :class:`~gearag.llm.base.LLM`."""

    def __init__(self, llm: LLM, *, prompts: PromptSet | None = None, concurrency: int | None = None,
                 fallback: bool = False) -> None:
        self.llm = llm
        self.prompts = prompts or PromptSet()
        self.concurrency = max(1, concurrency or getattr(llm, "concurrency", 1))
        self.parse_stats = ParseStats()
        #: Whether :meth:`close` closes the LLM (set by the factory, which built it).
        self.owns_llm = False
        #: Whether an unusable reply is replaced by the spaCy rules' triples of its passage (module docstring).
        self.fallback = fallback
        self._offline = _offline_extractor() if fallback else None
        self._offline_lock = threading.Lock()  # one spaCy parse at a time among the request threads
        self._fallbacks: dict[str, dict[str, int]] = {}
        self._counts_lock = threading.Lock()
        prompt = self.prompts[EXTRACT.prompt]
        parts = [getattr(llm, "fingerprint", llm.model), prompt.fingerprint(), PARSER_VERSION]
        digest = hashlib.blake2b(("|".join(parts) + bounds_fingerprint(llm, [ROLE])).encode(),
                                 digest_size=5).hexdigest()
        #: Keys the checkpoint: a different model, prompt, sampling setting, reply bound, parser or fallback
        #: starts afresh.
        self.key = f"llm:{llm.model}:{digest}" + (f"+fallback:{self._offline.key}" if self._offline else "")

    @property
    def ledger(self) -> UsageLedger:
        """Where token usage is recorded (the LLM's ledger)."""
        return self.llm.ledger

    def _one(self, passage: Passage) -> list[Fact]:
        values = extract_values(passage)
        completion = self.llm.complete(EXTRACT.messages(self.prompts, values), role=ROLE, **EXTRACT.bounds(values))
        parsed = EXTRACT.parse(completion)
        self.parse_stats.add(parsed)
        triples = list(parsed.value.triples)
        offline = (lambda: self._offline_triples(passage)) if self._offline is not None else None
        with usage_scope() as scope:  # counted here and in every enclosing scope
            out = played(ROLE, triples, parsed.ok and bool(triples), offline)
        self._add_fallbacks(scope.fallbacks())
        return out

    def _offline_triples(self, passage: Passage) -> list[Fact]:
        """The spaCy rules' triples of ``passage`` alone (the same whichever passages it was extracted with)."""
        assert self._offline is not None
        with self._offline_lock:
            return [t if type(t) is Fact else Fact(*t) for t in next(iter(self._offline.extract([passage])))]

    def _add_fallbacks(self, counts: Mapping[str, Mapping[str, int]]) -> None:
        with self._counts_lock:
            self._fallbacks = totals([{"fallbacks": self._fallbacks}, {"fallbacks": counts}])

    def fallbacks(self) -> dict[str, dict[str, int]]:
        """``{"extract": {"replies": n, "offline": m}}``: replies so far, and how many the spaCy rules replaced."""
        with self._counts_lock:
            return {role: dict(c) for role, c in self._fallbacks.items()}

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[Fact]]:
        """One list of triples per passage, in order, computed ``concurrency`` at a time."""
        return ordered_map(self._one, passages, self.concurrency)

    def for_worker(self) -> LLMTripleExtractor | LLMWorkerExtractor:
        """What a distributed build sends to its workers (:mod:`gearag.distributed`).

        An :class:`LLMClient` holds connections and a cache handle, so the
        workers get its config and make their own client (sharing the response
        cache file where they share a file system); another LLM is sent as is.
        """
        if isinstance(self.llm, LLMClient):
            return LLMWorkerExtractor(self.llm.config, self.prompts, self.concurrency, self.key, self.fallback)
        return self

    def take_report(self) -> dict[str, Any]:
        """On a worker, after a batch: the usage, parse and fallback counts since the last call (then zeroed)."""
        with self._counts_lock:
            fallbacks, self._fallbacks = self._fallbacks, {}
        report = {"usage": self.ledger.to_dict(), "parse": self.parse_stats.to_dict(), "fallbacks": fallbacks}
        self.ledger.reset()
        self.parse_stats = ParseStats()
        return report

    def merge_report(self, report: Mapping[str, Any]) -> None:
        """On the driver: add a worker's :meth:`take_report` to this extractor's counts."""
        self.ledger.merge_dict(report.get("usage", {}))
        self.parse_stats.merge(report.get("parse", {}))
        self._add_fallbacks(report.get("fallbacks") or {})

    def summary(self) -> str:
        """Tokens used and parse outcomes, for the end of ``gearag index``."""
        total = self.ledger.snapshot(role=ROLE)
        lines = [
            f"LLM extraction ({self.llm.model}): {total.calls:,} passages, {total.requests:,} requests, "
            f"{total.cache_hits:,} cached; tokens used {total.paid_prompt_tokens:,} prompt + "
            f"{total.paid_completion_tokens:,} completion = {total.paid_tokens:,}"
            + (f" (all calls incl. cache: {total.total_tokens:,})" if total.cache_hits else "")
            + (f"; cost {total.cost:.4f}" if self.ledger.prices else ""),
            self.parse_stats.summary(),
            *describe(self.fallbacks(), by="spaCy rules"),  # "extract: 3 of 10 replies unusable, spaCy rules used"
        ]
        return "\n".join(lines)

    def close(self) -> None:
        """Close the LLM's connections and cache if this extractor created the LLM (the factory does)."""
        if self.owns_llm and hasattr(self.llm, "close"):
            self.llm.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LLMTripleExtractor(key={self.key!r}, concurrency={self.concurrency})"


class LLMWorkerExtractor:
    """The LLM extractor as sent to a distributed build's worker: config, prompts, concurrency; no client.

    The worker makes its :class:`LLMClient` on first use and keeps it for
    every batch; usage goes back to the driver through :meth:`take_report`.
    """

    def __init__(self, config: LLMConfig, prompts: PromptSet, concurrency: int, key: str,
                 fallback: bool = False) -> None:
        self.config = config
        self.prompts = prompts
        self.concurrency = concurrency
        self.key = key
        #: The driver's :attr:`LLMTripleExtractor.fallback`: the worker loads spaCy on its first fallback.
        self.fallback = fallback
        self._live: LLMTripleExtractor | None = None

    def _extractor(self) -> LLMTripleExtractor:
        if self._live is None:
            self._live = LLMTripleExtractor(LLMClient(self.config), prompts=self.prompts,
                                            concurrency=self.concurrency, fallback=self.fallback)
            self._live.owns_llm = True
        return self._live

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[Fact]]:
        return self._extractor().extract(passages)

    def take_report(self) -> dict[str, Any]:
        return self._extractor().take_report()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_live": None}


def _prompts(value: Any) -> PromptSet:
    if value is None:
        return PromptSet.from_env()
    if isinstance(value, PromptSet):
        return value
    if isinstance(value, (str, Path, Mapping)):
        return PromptSet.load(value)
    raise ConfigError(f"prompts must be a PromptSet, a mapping or a file path, not {type(value).__name__}")


def make_llm_extractor(arg: str, options: dict[str, object]) -> LLMTripleExtractor:
    """Factory for spec ``llm`` / ``llm:MODEL``.

    Options: ``llm`` (an LLM instance, used as is), else ``llm_config`` (an
    :class:`LLMConfig`) or the environment, overridden by ``llm_model`` (or
    the spec's ``MODEL``), ``llm_base_url``, ``llm_gguf`` (a GGUF file run in
    process, or ``bundled``), ``llm_api_key``,
    ``llm_concurrency``, ``llm_cache`` (``False`` disables the cache),
    ``llm_max_tokens`` (per-role reply bounds, ``extract=300`` or a mapping; over
    ``GEARAG_LLM_MAX_TOKENS``); ``prompts`` (PromptSet, mapping or file),
    ``concurrency`` and ``llm_fallback`` (default on: an unusable reply is
    replaced by the spaCy rules' triples of its passage).
    """
    options = {k: v for k, v in options.items() if v is not None}
    given = options.get("llm")
    llm: LLM
    if given is None:
        overrides: dict[str, Any] = {
            "model": arg or options.get("llm_model"),
            "base_url": options.get("llm_base_url"),
            "api_key": options.get("llm_api_key"),
            "concurrency": options.get("llm_concurrency"),
        }
        if options.get("llm_gguf"):
            from gearag.llm.local import resolve_gguf

            overrides["gguf"] = resolve_gguf(str(options["llm_gguf"]))
        if options.get("llm_cache") is False:
            overrides["cache_path"] = False
        bounds = options.get("llm_max_tokens")
        if isinstance(bounds, str):
            overrides["role_max_tokens"] = parse_overrides(bounds)
        elif isinstance(bounds, Mapping):
            overrides["role_max_tokens"] = check_overrides(bounds, "llm_max_tokens")
        elif bounds is not None:
            raise ConfigError(f"llm_max_tokens must be ROLE=TOKENS,... or a mapping, not {type(bounds).__name__}")
        base = options.get("llm_config")
        if base is not None and not isinstance(base, LLMConfig):
            raise ConfigError("llm_config must be an LLMConfig")
        config = base.with_overrides(**overrides) if base is not None else LLMConfig.from_env(**overrides)
        llm = LLMClient(config)
    elif isinstance(given, LLM):
        llm = given
    else:
        raise ConfigError(f"option llm must implement gearag.llm.LLM, not {type(given).__name__}")
    concurrency = options.get("concurrency")
    if concurrency is not None and not isinstance(concurrency, (int, float, str)):
        raise ConfigError(f"concurrency must be a number, not {type(concurrency).__name__}")
    fallback = options.get("llm_fallback", True)
    if not isinstance(fallback, bool):
        raise ConfigError(f"llm_fallback must be true or false, not {fallback!r}")
    extractor = LLMTripleExtractor(
        llm,
        prompts=_prompts(options.get("prompts")),
        concurrency=int(concurrency) if concurrency is not None else None,
        fallback=fallback,
    )
    extractor.owns_llm = given is None
    return extractor

