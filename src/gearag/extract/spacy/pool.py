"""Batches of passages through :func:`~gearag.extract.spacy.pipeline.extract_pairs`, here or in worker processes.

Workers are forked where the platform allows, so they inherit the pipeline the
parent loaded; each task is one batch and returns only triples. Results come
back lazily and in task order.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Iterable, Iterator

from gearag.extract.spacy.pipeline import extract_pairs, load_nlp
from gearag.model import Fact

#: One batch: ``(title, text)`` pairs, the ``nlp.pipe`` batch size and the most characters per spaCy call.
Task = tuple[list[tuple[str, str]], int, int]


def run_task(task: Task) -> list[list[Fact]]:
    """The triples of one batch, one list per passage."""
    return extract_pairs(*task)


def _init_worker() -> None:
    # Ctrl-C is the parent's to handle: it stops the pool and keeps the checkpoint.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    load_nlp()


def run_tasks(tasks: Iterable[Task], processes: int) -> Iterator[list[list[Fact]]]:
    """Each task's result, in order: in this process when ``processes <= 1``, else in a pool of that size.

    Closing the iterator early (or an error) terminates the pool.
    """
    load_nlp()  # fail early, and let forked workers inherit the loaded model
    if processes <= 1:
        for task in tasks:
            yield run_task(task)
        return
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pool = ctx.Pool(processes, initializer=_init_worker)
    try:
        yield from pool.imap(run_task, tasks)
    finally:
        pool.terminate()
        pool.join()
