"""The offline agent finishes its chains: three hops in three steps; comparisons follow both branches.

Hand-built corpora, indexed with the default offline extractor (spaCy rules) and wordllama.
"""

from __future__ import annotations

import pytest

from conftest import index_of_rows
from gearag.methods import make_method
from gearag.store.index import Index

FILMS = [
    ("Moonlight Harbor",
     "Moonlight Harbor is a 1951 American drama film directed by Arthur Penwick. It stars Joan Hale."),
    ("Silent Orchard", "Silent Orchard is a 1960 British film directed by Clara Dunmore. It was shot in Kent."),
    ("Arthur Penwick", "Arthur Penwick (12 March 1902 – 3 May 1970) was an American film director."),
    ("Clara Dunmore", "Clara Dunmore (4 June 1898 – 9 July 1981) was a British film director and writer."),
    ("Joan Hale", "Joan Hale (born 1925) is an American actress."),
    ("Kent", "Kent is a county in South East England."),
]


@pytest.fixture(scope="module")
def films(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return index_of_rows(tmp_path_factory.mktemp("films"), FILMS)


@pytest.mark.parametrize(
    ("question", "event"),
    [("Which film has the director born earlier, Moonlight Harbor or Silent Orchard?", "born"),
     ("Which film has the director who died later, Moonlight Harbor or Silent Orchard?", "died")],
)
def test_bridge_comparison_follows_both_branches(films: Index, question: str, event: str) -> None:
    result = make_method(films, "gear", max_steps=2)(question, 4)
    assert result.answer == "Silent Orchard"  # Dunmore: born 1898 (earlier), died 1981 (later)
    evidence = result.trace.evidence
    assert "(Moonlight Harbor; directed by; Arthur Penwick)" in evidence
    assert "(Silent Orchard; directed by; Clara Dunmore)" in evidence
    assert any(e.startswith(f"(Arthur Penwick; {event}") for e in evidence)
    assert any(e.startswith(f"(Clara Dunmore; {event}") for e in evidence)
    assert {films.passages[h.idx].title for h in result.passages} == {
        "Moonlight Harbor", "Silent Orchard", "Arthur Penwick", "Clara Dunmore"}


def test_comparison_without_the_chain_agent_does_not_reach_the_directors(films: Index) -> None:
    question = "Which film has the director born earlier, Moonlight Harbor or Silent Orchard?"
    result = make_method(films, "gear", max_steps=2, chain_agent=False)(question, 4)
    assert "(Clara Dunmore; born; 4 June 1898)" not in result.trace.evidence


def test_three_hops_within_three_steps(demo_rows_index: Index) -> None:
    """Three hops (father → drafting team → its city). Each step's PPR can itself cross one
    resolved hop, so the chain completes at step 2 or 3; the rewrite carries the bridge."""
    question = "In which city is the team that drafted Stephen Curry's father based?"
    result = make_method(demo_rows_index, "gear", max_steps=4)(question, 5)
    steps = result.trace.to_dict()["steps"]
    assert 2 <= len(steps) <= 3
    assert steps[-1]["reasoning"]["answerable"] and not steps[0]["reasoning"]["answerable"]
    assert "Utah Jazz" in steps[-1]["query"]  # the rewrite substituted the resolved bridge
    assert result.answer == "Salt Lake City"
    assert result.trace.evidence == ["(Stephen Curry; is son of; Dell Curry)", "(Dell Curry; drafted by; Utah Jazz)",
                                        "(Utah Jazz; based in; Salt Lake City)"]
    top = [demo_rows_index.passages[h.idx].title for h in result.passages]
    assert {"Stephen Curry", "Dell Curry", "Utah Jazz"} <= set(top)


@pytest.mark.parametrize(
    ("question", "answer", "gold"),
    [("Who coached the college basketball team of Stephen Curry's younger brother?", "Mike Krzyzewski",
      {"Seth Curry", "Duke Blue Devils men's basketball"}),
     ("In which county is the city where Stephen Curry was born?", "Summit County", {"Stephen Curry", "Akron, Ohio"})],
)
def test_demo_bridges_resolve_to_their_pages(demo_rows_index: Index, question: str, answer: str,
                                              gold: set[str]) -> None:
    result = make_method(demo_rows_index, "gear", max_steps=4)(question, 5)
    assert result.answer == answer
    assert gold <= {demo_rows_index.passages[h.idx].title for h in result.passages}
