"""Passages and triples read from their JSONL files on demand equal the lists a full parse gives."""

from __future__ import annotations

import json
import pickle
import threading
from pathlib import Path

import numpy as np
import pytest

from gearag.errors import IndexFormatError
from gearag.store import rows as rows_module
from gearag.store.index import TripleTable, passage_of_record, triple_of_record
from gearag.store.rows import Column, ConcatRows, JsonlRows, line_offsets


def _write(path: Path, records: list, *, last_newline: bool = True) -> Path:
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in records)
    path.write_text(text + ("\n" if last_newline and records else ""), encoding="utf-8")
    return path


def _records(n: int) -> list[dict[str, str]]:
    return [{"id": f"p{i}", "title": f"Tïtle {i}", "text": "x\u2028y " * (i % 5) + "é\n" * (i % 2)} for i in range(n)]


@pytest.mark.parametrize("scan", [1, 7, 1 << 26])
@pytest.mark.parametrize("last_newline", [True, False])
def test_rows_equal_a_full_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan: int,
                                 last_newline: bool) -> None:
    monkeypatch.setattr(rows_module, "SCAN_BYTES", scan)
    records = _records(23)
    path = _write(tmp_path / "p.jsonl", records, last_newline=last_newline)
    expected = [passage_of_record(r) for r in records]
    got = JsonlRows(path, passage_of_record)
    assert len(got) == 23 and got == expected and expected == got and list(got) == expected
    assert got[5] == expected[5] and got[-1] == expected[-1] and got[3:9:2] == expected[3:9:2]
    assert got.index(expected[7]) == 7 and expected[4] in got
    with pytest.raises(IndexError):
        got[23]
    assert got != expected[:-1] and got != [*expected[:-1], expected[0]]
    np.testing.assert_array_equal(line_offsets(path)[:-1], np.cumsum([0] + [len(line) for line in
                                                                         path.read_bytes().splitlines(True)])[:-1])


def test_empty_file_and_pickling(tmp_path: Path) -> None:
    empty = JsonlRows(_write(tmp_path / "e.jsonl", []), passage_of_record)
    assert len(empty) == 0 and list(empty) == [] and empty == []
    rows = JsonlRows(_write(tmp_path / "t.jsonl", [["a", "b", "c"], ["d", "e", "f"]]), triple_of_record)
    assert rows[1] == ("d", "e", "f")
    again = pickle.loads(pickle.dumps(rows))
    assert again == rows and again[0] == ("a", "b", "c")


def test_a_corrupt_row_is_an_index_format_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('["a", "b", "c"]\n["only two", "fields"]\n{not json\n', encoding="utf-8")
    rows = JsonlRows(path, triple_of_record)
    assert rows[0] == ("a", "b", "c")
    for bad in (1, 2):
        with pytest.raises(IndexFormatError, match=r"t\.jsonl: row \d is corrupt"):
            rows[bad]
    with pytest.raises(IndexFormatError):
        list(rows)


def test_triple_table_columns_and_concatenated_live_rows(tmp_path: Path) -> None:
    a = [["s0", "p0", "o0"], ["s1", "p1", "o1"], ["s2", "p2", "o2"]]
    b = [["t0", "q0", "u0"], ["t1", "q1", "u1"]]
    ra = JsonlRows(_write(tmp_path / "a.jsonl", a), triple_of_record)
    rb = JsonlRows(_write(tmp_path / "b.jsonl", b), triple_of_record)
    union = ConcatRows([ra, rb], [np.array([True, False, True]), None])
    live = [tuple(x) for x in (a[0], a[2], *b)]
    assert len(union) == 4 and list(union) == live and union == live and union[1] == live[1]
    assert union[-1] == live[-1] and union[1:3] == live[1:3]
    table = TripleTable.of_rows(union, np.arange(4))
    assert table.subjects == ["s0", "s2", "t0", "t1"] and list(table.objects) == ["o0", "o2", "u0", "u1"]
    assert table.predicates[2] == "q0" and table.text(1) == "s2 p2 o2" and table.texts()[3] == "t1 q1 u1"
    assert table[2].object == "u0" and table[2].passage == 2
    assert Column(union, 1)[0:2] == ["p0", "p2"]
    # A triple's subject and object read from one parse of its row; other sequences zipped as they are.
    from gearag.store.rows import zip_columns

    parsed: list[int] = []
    real = ra.decode

    def counting(row):  # type: ignore[no-untyped-def]
        parsed.append(1)
        return real(row)

    ra.decode = counting
    assert list(zip_columns(table.subjects, table.objects)) == [("s0", "o0"), ("s2", "o2"), ("t0", "u0"), ("t1", "u1")]
    assert len(parsed) == 3  # a's three rows, each once (the second is not live, but is read by the file scan)
    assert list(zip_columns(["x"], table.objects[:1])) == [("x", "o0")]
    with pytest.raises(ValueError):
        list(zip_columns(["x"], ["y", "z"]))


