"""Importing HippoRAG's precomputed OpenIE results (``openie:FILE``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from conftest import DATA
from gearag.errors import ConfigError, DataError
from gearag.extract.base import make_extractor
from gearag.extract.openie import OpenIEExtractor
from gearag.model import Fact, Passage

MUSIQUE = DATA / "musique_train"
OPENIE_FILE = MUSIQUE / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"


@pytest.fixture(scope="module")
def musique_slice() -> tuple[list[Passage], list[dict]]:
    """20 corpus passages and the OpenIE docs that the file holds for them."""
    corpus = json.loads((MUSIQUE / "musique_train_corpus.json").read_text(encoding="utf-8"))
    docs = json.loads(OPENIE_FILE.read_text(encoding="utf-8"))["docs"]
    rows = range(200, 220)
    passages = [Passage(f"m{i}", corpus[i]["title"], corpus[i]["text"]) for i in rows]
    return passages, [docs[i] for i in rows]


def well_formed(doc: dict) -> list[Fact]:
    out: list[Fact] = []
    for t in doc["extracted_triples"]:
        if isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) and x.strip() for x in t):
            triple = Fact(*(" ".join(x.split()) for x in t))
            if triple not in out:
                out.append(triple)
    return out


def write(path: Path, payload: object) -> Path:
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_real_musique_file_matches_by_content(musique_slice):
    passages, docs = musique_slice
    extractor = make_extractor(f"openie:{OPENIE_FILE}")
    assert isinstance(extractor, OpenIEExtractor)
    got = list(extractor.extract(passages))
    assert len(got) == len(passages)
    assert got == [well_formed(d) for d in docs]
    assert sum(map(len, got)) > 100
    # Matching is by content, not position: a shuffled slice gets the same triples.
    order = list(range(len(passages)))
    random.Random(7).shuffle(order)
    shuffled = list(extractor.extract([passages[i] for i in order]))
    assert shuffled == [got[i] for i in order]
    # The real file has malformed (2-, 4-, 5-, 6-element) triples: all counted.
    assert extractor.skipped == 185
    assert extractor.key.startswith("openie-")


def test_key_follows_file_content(tmp_path):
    payload = {"docs": [{"title": "A", "text": "a", "passage": "A\na", "extracted_triples": [["A", "is", "a"]]}]}
    one = OpenIEExtractor(write(tmp_path / "one.json", payload))
    same = OpenIEExtractor(write(tmp_path / "same.json", payload))
    payload["docs"][0]["extracted_triples"].append(["A", "has", "b"])
    other = OpenIEExtractor(write(tmp_path / "other.json", payload))
    assert one.key == same.key
    assert one.key != other.key


def test_malformed_triples_are_skipped_and_counted(tmp_path):
    triples = [
        ["Ann", "born in", "Oslo"],
        ["Ann", "is tall"],  # two elements
        ["Ann", "is", "sister of", "Bo"],  # four elements
        [["Ann", "likes", "tea"]],  # nested
        ["Ann", "", "Oslo"],  # empty predicate
        ["Ann", "aged", 42],  # not a string
        "Ann likes tea",  # not a list
        ["  Ann ", "works  at", "Statoil"],  # whitespace is tidied, not an error
        ["Ann", "born in", "Oslo"],  # duplicate: dropped, not counted
    ]
    doc = {"title": "Ann", "text": "Ann is.", "extracted_triples": triples}
    path = write(tmp_path / "openie.json", {"docs": [doc]})
    extractor = OpenIEExtractor(path)
    assert extractor.skipped == 6
    [got] = extractor.extract([Passage("0", "Ann", "Ann is.")])
    assert got == [Fact("Ann", "born in", "Oslo"), Fact("Ann", "works at", "Statoil")]
    assert all(t.source is None for t in got)


def test_match_on_passage_field_and_repeated_titles(tmp_path):
    docs = [
        {"passage": "Springfield\nA town in Oregon.", "extracted_triples": [["Springfield", "in", "Oregon"]]},
        {"passage": "Springfield\nA city in  Illinois.", "extracted_triples": [["Springfield", "in", "Illinois"]]},
        {"passage": "Untitled text only.", "extracted_triples": [["text", "is", "untitled"]]},
    ]
    extractor = OpenIEExtractor(write(tmp_path / "openie.json", {"docs": docs}))
    passages = [
        Passage("1", "Springfield", "A city in Illinois."),  # whitespace differs from the file
        Passage("0", "Springfield", "A town in Oregon."),
        Passage("2", "", "Untitled text only."),
    ]
    assert [t[0].object for t in extractor.extract(passages)] == ["Illinois", "Oregon", "untitled"]


def test_unmatched_passage_is_an_error_naming_it(tmp_path):
    path = write(tmp_path / "openie.json", {"docs": [{"title": "A", "text": "a", "extracted_triples": []}]})
    passages = [Passage("0", "A", "a"), Passage("1", "Missing Title", "not in the file")]
    stream = OpenIEExtractor(path).extract(passages)
    assert next(stream) == []
    with pytest.raises(DataError) as err:
        next(stream)
    assert "Missing Title" in str(err.value) and str(path) in str(err.value)
    lenient = make_extractor(f"openie:{path}", missing="empty")
    assert list(lenient.extract(passages)) == [[], []]
    with pytest.raises(ConfigError):
        make_extractor(f"openie:{path}", missing="skip")


def test_unreadable_files_are_data_errors(tmp_path):
    missing = tmp_path / "nope.json"
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{docs: [", encoding="utf-8")
    wrong_shape = write(tmp_path / "shape.json", {"results": []})
    bad_doc = write(tmp_path / "doc.json", {"docs": [{"extracted_triples": []}]})
    for path in (missing, bad_json, wrong_shape, bad_doc, tmp_path):
        with pytest.raises(DataError) as err:
            make_extractor(f"openie:{path}")
        assert str(path) in str(err.value)
    with pytest.raises(ConfigError):
        make_extractor("openie")


def test_key_is_the_files_hash_read_in_pieces(tmp_path):
    """The file is read as a stream; its key is still the hash of all its bytes (earlier checkpoints stay valid)."""
    import hashlib

    path = write(tmp_path / "o.json", {"ents_by_doc": [["x"] * 1000],
                                       "docs": [{"title": "T", "text": "t", "extracted_triples": [["a", "b", "c"]]}]})
    ex = OpenIEExtractor(path)
    assert ex.key == f"openie-v1-{hashlib.blake2b(path.read_bytes(), digest_size=12).hexdigest()}"
    assert list(ex.extract([Passage("p", "T", "t")])) == [[Fact("a", "b", "c")]]


def test_a_build_releases_the_files_triples_and_a_reused_extractor_reads_them_again(tmp_path, musique_slice):
    """The extract stage drops the extractor's copy of the file once extraction is checkpointed; using the
    same extractor again (a second build) reads the file again and gives the same triples."""
    from gearag.indexing import build_index

    passages, docs = musique_slice
    path = write(tmp_path / "openie.json", {"docs": docs})
    extractor = OpenIEExtractor(path)
    first = build_index(passages, tmp_path / "a", extractor=extractor)
    assert extractor._triples == [] and extractor._by_title_text == {}  # released after the extract stage
    second = build_index(passages, tmp_path / "b", extractor=extractor)
    assert len(first.triples) > 0 and first.triples.texts() == second.triples.texts()
    assert list(extractor.extract(passages[:3])) == [well_formed(d) for d in docs[:3]]
    assert extractor.skipped == OpenIEExtractor(path).skipped


def test_a_released_extractor_refuses_a_file_that_changed_since_it_was_keyed(tmp_path):
    """The key names the bytes first read; a reload that reads other bytes is an error, not other triples."""
    doc = {"idx": 0, "title": "A", "text": "A is here.", "passage": "A\nA is here.",
           "extracted_triples": [["A", "is", "here"]]}
    path = write(tmp_path / "openie.json", {"docs": [doc]})
    extractor = OpenIEExtractor(path)
    extractor.release()
    assert list(extractor.extract([Passage("p", "A", "A is here.")])) == [[Fact("A", "is", "here")]]  # same file
    extractor.release()
    write(path, {"docs": [{**doc, "extracted_triples": [["A", "is", "elsewhere"]]}]})
    with pytest.raises(DataError, match="changed while gearag was using it"):
        list(extractor.extract([Passage("p", "A", "A is here.")]))
