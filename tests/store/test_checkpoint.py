"""The extraction checkpoint: torn lines, resume, duplicates, and interrupted index builds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import StubExtractor, tiny_passages
from gearag.config import IndexConfig
from gearag.errors import IndexFormatError
from gearag.extract.run import extract_with_checkpoint
from gearag.indexing import build_index, work_dir_for
from gearag.model import Fact, Passage
from gearag.store.checkpoint import ExtractionCheckpoint, checkpoint_name, passage_hash
from gearag.store.index import Index


def test_passage_hash_is_content_based() -> None:
    a = Passage("1", "Title", "Text")
    assert passage_hash(a) == passage_hash(Passage("other-id", "Title", "Text"))
    assert passage_hash(a) != passage_hash(Passage("1", "Title", "Text!"))
    # The separator keeps title/text boundaries apart.
    assert passage_hash(Passage("1", "ab", "c")) != passage_hash(Passage("1", "a", "bc"))


def test_checkpoint_name_depends_on_key() -> None:
    a, b = checkpoint_name("llm:gpt-4o:v1"), checkpoint_name("llm:gpt-4o:v2")
    assert a != b
    assert a.startswith("extract-llm-gpt-4o-v1-") and a.endswith(".jsonl")
    assert "/" not in checkpoint_name("openie:/some/path/file.json")


def facts(rows: list[list[tuple[str, str, str]]]) -> list[list[Fact]]:
    return [[Fact(*t) for t in row] for row in rows]


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "work" / "ck.jsonl"
    with ExtractionCheckpoint(path) as ck:
        ck.add("h1", [Fact("a", "b", "c")])
        ck.add("h2", [])
        assert "h1" in ck and "h3" not in ck
    again = ExtractionCheckpoint(path)
    assert again.done == {"h1": [Fact("a", "b", "c")], "h2": []}
    assert all(type(t) is Fact for t in again.done["h1"])


def test_checkpoint_file_format_is_unchanged(tmp_path: Path) -> None:
    """One JSON line per passage, each triple a plain list of three strings: what every version wrote."""
    path = tmp_path / "ck.jsonl"
    with ExtractionCheckpoint(path) as ck:
        ck.add("h1", [Fact("Émile Zola", "born in", "Paris"), Fact("Émile Zola", "wrote", "Nana")])
        ck.add("h2", [])
    assert path.read_bytes() == (
        '{"h": "h1", "t": [["Émile Zola", "born in", "Paris"], ["Émile Zola", "wrote", "Nana"]]}\n'
        '{"h": "h2", "t": []}\n'
    ).encode()


def test_checkpoint_written_by_the_previous_version_resumes(tmp_path: Path) -> None:
    """A checkpoint of the tuple era (same bytes) resumes: nothing is extracted again, results are facts."""
    passages = tiny_passages()[:4]
    work = tmp_path / "work"
    work.mkdir()
    old = [StubExtractor.triples_for(p) for p in passages[:3]]
    # Exactly what the previous ExtractionCheckpoint.add wrote for tuples.
    lines = [json.dumps({"h": passage_hash(p), "t": [list(t) for t in ts]}, ensure_ascii=False)
             for p, ts in zip(passages[:3], old, strict=True)]
    ck_file = work / checkpoint_name("stub-v1")
    ck_file.write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    counting = StubExtractor()
    result = extract_with_checkpoint(passages, counting, work)
    assert [p.id for p in counting.seen] == [passages[3].id]
    assert result == facts([StubExtractor.triples_for(p) for p in passages])
    assert all(type(t) is Fact for row in result for t in row)
    # Appending kept the old lines as they were.
    assert ck_file.read_text(encoding="utf-8").splitlines()[:3] == lines


def test_checkpoint_torn_last_line_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "ck.jsonl"
    good = json.dumps({"h": "h1", "t": [["a", "b", "c"]]}) + "\n" + json.dumps({"h": "h2", "t": []}) + "\n"
    path.write_bytes(good.encode() + b'{"h": "h3", "t": [["x", "y"')
    ck = ExtractionCheckpoint(path)
    assert set(ck.done) == {"h1", "h2"}
    assert path.read_bytes() == good.encode()
    # New lines are appended after the truncation point, so the file stays valid JSONL.
    ck.add("h3", [Fact("x", "y", "z")])
    ck.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["h"] for line in lines] == ["h1", "h2", "h3"]
    assert ExtractionCheckpoint(path).done["h3"] == [Fact("x", "y", "z")]


@pytest.mark.parametrize(
    "bad_line",
    [b"not json at all\n", b'{"h": "h2"}\n', b'{"h": "h2", "t": [["only", "two"]]}\n', b'{"t": []}\n'],
)
def test_checkpoint_stops_at_first_bad_line(tmp_path: Path, bad_line: bytes) -> None:
    path = tmp_path / "ck.jsonl"
    first = (json.dumps({"h": "h1", "t": []}) + "\n").encode()
    path.write_bytes(first + bad_line + (json.dumps({"h": "h9", "t": []}) + "\n").encode())
    ck = ExtractionCheckpoint(path)
    assert set(ck.done) == {"h1"}
    assert path.read_bytes() == first


def test_resume_skips_done_passages(tmp_path: Path) -> None:
    passages = tiny_passages()
    work = tmp_path / "work"
    failing = StubExtractor(fail_after=3)
    with pytest.raises(RuntimeError, match="stopped after 3"):
        extract_with_checkpoint(passages, failing, work)
    assert len(failing.seen) == 3
    (ck_file,) = work.iterdir()
    assert ck_file.name == checkpoint_name("stub-v1")
    assert len(ck_file.read_text(encoding="utf-8").splitlines()) == 3

    counting = StubExtractor()
    result = extract_with_checkpoint(passages, counting, work)
    assert [p.id for p in counting.seen] == [p.id for p in passages[3:]]
    assert result == facts([StubExtractor.triples_for(p) for p in passages])

    # A third run extracts nothing at all.
    idle = StubExtractor()
    assert extract_with_checkpoint(passages, idle, work) == result
    assert idle.seen == []


def test_other_extractor_key_starts_fresh(tmp_path: Path) -> None:
    passages = tiny_passages()[:3]
    work = tmp_path / "work"
    extract_with_checkpoint(passages, StubExtractor("stub-v1"), work)
    other = StubExtractor("stub-v2")
    extract_with_checkpoint(passages, other, work)
    assert len(other.seen) == 3
    assert len(list(work.iterdir())) == 2


def test_duplicate_passages_are_extracted_once(tmp_path: Path) -> None:
    base = tiny_passages()[:3]
    passages = [base[0], base[1], Passage("dup-of-0", base[0].title, base[0].text), base[2],
                Passage("dup-of-2", base[2].title, base[2].text)]
    counting = StubExtractor()
    result = extract_with_checkpoint(passages, counting, tmp_path / "work")
    assert [p.id for p in counting.seen] == [base[0].id, base[1].id, base[2].id]
    assert result == facts([StubExtractor.triples_for(p) for p in passages])
    assert result[2] == result[0] and result[4] == result[3]


def test_no_work_dir_means_no_checkpoint(tmp_path: Path) -> None:
    counting = StubExtractor()
    result = extract_with_checkpoint(tiny_passages()[:2], counting, None)
    assert len(result) == 2 and len(counting.seen) == 2
    # Extractors that still yield plain tuples are given back as facts, with or without a checkpoint.
    assert result == facts([StubExtractor.triples_for(p) for p in tiny_passages()[:2]])
    assert list(tmp_path.iterdir()) == []


def test_interrupted_build_resumes(tmp_path: Path) -> None:
    passages = tiny_passages()
    out = tmp_path / "idx"
    config = IndexConfig.of(extractor="stub")
    with pytest.raises(RuntimeError):
        build_index(passages, out, config, extractor=StubExtractor(fail_after=5))
    assert not out.exists()
    leftovers = [p for p in tmp_path.iterdir()]
    assert leftovers == [work_dir_for(out)]  # only the checkpoint survives, no temp index
    for p in leftovers:
        with pytest.raises(IndexFormatError):
            Index.load(p)

    counting = StubExtractor()
    index = build_index(passages, out, config, extractor=counting)
    assert len(counting.seen) == len(passages) - 5
    assert index.manifest["counts"]["passages"] == len(passages)
    assert index.manifest["counts"]["triples"] == sum(len(StubExtractor.triples_for(p)) for p in passages)
    assert not work_dir_for(out).exists()


def test_build_without_resume_discards_checkpoint(tmp_path: Path) -> None:
    passages = tiny_passages()
    out = tmp_path / "idx"
    with pytest.raises(RuntimeError):
        build_index(passages, out, IndexConfig.of(extractor="stub"), extractor=StubExtractor(fail_after=4))
    counting = StubExtractor()
    build_index(passages, out, IndexConfig.of(extractor="stub"), extractor=counting, resume=False)
    assert len(counting.seen) == len(passages)
