"""A shard's endpoint table: the span stream it keeps beside the triple ends, and the bound on a passage's spans."""

from __future__ import annotations

import pytest

from gearag.derive import endpoints
from gearag.derive.endpoints import EndpointTable
from gearag.errors import GearagError


def test_the_span_stream_names_each_span_like_a_triple_end() -> None:
    table = EndpointTable.compute(["Paris"], ["France"], [["France", "Berlin"], [], ["Paris"]])
    assert table.spans is not None
    rows, names = table.spans
    assert rows.tolist() == [0, 0, 2]
    # A span with a triple end's name shares its id; a name no end has comes after the ends' names.
    assert [table.names[i] for i in names.tolist()] == ["france", "berlin", "paris"]


def test_a_passage_with_more_spans_than_a_slot_holds_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(endpoints, "SPAN_SLOTS", 2)
    EndpointTable.compute([], [], [["Rome"], ["Oslo", "Lima"]])  # at the bound
    with pytest.raises(GearagError, match="passage row 1: 3 named-entity spans"):
        EndpointTable.compute([], [], [["Rome"], ["Oslo", "Lima", "Kyiv"]])
