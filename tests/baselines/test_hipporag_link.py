"""HippoRAG v1's entity linking: the phrase node that is the entity itself wins, and ties do not depend on the order
the passages were indexed in."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from gearag.baselines.config import HippoRAGConfig
from gearag.baselines.hipporag_method import HippoRAG
from gearag.indexing import build_index
from gearag.model import Passage

#: Years whose digits are one another's permutations: a static embedder (wordllama, the default) averages the
#: digits' vectors, so all three embed alike.
PEOPLE = [("Ann Lee", "1925"), ("Bob Marsh", "1952"), ("Cy Dunn", "1592")]


class BornIn:
    """One triple per passage: (its title, "born in", the year its text ends with)."""

    key = "born-in-v1"

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[tuple[str, str, str]]]:
        for p in passages:
            yield [(p.title, "born in", p.text.rstrip(".").split()[-1])]


def _linker(tmp_path: Path, order: list[int]) -> HippoRAG:
    passages = [Passage(f"p{i}", PEOPLE[i][0], f"{PEOPLE[i][0]} was born in {PEOPLE[i][1]}.") for i in order]
    index = build_index(passages, tmp_path / "-".join(map(str, order)), extractor=BornIn())
    return HippoRAG(index, HippoRAGConfig())


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 1, 0], [1, 2, 0]])
def test_an_entity_links_to_its_own_phrase_node_and_ties_whatever_the_order(tmp_path: Path,
                                                                             order: list[int]) -> None:
    method = _linker(tmp_path, order)
    phrases = method.graph.table.phrases
    for _, year in PEOPLE:
        ((_, node, cosine),) = method.link([year])
        assert phrases[node] == year and cosine == pytest.approx(1.0, abs=1e-5)
    # "2591" is no node and embeds like all three years: the first in text order, in every build.
    ((_, node, _),) = method.link(["2591"])
    assert phrases[node] == "1592"
