"""Proposition aggregates: order, skip rule, entity-less drop, determinism, sources."""

from __future__ import annotations

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
