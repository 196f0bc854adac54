"""Batches of spaCy work (the extractor's parses, the NER pass) here or in worker processes.

Workers are forked where the platform allows, so they inherit the pipeline the
parent loaded; each task is one batch and returns only what the caller keeps
(triples, span texts). Results come back lazily and in task order, so the
output is the same whatever the number of processes.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from gearag.extract.spacy.pipeline import extract_pairs, load_nlp
from gearag.model import Fact

#: Inputs of at least this many passages, or of :data:`PARALLEL_CHARS` characters, are parsed in worker
#: processes by default.
PARALLEL_THRESHOLD = 500
PARALLEL_CHARS = 250_000
#: Worker processes for such inputs (never more than the CPUs).
DEFAULT_PROCESSES = 2

#: One batch of the extractor: ``(title, text)`` pairs, the ``nlp.pipe`` batch size and the most characters per
#: spaCy call.
Task = tuple[list[tuple[str, str]], int, int]

T = TypeVar("T")
R = TypeVar("R")


def processes_for(n_passages: int, n_chars: int, n_tasks: int, wanted: int | None = None) -> int:
    """Worker processes for ``n_passages`` of ``n_chars`` characters in ``n_tasks`` tasks, never more than the
    tasks: ``wanted``, or when None :data:`DEFAULT_PROCESSES` (never more than the CPUs) for inputs of at least
    :data:`PARALLEL_THRESHOLD` passages or :data:`PARALLEL_CHARS` characters, else 1 (in this process)."""
    if wanted is None:
        big = n_passages >= PARALLEL_THRESHOLD or n_chars >= PARALLEL_CHARS
        wanted = min(DEFAULT_PROCESSES if big else 1, os.cpu_count() or 1)
    return max(1, min(wanted, n_tasks))


def run_task(task: Task) -> list[list[Fact]]:
    """The triples of one batch, one list per passage."""
    return extract_pairs(*task)


def _init_worker() -> None:
    # Ctrl-C is the parent's to handle: it stops the pool and keeps the checkpoint.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    load_nlp()


def run_tasks(work: Callable[[T], R], tasks: Iterable[T], processes: int) -> Iterator[R]:
    """``work`` of each task (a module-level function: workers are sent it by name), in order: in this process
    when ``processes <= 1``, else in a pool of that size.

    Closing the iterator early (or an error) terminates the pool.
    """
    load_nlp()  # fail early, and let forked workers inherit the loaded model
    if processes <= 1:
        for task in tasks:
            yield work(task)
        return
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pool = ctx.Pool(processes, initializer=_init_worker)
    try:
        yield from pool.imap(work, tasks)
    finally:
        pool.terminate()
        pool.join()
