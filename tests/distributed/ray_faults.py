"""Extractors that fail on purpose inside Ray workers, for the distributed build tests.

Ray workers cannot import the tests' modules, so this module is self-contained
and the tests send it to the workers by value (``register_pickle_by_value``).
Faults fire once per test directory: a marker file records that the fault
happened, so the retried batch (in the same or a restarted worker) succeeds.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from gearag.model import Fact, Passage

_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z]+\b")


def triples_for(passage: Passage) -> list[Fact]:
    """``(title, "mentions", Word)`` for each distinct capitalised word (deterministic, instant)."""
    words = list(dict.fromkeys(_CAPITALISED.findall(passage.text)))
    return [Fact(passage.title, "mentions", w) for w in words if w != passage.title]


class FaultyExtractor:
    """Mentions extractor with planted faults; ``log`` gets one line per passage actually extracted.

    * ``raise_once``: title whose first extraction raises (an exception in a batch);
    * ``kill_once``: title whose first extraction SIGKILLs the worker process;
    * ``fail_always``: title that always raises, once ``wait_for`` (a file) has ``wait_lines`` lines.
    """

    key = "faulty-v1"

    def __init__(self, markers: Path, *, log: Path | None = None, raise_once: str | None = None,
                 kill_once: str | None = None, fail_always: str | None = None,
                 wait_for: Path | None = None, wait_lines: int = 0) -> None:
        self.markers = Path(markers)
        self.log = log
        self.raise_once = raise_once
        self.kill_once = kill_once
        self.fail_always = fail_always
        self.wait_for = wait_for
        self.wait_lines = wait_lines

    def _first_time(self, name: str) -> bool:
        try:  # O_EXCL: exactly one worker sees the fault, even if two try at once
            fd = os.open(self.markers / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        os.close(fd)
        return True

    def _wait(self) -> None:
        """Until the driver has checkpointed ``wait_lines`` rows (a condition, polled; 120 s at most)."""
        if self.wait_for is None:
            return
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.wait_for.exists() and self.wait_for.read_bytes().count(b"\n") >= self.wait_lines:
                return
            time.sleep(0.05)

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[Fact]]:
        for passage in passages:
            if passage.title == self.raise_once and self._first_time("raised"):
                raise RuntimeError(f"planted failure on {passage.title}")
            if passage.title == self.kill_once and self._first_time("killed"):
                os.kill(os.getpid(), signal.SIGKILL)
            if passage.title == self.fail_always:
                self._wait()
                raise RuntimeError(f"planted permanent failure on {passage.title}")
            if self.log is not None:
                with self.log.open("a", encoding="utf-8") as fh:
                    fh.write(passage.title + "\n")
            yield triples_for(passage)
