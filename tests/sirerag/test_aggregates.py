"""Proposition aggregates: order, skip rule, entity-less drop, determinism, sources."""

from __future__ import annotations

import pytest

from gearag.sirerag.aggregates import AggregateConfig, AggregateStats, Proposition, build_aggregates

FACTS = [
    [  # passage 0
        Proposition(
            "Sonnet 110 is one of 154 sonnets written by William Shakespeare.", ("Sonnet 110", "William Shakespeare")
        ),
        Proposition("It was published in 1609.", ()),  # no entity: dropped
        Proposition("Sonnet 110 is about the poet's travels.", ("Sonnet 110",)),
    ],
    [  # passage 1
        {"fact": "William Shakespeare was born in Stratford-upon-Avon.",
         "entities": ["william shakespeare", "Stratford-upon-Avon"]},
        {"fact": "Anne Hathaway married William Shakespeare.", "entities": ["Anne Hathaway", "William Shakespeare"]},
    ],
    [  # passage 2: an entity whose single fact is only under it is kept
        Proposition("Zanzibar is an archipelago.", ("Zanzibar",)),
    ],
]


def test_grouping_order_skip_and_drop() -> None:
    stats = AggregateStats()
    aggs = build_aggregates(FACTS, stats=stats)
    by = {a.entity.lower(): a for a in aggs}
    # Order: first appearance of each entity in document order; skipped ones absent.
    assert [a.entity for a in aggs] == ["Sonnet 110", "William Shakespeare", "Zanzibar"]
    # Case-insensitive key, facts in document order, text joined by newlines.
    assert by["william shakespeare"].facts == (
        "Sonnet 110 is one of 154 sonnets written by William Shakespeare.",
        "William Shakespeare was born in Stratford-upon-Avon.",
        "Anne Hathaway married William Shakespeare.",
    )
    assert by["william shakespeare"].text == "\n".join(by["william shakespeare"].facts)
    assert by["william shakespeare"].sources == (0, 1)
    # Skip rule: Stratford-upon-Avon and Anne Hathaway have one fact each, listed elsewhere.
    assert "stratford-upon-avon" not in by and "anne hathaway" not in by
    assert stats.skipped_singletons == 2
    # Zanzibar: a single fact listed nowhere else is kept.
    assert by["zanzibar"].facts == ("Zanzibar is an archipelago.",) and by["zanzibar"].sources == (2,)
    assert stats.facts_without_entities == 1
    assert all("published in 1609" not in a.text for a in aggs)


def test_skip_rule_can_be_disabled() -> None:
    aggs = build_aggregates(FACTS, AggregateConfig(skip_redundant_singletons=False))
    assert "Anne Hathaway" in [a.entity for a in aggs]


def test_deterministic_and_duplicate_texts_merged() -> None:
    met, left = Proposition("A met B.", ("A", "B")), Proposition("A left B.", ("A", "B"))
    facts = [[met, left], [met]]
    a1 = build_aggregates(facts)
    a2 = build_aggregates(facts)
    assert a1 == a2
    assert len(a1) == 1 and a1[0].entity == "A" and a1[0].also == ("B",)
    assert a1[0].facts == ("A met B.", "A left B.") and a1[0].sources == (0, 1)


def test_max_facts_splits_in_order() -> None:
    facts = [[Proposition(f"X did {i}.", ("X",)) for i in range(5)]]
    aggs = build_aggregates(facts, AggregateConfig(max_facts=2))
    assert [a.facts for a in aggs] == [("X did 0.", "X did 1."), ("X did 2.", "X did 3."), ("X did 4.",)]


TITLES = ["Sonnet 110", "William Shakespeare", "Zanzibar"]


def test_titled_text_heads_each_passage_run_with_its_title() -> None:
    """Default with titles: each passage's run of facts under its title, runs separated by a blank line."""
    aggs = build_aggregates(FACTS, titles=TITLES)
    by = {a.entity.lower(): a for a in aggs}
    will = by["william shakespeare"]
    assert will.titles == ("Sonnet 110", "William Shakespeare", "William Shakespeare")
    assert will.text == (
        "Sonnet 110\nSonnet 110 is one of 154 sonnets written by William Shakespeare."
        "\n\nWilliam Shakespeare\nWilliam Shakespeare was born in Stratford-upon-Avon."
        "\nAnne Hathaway married William Shakespeare."
    )
    # Same aggregates, same facts and sources as the released text: only the text differs.
    released = build_aggregates(FACTS, AggregateConfig(titled=False), titles=TITLES)
    assert [(a.entity, a.facts, a.sources) for a in aggs] == [(a.entity, a.facts, a.sources) for a in released]
    assert all(a.titles == () and a.text == "\n".join(a.facts) for a in released)
    # Without titles the text is the released one whatever the setting.
    assert [a.text for a in build_aggregates(FACTS)] == [a.text for a in released]


def test_titled_text_reads_back_as_units_with_their_source_title() -> None:
    """The extractive summariser reads a titled aggregate as (title, sentence) units: facts stay attributable."""
    from gearag.sirerag.summarise import text_units

    facts = [[Proposition("The film was nominated for two Academy Awards.", ("Academy Awards",))],
             [Proposition("The song won two Academy Awards.", ("Academy Awards",))]]
    (agg,) = build_aggregates(facts, titles=["Rosemary (1958 film)", "Amber (song)"])
    assert text_units(agg.text) == [("Rosemary (1958 film)", "The film was nominated for two Academy Awards."),
                                    ("Amber (song)", "The song won two Academy Awards.")]
    (untitled,) = build_aggregates(facts, AggregateConfig(titled=False), titles=["x", "y"])
    assert {h for h, _ in text_units(untitled.text)} == {""}


def test_titles_must_match_passages() -> None:
    with pytest.raises(ValueError, match="one title per passage"):
        build_aggregates(FACTS, titles=["only one"])
