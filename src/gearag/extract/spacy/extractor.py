"""The ``spacy`` extractor: its settings, the extractor class and the factory registered for the spec.

The work of one passage is bounded (:class:`SpacyExtractorConfig`): spaCy
parses at most ``parse_chars`` characters per call, so memory stays that of
one call whatever a passage's length, and the rules read at most
``max_passage_chars`` characters of a passage (200,000 by default, the
length ``gearag index`` and ``gearag add`` split passages at, so text
loaded by either is read whole). Past that the rest of the passage is not
parsed, with one warning counting such passages: a passage that long is a
book, not a paragraph, and the triples of its first 200,000 characters are
what a bounded parse (~6 s, ~0.4 GB) can give; split such documents into
passages to have all their triples (the CLI does, with a warning).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace

from gearag.data.corpus import MAX_PASSAGE_CHARS
from gearag.errors import ConfigError
from gearag.extract.spacy.clean import MAX_PIECE_CHARS
from gearag.extract.spacy.pipeline import DEFAULT_BATCH_SIZE, DEFAULT_PARSE_CHARS, bounded_runs
from gearag.extract.spacy.pool import Task, processes_for, run_task, run_tasks
from gearag.model import Fact, Passage

#: Identity of the rules; bump the version whenever the output changes.
KEY = "spacy-rules-v1"

log = logging.getLogger("gearag.extract")


def _positive_int(name: str, value: object, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"spacy extractor: {name} must be a positive integer, got {value!r}")


def _option_int(options: Mapping[str, object], name: str) -> int | None:
    """An integer option as given, or a string of digits (from a command line); None when absent."""
    value = options.get(name)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"spacy extractor: {name} must be an integer, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class SpacyExtractorConfig:
    """Settings of the spaCy rules extractor. Only ``max_passage_chars`` changes the triples (of passages
    longer than it); the others change how fast they come and the memory they take."""

    #: Worker processes; ``None`` chooses (:func:`gearag.extract.spacy.pool.processes_for`): a few for large
    #: inputs, else 1, never more than the CPUs.
    processes: int | None = None
    #: Passages per parse batch and per worker task.
    batch_size: int = DEFAULT_BATCH_SIZE
    #: Characters per spaCy call and per worker task (a longer passage is a task alone, parsed in pieces):
    #: bounds the parse's memory (~3 KB a character). At least the piece size (``MAX_PIECE_CHARS``).
    parse_chars: int = DEFAULT_PARSE_CHARS
    #: The most characters of one passage the rules read (cut at a space); ``None``: no bound. Longer
    #: passages are counted in one warning (see the module docstring).
    max_passage_chars: int | None = MAX_PASSAGE_CHARS

    def __post_init__(self) -> None:
        _positive_int("processes", self.processes, optional=True)
        _positive_int("batch_size", self.batch_size)
        _positive_int("parse_chars", self.parse_chars)
        _positive_int("max_passage_chars", self.max_passage_chars, optional=True)
        if self.parse_chars < MAX_PIECE_CHARS:
            raise ConfigError(f"spacy extractor: parse_chars must be at least {MAX_PIECE_CHARS:,} (the longest "
                              f"piece of text parsed as one document), got {self.parse_chars:,}")

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> SpacyExtractorConfig:
        """The config from loose options (``processes``, ``batch_size``; integers or digit strings).

        Absent or ``None`` options keep their defaults; other keys are ignored.
        """
        given = {f.name: _option_int(options, f.name) for f in fields(cls)}
        return cls(**{name: value for name, value in given.items() if value is not None})


def _head(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text`` at most, cut at the last space of their second half."""
    cut = text.rfind(" ", limit // 2, limit + 1)
    return text[: cut if cut > 0 else limit]


class SpacyRulesExtractor:
    """Offline triple extractor over spaCy's parse; see :mod:`gearag.extract.spacy`."""

    def __init__(self, config: SpacyExtractorConfig | None = None) -> None:
        self.config = config or SpacyExtractorConfig()
        bound = self.config.max_passage_chars
        #: The output differs only for passages longer than the bound: another bound, another checkpoint.
        self.key = KEY if bound == MAX_PASSAGE_CHARS else f"{KEY}:max-passage-chars={bound}"
        #: Passages read only up to ``max_passage_chars`` so far (by this object's :meth:`extract` calls).
        self.passages_cut = 0

    def n_processes(self, n_passages: int, n_chars: int = 0, n_tasks: int | None = None) -> int:
        """Worker processes used for ``n_passages`` of ``n_chars`` characters in ``n_tasks`` tasks (default:
        batches of ``batch_size``); 1 means: in this process."""
        tasks = -(-n_passages // self.config.batch_size) if n_tasks is None else n_tasks
        return processes_for(n_passages, n_chars, tasks, self.config.processes)

    def _pairs(self, passages: Sequence[Passage]) -> list[tuple[str, str]]:
        """``(title, text)`` of each passage, its text cut to ``max_passage_chars``; one warning counts cuts."""
        bound = self.config.max_passage_chars
        pairs = [(p.title, p.text if bound is None or len(p.text) <= bound else _head(p.text, bound))
                 for p in passages]
        cut = [p for p in passages if bound is not None and len(p.text) > bound]
        if cut and bound is not None:
            self.passages_cut += len(cut)
            longest = max(cut, key=lambda p: len(p.text))
            log.warning(f"spacy extractor: {len(cut):,} passage(s) longer than {bound:,} characters (the longest: "
                        f"id {longest.id!r}, {len(longest.text):,}) are read up to {bound:,} characters; the rest "
                        "of each gives no triples (split such documents into passages: --max-passage-chars)")
        return pairs

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[Fact]]:
        """One list of triples per passage, in order, computed a task at a time (each task at most
        ``batch_size`` passages and ``parse_chars`` characters, or one longer passage)."""
        pairs = self._pairs(passages)
        runs = bounded_runs([len(text) for _, text in pairs], self.config.batch_size, self.config.parse_chars)
        tasks: Iterator[Task] = ((pairs[a:b], self.config.batch_size, self.config.parse_chars) for a, b in runs)
        n_chars = sum(len(text) for _, text in pairs)
        for batch in run_tasks(run_task, tasks, self.n_processes(len(pairs), n_chars, len(runs))):
            yield from batch

    def for_worker(self) -> SpacyRulesExtractor:
        """The copy a distributed build sends to each worker: parses in the worker's own process."""
        return SpacyRulesExtractor(replace(self.config, processes=1))

    def __repr__(self) -> str:
        return f"SpacyRulesExtractor({self.config!r})"


def make_spacy_extractor(arg: str, options: dict[str, object]) -> SpacyRulesExtractor:
    """Factory for spec ``spacy``.

    Options: ``config`` (a :class:`SpacyExtractorConfig`), or ``processes``,
    ``batch_size``, ``parse_chars`` and ``max_passage_chars`` (see there); other options are ignored.
    """
    if arg:
        raise ConfigError(f"the spacy extractor takes no argument (got 'spacy:{arg}')")
    config = options.get("config")
    if config is None:
        return SpacyRulesExtractor(SpacyExtractorConfig.from_options(options))
    if not isinstance(config, SpacyExtractorConfig):
        raise ConfigError(f"spacy extractor: config must be a SpacyExtractorConfig, not {type(config).__name__}")
    loose = sorted(f.name for f in fields(SpacyExtractorConfig) if options.get(f.name) is not None)
    if loose:
        raise ConfigError(f"spacy extractor: give either config or {', '.join(loose)}, not both")
    return SpacyRulesExtractor(config)

