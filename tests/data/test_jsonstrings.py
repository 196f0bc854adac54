"""JsonStrings: a list of strings kept as its JSON text reads, reorders and writes as the list would."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from gearag.data import jsonstrings
from gearag.data.jsonio import dump_json
from gearag.data.jsonstrings import ChainedStrings, JsonStrings, string_spans, strings_at, taken

#: Strings whose JSON text has escaped quotes, trailing backslashes, commas, brackets and non-ASCII text.
ODD = ["plain", "", 'say "hi"', "ends in \\", '\\"', "a,b", "[x]", "tab\there", "new\nline", "é ü 日本",
       "\u2028", "\\\\", '"', ",", "q\\\"q"]


def test_a_list_as_text_reads_as_the_list() -> None:
    text = JsonStrings.of(ODD)
    assert len(text) == len(ODD)
    assert [text[i] for i in range(len(ODD))] == ODD
    assert text[-1] == ODD[-1]
    assert list(text) == ODD and text == ODD and text.strings() == ODD
    assert text.json() == orjson.dumps(ODD)
    assert JsonStrings.parse(orjson.dumps(ODD)) == text


def test_slices_gathers_and_joins_give_the_lists_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonstrings, "GATHER_STRINGS", 2)  # several gathers
    text = JsonStrings.of(ODD)
    ids = np.array([3, 0, 14, 3, 7, 1], dtype=np.int64)
    picked = [ODD[i] for i in ids]
    assert text.take(ids) == picked and text.take(ids).json() == orjson.dumps(picked)
    assert text.take(np.zeros(0, dtype=np.int64)) == [] and text.take(np.zeros(0, np.int64)).json() == b"[]"
    assert text[2:9] == ODD[2:9] and text[2:9].json() == orjson.dumps(ODD[2:9])
    assert text[::3] == ODD[::3]
    assert text[2:9].take(np.array([6, 0])) == [ODD[8], ODD[2]]
    joined = JsonStrings.concat([text[4:], ["new", 'n"w'], [], text.take(ids)])
    expected = [*ODD[4:], "new", 'n"w', *picked]
    assert joined == expected and joined.json() == orjson.dumps(expected)
    assert JsonStrings.concat([[], []]) == [] and JsonStrings.concat([]).json() == b"[]"
    assert strings_at(text, ids) == picked == strings_at(ODD, ids)
    assert taken(text, ids) == picked and isinstance(taken(text, ids), JsonStrings)
    assert taken(ODD, ids) == picked and isinstance(taken(ODD, ids), list)


def test_chained_strings_are_gathered_part_by_part_in_the_order_asked() -> None:
    parts = [JsonStrings.of(ODD[:5]), list(ODD[5:9]), [], JsonStrings.of(ODD[9:])]
    chained = ChainedStrings(parts)
    ids = np.array([12, 0, 5, 4, 12, 9, 8, len(ODD) - 1], dtype=np.int64)
    assert chained.at(ids) == [ODD[i] for i in ids] == strings_at(chained, ids)
    assert chained.at(np.zeros(0, dtype=np.int64)) == []
    assert list(chained) == list(ODD) and chained[3:7] == ODD[3:7]


def test_it_is_written_as_its_text_wherever_it_is_in_a_value() -> None:
    text = JsonStrings.of(ODD)
    assert dump_json(text) == orjson.dumps(ODD)
    assert dump_json({"keys": text[1:], "n": 3}) == orjson.dumps({"keys": ODD[1:], "n": 3})
    with pytest.raises(TypeError):
        dump_json({"x": object()})


@pytest.mark.parametrize("raw", [b"[1,2]", b'["a", "b"]', b'{"a": "b"}', b'["a",]', b'["a" "b"]', b'"a"',
                                 b'["a"],["b"]', b"", b"[", b'["a\\"]'])
def test_what_is_not_a_compact_list_of_strings_is_not_taken_as_one(raw: bytes) -> None:
    assert JsonStrings.parse(raw) is None


def test_the_scan_accepts_whitespace_between_strings_and_counts_them() -> None:
    data = np.frombuffer(b'[ "a" ,\n "b\\\\" ]', dtype=np.uint8)
    spans = string_spans(data)
    assert spans is not None and spans.tolist() == [[2, 5], [9, 14]]
    assert string_spans(data, 2) is not None and string_spans(data, 3) is None
    assert string_spans(np.frombuffer(b"[ ]", dtype=np.uint8)) is not None
    assert JsonStrings.parse(b"[]") == []
