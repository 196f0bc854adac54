"""Passage ids: every id index/add accept can be named to delete; records without one get free ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import StubExtractor, assert_clean_error, use_stub_extractor, write_jsonl
from gearag.data import load_corpus
from gearag.data.ids import MAX_ID_CHARS, check_id, id_problem, number_missing, numbered_after, read_ids
from gearag.errors import DataError
from gearag.store.index import Index

#: Ids gearag delete (one per line, stripped) or the HTTP API (a URL path segment) could never name.
UNNAMEABLE = {
    "empty": "",
    "spaced": " spaced ",
    "trailing tab": "tab\t",
    "line break": "line\nbreak",
    "carriage return": "a\rb",
    "tab inside": "a\tb",
    "nul": "a\x00b",
    "escape": "a\x1bb",
    "delete": "a\x7fb",
    "c1 next line": "a\x85b",
    "line separator": "a\u2028b",
    "no-break space at the end": "a\xa0",
    "lone surrogate": "a\ud800b",
    "too long": "x" * (MAX_ID_CHARS + 1),
}
#: Ids that look odd but are nameable: kept (a Wikipedia title is a plausible id).
NAMEABLE = ["AC/DC", "a b", "Ünïcödé", "#1", "100%", "x" * MAX_ID_CHARS, "p0?", "Salt Lake City, Utah"]


@pytest.mark.parametrize("name", sorted(UNNAMEABLE))
def test_an_id_delete_could_never_name_is_refused_at_input(tmp_path: Path, cli, name: str) -> None:
    use_stub_extractor(StubExtractor())
    pid = UNNAMEABLE[name]
    assert id_problem(pid) is not None
    corpus = tmp_path / "c.jsonl"  # ASCII JSON: a lone surrogate is written as its escape, as JSON allows
    corpus.write_text("".join(json.dumps(r) + "\n" for r in [{"id": "ok", "title": "A", "text": "Alpha."},
                                                             {"id": pid, "title": "B", "text": "Beta."}]))
    with pytest.raises(DataError, match=r"c\.jsonl: record 1: passage id .* gearag delete") as info:
        load_corpus(corpus)
    assert "\n" not in str(info.value)
    assert_clean_error(cli("index", corpus, "--out", tmp_path / "idx", "--extractor", "stub"), "c.jsonl: record 1")
    assert not (tmp_path / "idx").exists()
    good = write_jsonl(tmp_path / "good.jsonl", [{"id": "ok", "title": "A", "text": "Alpha."}])
    assert cli("index", good, "--out", tmp_path / "idx", "--extractor", "stub").code == 0
    assert_clean_error(cli("add", tmp_path / "idx", corpus), "c.jsonl: record 1")
    assert [p.id for p in Index.load(tmp_path / "idx").passages] == ["ok"]


def test_every_id_index_accepts_can_be_deleted_by_name(tmp_path: Path, cli) -> None:
    use_stub_extractor(StubExtractor())
    rows = [{"id": pid, "title": f"T{n}", "text": f"Text number {n}."} for n, pid in enumerate(NAMEABLE)]
    corpus = write_jsonl(tmp_path / "c.jsonl", [*rows, {"id": "keep", "title": "K", "text": "Kept."}])
    assert cli("index", corpus, "--out", tmp_path / "idx", "--extractor", "stub").code == 0
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"  {pid}\n\n" for pid in NAMEABLE), encoding="utf-8")  # as a user would type them
    assert read_ids(ids) == NAMEABLE
    result = cli("delete", tmp_path / "idx", ids)
    assert result.code == 0, result.stderr
    assert [p.id for p in Index.load(tmp_path / "idx").passages] == ["keep"]


def test_the_ids_delete_reads_follow_the_same_rule(tmp_path: Path, cli, tiny_index: Index) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("t1\n\n t2 \nbad\x00id\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"ids\.txt: line 4: passage id 'bad\\x00id' contains the control "
                                        r"character U\+0000"):
        read_ids(ids)
    assert_clean_error(cli("delete", tiny_index.path, ids), "ids.txt: line 4", "U+0000")


def test_a_chunk_id_past_the_limit_is_refused_with_its_record(tmp_path: Path) -> None:
    long_id = "x" * (MAX_ID_CHARS - 1)
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "title": "A", "text": "Alpha."},
                                                {"id": long_id, "title": "B", "text": "word " * 400}])
    with pytest.raises(DataError, match=r"record 1: passage id 'x+'… is 1,025 characters long"):
        load_corpus(corpus, max_passage_chars=1000)
    assert [p.id for p in load_corpus(corpus)] == ["a", long_id]  # unsplit, it is a valid id


def test_check_id_returns_a_valid_id_and_names_where_an_invalid_one_came_from() -> None:
    assert check_id("AC/DC", "here") == "AC/DC"
    with pytest.raises(DataError, match=r"^corpus\.json: record 3: passage id '' is empty"):
        check_id("", "corpus.json: record 3")


# --------------------------------------------------------------------------- ids of records without one


@pytest.mark.parametrize(("given", "expected"), [
    ([None, "p0"], ["p2", "p0"]),  # row 0's p0 is another record's: the first free number past the rows
    (["p0", None], ["p0", "p1"]),
    ([None, "p1", None], ["p0", "p1", "p2"]),
    ([None, "p0", None, "p3"], ["p4", "p0", "p2", "p3"]),
    ([None, "p2", "p4", None], ["p0", "p2", "p4", "p3"]),
    ([None, None], ["p0", "p1"]),
])
def test_records_without_an_id_get_ids_no_record_has(given: list[str | None], expected: list[str]) -> None:
    assert number_missing(given, 0) == expected


def test_ids_the_index_holds_are_skipped_too() -> None:
    held = {"p5", "p6", "p9"}
    asked: list[list[str]] = []

    def taken(ids: list[str]) -> set[str]:
        asked.append(ids)
        return held & set(ids)

    # Rows numbered from 5: p5 and p6 are held, so those records get the first free numbers past p5 + 4 rows.
    assert number_missing([None, None, None, "p10", None], 5, taken) == ["p11", "p12", "p7", "p10", "p13"]
    assert asked[0] == ["p5", "p6", "p7", "p9"] and "p10" not in asked[1]
    assert numbered_after(["p11", "p12", "p7", "p10", "p13", "p007", "x99", "p"]) == 14
    assert numbered_after(["a", "b"]) == 0


@pytest.mark.parametrize("order", ["id-less first", "id-less last"])
def test_index_accepts_a_corpus_whose_id_less_records_meet_an_explicit_p0(tmp_path: Path, cli, order: str) -> None:
    use_stub_extractor(StubExtractor())
    rows = [{"title": "A", "text": "Alpha."}, {"id": "p0", "title": "B", "text": "Beta."}]
    if order == "id-less last":
        rows.reverse()
    corpus = write_jsonl(tmp_path / "c.jsonl", rows)
    result = cli("index", corpus, "--out", tmp_path / "idx", "--extractor", "stub")
    assert result.code == 0, result.stderr
    by_title = {p.title: p.id for p in Index.load(tmp_path / "idx").passages}
    assert by_title == ({"A": "p2", "B": "p0"} if order == "id-less first" else {"A": "p1", "B": "p0"})
    assert by_title == {p.title: p.id for p in load_corpus(corpus)}


def test_add_gives_id_less_documents_ids_neither_the_corpus_nor_the_index_has(tmp_path: Path, cli) -> None:
    use_stub_extractor(StubExtractor())
    base = write_jsonl(tmp_path / "base.jsonl", [{"id": "p3", "title": "A", "text": "Alpha."},
                                                 {"id": "p4", "title": "B", "text": "Beta."}])
    assert cli("index", base, "--out", tmp_path / "idx", "--extractor", "stub").code == 0
    # The index's numbering starts at p2 (two rows): p3 and p4 are its passages', p5 this corpus's own.
    more = write_jsonl(tmp_path / "more.jsonl", [{"title": "C", "text": "Gamma."}, {"title": "D", "text": "Delta."},
                                                 {"title": "E", "text": "Epsilon."}, {"id": "p5", "title": "F",
                                                                                     "text": "Phi."}])
    result = cli("add", tmp_path / "idx", more)
    assert result.code == 0, result.stderr
    ids = {p.title: p.id for p in Index.load(tmp_path / "idx").passages}
    assert ids == {"A": "p3", "B": "p4", "C": "p2", "D": "p6", "E": "p7", "F": "p5"}
    # The next add goes on past every p<n> the last one stored.
    again = write_jsonl(tmp_path / "again.jsonl", [{"title": "G", "text": "Gimel."}])
    assert cli("add", tmp_path / "idx", again).code == 0
    assert Index.load(tmp_path / "idx").passages[-1].id == "p8"


@pytest.mark.parametrize("field", ["title", "text"])
def test_a_lone_surrogate_in_a_title_or_text_is_one_line_naming_the_record(tmp_path: Path, field: str) -> None:
    corpus = tmp_path / "c.json"
    record = {"id": "a", "title": "T", "text": "fine"}
    record[field] = "broken \\ud800 here"
    corpus.write_text('[{"id": "ok", "title": "O", "text": "ok"}, '
                      + json.dumps(record).replace("\\\\ud800", "\\ud800") + "]")
    with pytest.raises(DataError, match=rf"record 1: '{field}' holds a lone surrogate"):
        load_corpus(corpus)


def test_the_delete_id_file_is_read_with_bounded_lines(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("from gearag.data.ids import read_ids\nfrom gearag.errors import DataError\n"
            "try:\n    read_ids('/dev/zero')\nexcept DataError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "line 1: longer than an id may be" in done.stdout, done
    long = tmp_path / "ids.txt"
    long.write_text("ok\n" + "x" * (MAX_ID_CHARS + 1) + "\n")
    with pytest.raises(DataError, match="line 2"):  # check_id's limit
        read_ids(long)
    long.write_text("ok\n" + "x" * (10 * MAX_ID_CHARS))
    with pytest.raises(DataError, match="line 2: longer than an id may be"):  # the read's own bound
        read_ids(long)
    exact = tmp_path / "exact.txt"
    exact.write_text("   " + "x" * MAX_ID_CHARS + "   \ny")
    assert read_ids(exact) == ["x" * MAX_ID_CHARS, "y"]
