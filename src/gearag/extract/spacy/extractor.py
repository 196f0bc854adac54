"""The ``spacy`` extractor: its settings, the extractor class and the factory registered for the spec."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace

from gearag.errors import ConfigError
from gearag.extract.spacy.pipeline import DEFAULT_BATCH_SIZE
from gearag.extract.spacy.pool import Task, run_tasks
from gearag.model import Fact, Passage

#: Identity of the rules; bump the version whenever the output changes.
KEY = "spacy-rules-v1"
#: Inputs at least this long are parsed in worker processes by default.
PARALLEL_THRESHOLD = 500
#: Worker processes for such inputs (never more than the CPUs).
DEFAULT_PROCESSES = 2


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
    """Settings of the spaCy rules extractor. Neither changes the triples, only how fast they come."""

    #: Worker processes; ``None`` chooses: :data:`DEFAULT_PROCESSES` for inputs of at
    #: least :data:`PARALLEL_THRESHOLD` passages, else 1, never more than the CPUs.
    processes: int | None = None
    #: Passages per parse batch and per worker task.
    batch_size: int = DEFAULT_BATCH_SIZE

    def __post_init__(self) -> None:
        _positive_int("processes", self.processes, optional=True)
        _positive_int("batch_size", self.batch_size)

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> SpacyExtractorConfig:
        """The config from loose options (``processes``, ``batch_size``; integers or digit strings).

        Absent or ``None`` options keep their defaults; other keys are ignored.
        """
        given = {f.name: _option_int(options, f.name) for f in fields(cls)}
        return cls(**{name: value for name, value in given.items() if value is not None})


class SpacyRulesExtractor:
    """Offline triple extractor over spaCy's parse; see :mod:`gearag.extract.spacy`."""

    key = KEY

    def __init__(self, config: SpacyExtractorConfig | None = None) -> None:
        self.config = config or SpacyExtractorConfig()

    def n_processes(self, n_passages: int) -> int:
        """Worker processes used for ``n_passages`` (1 means: in this process)."""
        if self.config.processes is not None:
            wanted = self.config.processes
        else:
            wanted = DEFAULT_PROCESSES if n_passages >= PARALLEL_THRESHOLD else 1
            wanted = min(wanted, os.cpu_count() or 1)
        batches = -(-n_passages // self.config.batch_size)
        return max(1, min(wanted, batches))

    def _tasks(self, passages: Sequence[Passage]) -> Iterator[Task]:
        size = self.config.batch_size
        for start in range(0, len(passages), size):
            yield [(p.title, p.text) for p in passages[start : start + size]], size

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[Fact]]:
        """One list of triples per passage, in order, computed a batch at a time."""
        for batch in run_tasks(self._tasks(passages), self.n_processes(len(passages))):
            yield from batch

    def for_worker(self) -> SpacyRulesExtractor:
        """The copy a distributed build sends to each worker: parses in the worker's own process."""
        return SpacyRulesExtractor(replace(self.config, processes=1))

    def __repr__(self) -> str:
        return f"SpacyRulesExtractor({self.config!r})"


def make_spacy_extractor(arg: str, options: dict[str, object]) -> SpacyRulesExtractor:
    """Factory for spec ``spacy``.

    Options: ``config`` (a :class:`SpacyExtractorConfig`), or ``processes``
    and ``batch_size`` (see there); other options are ignored.
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

