"""Run an extractor over a corpus with a resumable checkpoint and a progress bar."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from gearag.extract.base import TripleExtractor
from gearag.model import Fact, Passage
from gearag.progress import track
from gearag.store.checkpoint import ExtractionCheckpoint, checkpoint_name, passage_hash

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
) -> list[list[Fact]]:
    """Extract triples for every passage, resuming from ``work_dir`` if a run was interrupted.

    Passages already in the checkpoint (matched by content hash) are not sent
    to the extractor again. With ``work_dir=None`` nothing is persisted.
    Returns one list of triples per passage, in input order.
    """
    if work_dir is None:
        stream = track(extractor.extract(passages), total=len(passages), description=description)
        return [as_facts(triples) for triples in stream]
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
        stream = track(extractor.extract(todo_passages), total=len(todo), description=description)
        for n, (i, triples) in enumerate(zip(todo, stream, strict=True), 1):
            ckpt.add(hashes[i], as_facts(triples))
            if n % SYNC_EVERY == 0:
                ckpt.sync()
        return [list(ckpt.done[h]) for h in hashes]
