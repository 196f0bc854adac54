"""Which of the reader's facts seed the graph: the best facts, plus the best fact about each question entity.

The offline reader (:class:`gearag.expand.reader.OfflineReader`) ranks the
base passages' triples for the question; its top ``b`` (GEAR's beam width)
often all concern one question entity — for "Which film has the director
born earlier, A or B?" all ten can be facts about film A, and film B's
director is never reached. We add, for every entity the question names,
its ``per_entity`` best-ranked facts (facts whose subject or object resolves
to that entity), interleaved by entity. Seeding every named entity's best
fact is what a reader asked for "facts relevant to the question" (GEAR
App. K.2) does with more than one entity in the question.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def anchored_facts(
    ranked: Sequence[int], triple_ends: np.ndarray, entities: Sequence[int], top: int = 10, per_entity: int = 2
) -> list[int]:
    """The reader's ``top`` facts, then up to ``per_entity`` best facts about each question entity.

    ``ranked`` is the reader's ranking of triple ids; ``triple_ends[t]`` the
    entity ids of triple ``t``'s subject and object.
    """
    out: dict[int, None] = dict.fromkeys(int(t) for t in ranked[:top])
    if len(entities) < 2 or per_entity <= 0:
        return list(out)
    wanted = {int(e): [] for e in entities}
    for t in ranked:
        for e in triple_ends[int(t)]:
            bucket = wanted.get(int(e))
            if bucket is not None and len(bucket) < per_entity:
                bucket.append(int(t))
    for depth in range(per_entity):
        for e in entities:
            bucket = wanted[int(e)]
            if depth < len(bucket):
                out.setdefault(bucket[depth], None)
    return list(out)