def test_rows_are_safe_to_read_from_threads(tmp_path: Path) -> None:
    records = _records(300)
    rows = JsonlRows(_write(tmp_path / "p.jsonl", records), passage_of_record)
    expected = [passage_of_record(r) for r in records]
    bad: list[int] = []

    def read(seed: int) -> None:
        order = np.random.default_rng(seed).integers(0, 300, 2000)
        bad.extend(int(i) for i in order if rows[int(i)] != expected[int(i)])

    threads = [threading.Thread(target=read, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_mapped_is_a_lazy_view(tmp_path: Path) -> None:
    from operator import attrgetter

    from gearag.store.rows import Mapped

    records = _records(5)
    texts = Mapped(JsonlRows(_write(tmp_path / "p.jsonl", records), passage_of_record), attrgetter("text"))
    assert len(texts) == 5 and texts == [r["text"] for r in records] and texts[1:3] == [r["text"] for r in records[1:3]]


def test_stored_passage_ids_read_only_the_ids(tmp_path: Path) -> None:
    from gearag.store.passage_ids import stored_passage_ids

    records = _records(7)
    path = _write(tmp_path / "p.jsonl", records)
    assert stored_passage_ids(path) == [r["id"] for r in records]
    other = tmp_path / "q.jsonl"  # another key order: parsed whole
    other.write_text('{"title": "T", "id": "x\\"y", "text": ""}\n{"id": "z", "title": "", "text": ""}\n')
    assert stored_passage_ids(other) == ['x"y', "z"]
    other.write_text('{"id": 5}\n')
    with pytest.raises(IndexFormatError, match=r"q\.jsonl: row 1 is corrupt"):
        stored_passage_ids(other)


def test_a_json_list_is_read_when_a_name_is_first_read(tmp_path: Path) -> None:
    import json

    from gearag.errors import IndexFormatError
    from gearag.store.rows import JsonList

    path = tmp_path / "entities.json"
    path.write_text(json.dumps(["alpha", "beta", "gamma"]))
    names = JsonList(path, 3)
    assert len(names) == 3 and names._items is None  # nothing parsed to know its length
    assert names[1] == "beta" and names[-1] == "gamma" and names[0:2] == ["alpha", "beta"]
    assert names == ["alpha", "beta", "gamma"] and list(names) == ["alpha", "beta", "gamma"]
    again = pickle.loads(pickle.dumps(names))
    assert again._items is None and again == names
    for damaged, n in ((json.dumps(["alpha", "beta"]), 3), ("{not json", 3), (json.dumps({"a": 1}), 1)):
        path.write_text(damaged)
        with pytest.raises(IndexFormatError, match=r"entities\.json is not a list of"):
            JsonList(path, n)[0]


def test_a_json_list_reads_one_name_without_parsing_the_list(tmp_path: Path) -> None:
    """A query reads a few names: each is found by a scan for unescaped quotes and parsed alone."""
    from gearag.store.rows import JsonList

    names = ['plain', 'a "quoted" name', 'ends with \\', '\\"', 'ünïcödé 日本', '', 'x\\\\"y', 'tab\there',
             '[1, 2]', '", "']
    for indent in (None, 1):  # json.dumps's form, and any other whitespace
        path = tmp_path / "entities.json"
        path.write_text(json.dumps(names, ensure_ascii=False, indent=indent), encoding="utf-8")
        lazy = JsonList(path, len(names))
        assert [lazy[i] for i in range(len(names))] == names
        assert lazy[-1] == names[-1] and lazy._items is None  # never parsed whole
        assert list(lazy) == names and lazy._items is not None  # iterating parses it once
    path.write_text(json.dumps([1, "a", "b"]))
    assert JsonList(path, 3)[1] == "a"  # not a list of strings: parsed whole instead
    path.write_text(json.dumps(["a", 1, "b"]))
    with pytest.raises(IndexFormatError, match="is not a list of 2"):  # an element between two strings
        JsonList(path, 2)[1]


def test_a_loaded_index_parses_its_entity_names_only_when_read(tiny_index) -> None:
    from gearag.store.index import Index

    loaded = Index.load(tiny_index.path)
    assert loaded.graph.n_entities == tiny_index.graph.n_entities > 0
    assert getattr(loaded.graph.entities, "_items", "parsed") is None
    assert list(loaded.graph.entities) == list(tiny_index.graph.entities)


def test_an_index_stores_its_row_offsets_and_loading_reads_them(tiny_index, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening an index needs no scan of its JSONL files for newlines: their row offsets are stored with them."""
    import shutil

    from gearag.store.index import Index
    from gearag.store.rows import offsets_rel

    for rel in ("passages.jsonl", "triples.jsonl"):
        stored = np.load(tiny_index.path / offsets_rel(rel))
        np.testing.assert_array_equal(stored, line_offsets(tiny_index.path / rel))

    def no_scan(path: Path) -> np.ndarray:
        raise AssertionError(f"scanned {path} for its rows")

    monkeypatch.setattr(rows_module, "line_offsets", no_scan)
    index = Index.load(tiny_index.path)
    assert isinstance(index.passages.offsets, np.memmap)
    assert list(index.passages) == list(tiny_index.passages)
    assert index.triples[len(index.triples) - 1] == tiny_index.triples[len(tiny_index.triples) - 1]
    monkeypatch.undo()
    # Offsets that do not fit their file (a torn copy) are a one-line error naming the file.
    copy = tmp_path / "copy"
    shutil.copytree(tiny_index.path, copy)
    with (copy / "passages.jsonl").open("ab") as fh:
        fh.write(b'{"id": "x", "title": "X", "text": "x"}\n')
    with pytest.raises(IndexFormatError, match=r"passages\.jsonl: its stored row offsets do not fit"):
        JsonlRows(copy / "passages.jsonl", passage_of_record, np.load(copy / offsets_rel("passages.jsonl")))


def test_facts_and_rows_at_read_many_rows_together(tmp_path: Path) -> None:
    from gearag.model import Fact
    from gearag.store.rows import rows_at

    rows = [["s0", "p0", "o0"], ["s1", "p1", "o1"], ["s2", "p2", "o2"]]
    view = TripleTable.of_rows(JsonlRows(_write(tmp_path / "t.jsonl", rows), triple_of_record), np.arange(3))
    columns = TripleTable(["s0", "s1", "s2"], ["p0", "p1", "p2"], ["o0", "o1", "o2"], np.arange(3))
    for table in (view, columns):
        assert table.facts([2, 0]) == [Fact("s2", "p2", "o2", 2), Fact("s0", "p0", "o0", 0)]
        assert table.facts(range(1, 2)) == [Fact("s1", "p1", "o1", 1)] and table.facts([]) == []

    calls: list[list[int]] = []

    class Batched(list):  # a sequence that reads many rows at once (as a Lance column does)
        def take_rows(self, at: list[int]) -> list[str]:
            calls.append(at)
            return [self[i] for i in at]

    batched = Batched(["a", "b", "c"])
    assert rows_at(batched, np.array([2, 0, 2])) == ["c", "a", "c"] and calls == [[2, 0, 2]]
    assert rows_at(batched, []) == [] and len(calls) == 1
    assert rows_at(["a", "b"], (1, 0)) == ["b", "a"]
