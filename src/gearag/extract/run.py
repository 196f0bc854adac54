"""Run an extractor over a corpus with a resumable checkpoint and a progress bar."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from gearag.extract.base import TripleExtractor
from gearag.model import Fact, Passage
from gearag.progress import track
from gearag.store.checkpoint import ExtractionCheckpoint, checkpoint_name, passage_hash


class ExtractExecutor(Protocol):
    """What extraction needs of a build's executor (:class:`gearag.indexing.executor.BatchExecutor`)."""

    def extract(self, extractor: TripleExtractor, passages: Sequence[Passage], *,
                description: str) -> Iterator[tuple[int, list[Fact]]]: ...


#: fsync the checkpoint every this many passages (it is flushed after each one).
SYNC_EVERY = 64


def as_facts(triples: Iterable[Fact]) -> list[Fact]:
    """One passage's triples as :class:`Fact` values.

    Extractors yield facts; an extractor still written against the older seam
    (plain ``(s, p, o)`` tuples) is converted here, so that every caller sees
    one type whether or not the result came through the checkpoint.
    """
    return [t if type(t) is Fact else Fact(*t) for t in triples]


def extract_with_checkpoint(
    passages: Sequence[Passage],
    extractor: TripleExtractor,
    work_dir: Path | None,
    *,
    description: str = "extracting triples",
    executor: ExtractExecutor | None = None,
) -> list[list[Fact]]:
    """Extract triples for every passage, resuming from ``work_dir`` if a run was interrupted.

    Passages already in the checkpoint (matched by content hash) are not sent
    to the extractor again. With ``work_dir=None`` nothing is persisted.
    Returns one list of triples per passage, in input order.

    ``executor`` (:mod:`gearag.indexing.executor`) runs the extractor: by
    default here, as the extractor yields; a distributed one returns rows in
    the order they finish, and each is appended to the checkpoint as it arrives.
    """
    if work_dir is None:
        results: list[list[Fact]] = [[] for _ in passages]
        for i, triples in _finished(extractor, passages, executor, description):
            results[i] = as_facts(triples)
        return results
    hashes = [passage_hash(p) for p in passages]
    with ExtractionCheckpoint(Path(work_dir) / checkpoint_name(extractor.key)) as ckpt:
        # Duplicate passages share a hash: extract each distinct one once.
        todo: list[int] = []
        queued: set[str] = set()
        for i, h in enumerate(hashes):
            if h not in ckpt and h not in queued:
                queued.add(h)
                todo.append(i)
        todo_passages = [passages[i] for i in todo]
        for n, (j, triples) in enumerate(_finished(extractor, todo_passages, executor, description), 1):
            ckpt.add(hashes[todo[j]], as_facts(triples))
            if n % SYNC_EVERY == 0:
                ckpt.sync()
        missing = [i for i in todo if hashes[i] not in ckpt]
        if missing:  # an executor that lost rows must not produce an index without their triples
            raise RuntimeError(f"extraction returned no triples for passage {missing[0]}")
        return [list(ckpt.done[h]) for h in hashes]


def _finished(
    extractor: TripleExtractor, passages: Sequence[Passage], executor: ExtractExecutor | None, description: str
) -> Iterator[tuple[int, list[Fact]]]:
    """``(i, triples of passages[i])`` as they finish: in order here, in any order from an executor."""
    if executor is not None:
        return executor.extract(extractor, passages, description=description) if passages else iter(())
    return enumerate(track(extractor.extract(passages), total=len(passages), description=description))
