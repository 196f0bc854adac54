"""Run an extractor over a corpus with a resumable checkpoint and a progress bar."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gearag.extract.base import RawTriple, TripleExtractor
from gearag.model import Passage
from gearag.progress import track
from gearag.store.checkpoint import ExtractionCheckpoint, checkpoint_name, passage_hash

#: fsync the checkpoint every this many passages (it is flushed after each one).
SYNC_EVERY = 64


def extract_with_checkpoint(
    passages: Sequence[Passage],
    extractor: TripleExtractor,
    work_dir: Path | None,
    *,
    description: str = "extracting triples",
) -> list[list[RawTriple]]:
    """Extract triples for every passage, resuming from ``work_dir`` if a run was interrupted.

    Passages already in the checkpoint (matched by content hash) are not sent
    to the extractor again. With ``work_dir=None`` nothing is persisted.
    Returns one list of triples per passage, in input order.
    """
    hashes = [passage_hash(p) for p in passages]
    if work_dir is None:
        results = list(track(extractor.extract(passages), total=len(passages), description=description))
        return results
    with ExtractionCheckpoint(Path(work_dir) / checkpoint_name(extractor.key)) as ckpt:
        todo = [i for i, h in enumerate(hashes) if h not in ckpt]
        # Duplicate passages share a hash: extract each distinct one once.
        seen: set[str] = set()
        todo = [i for i in todo if not (hashes[i] in seen or seen.add(hashes[i]))]
        todo_passages = [passages[i] for i in todo]
        stream = extractor.extract(todo_passages)
        for n, (i, triples) in enumerate(
            zip(todo, track(stream, total=len(todo), description=description), strict=True), 1
        ):
            ckpt.add(hashes[i], triples)
            if n % SYNC_EVERY == 0:
                ckpt.sync()
        return [list(ckpt.done[h]) for h in hashes]
