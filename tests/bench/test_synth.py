"""``gearag synth`` on a real 2Wiki slice: deterministic, consistent renamed copies, planted questions, streaming."""

from __future__ import annotations

import json
import re
import threading
import tracemalloc
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import TINY, assert_clean_error, write_wiki_slice
from gearag.bench.synth import name_tokens, synthesise
from gearag.data import GoldMatcher, load_corpus, load_questions
from gearag.errors import DataError, OutputError
from gearag.extract.openie import OpenIEExtractor

WORD = re.compile(r"\w+")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_wiki_slice(tmp_path_factory.mktemp("synth-src"), 60, 12)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _by_copy(rows: list[dict]) -> dict[int, dict[str, dict]]:
    """copy → source id → row."""
    out: dict[int, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        copy, src = r["id"].split(":", 1)
        out[int(copy[1:])][src] = r
    return out


def test_same_seed_same_bytes_other_seed_other_names(source: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, qfile = source
    a = synthesise(corpus, qfile, tmp_path / "a", 500, seed=7)
    b = synthesise(corpus, qfile, tmp_path / "b", 500, seed=7)
    c = synthesise(corpus, qfile, tmp_path / "c", 500, seed=8)
    for name in ("corpus.jsonl", "questions.json"):
        assert (a.out / name).read_bytes() == (b.out / name).read_bytes()
    assert (a.out / "corpus.jsonl").read_bytes() != (c.out / "corpus.jsonl").read_bytes()
    # Copy 0 is the source as it is, whatever the seed.
    first = _rows(c.out / "corpus.jsonl")[0]
    src = json.loads(corpus.read_text())[0]
    assert (first["title"], first["text"]) == (src["title"], src["text"])


def test_a_passages_mention_of_another_title_still_resolves_in_every_copy(
    source: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, qfile = source
    src = load_corpus(corpus)
    n = len(src)
    synthesise(corpus, qfile, tmp_path / "s", 4 * n)
    copies = _by_copy(_rows(tmp_path / "s" / "corpus.jsonl"))
    assert sorted(copies) == [0, 1, 2, 3]
    links = [(a.id, b.id) for a in src for b in src
             if a is not b and re.search(rf"(?<!\w){re.escape(b.title)}(?!\w)", a.text)]
    assert len(links) >= 5  # the slice has real links to check
    for k in (1, 2, 3):
        for a_id, b_id in links:
            a, b = copies[k][a_id], copies[k][b_id]
            assert re.search(rf"(?<!\w){re.escape(b['title'])}(?!\w)", a["text"]), (k, a_id, b_id)
            assert b["title"] != copies[0][b_id]["title"]  # and the title was renamed


def test_copies_never_collide(source: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, qfile = source
    n = len(load_corpus(corpus))
    synthesise(corpus, qfile, tmp_path / "s", 5 * n)
    rows = _rows(tmp_path / "s" / "corpus.jsonl")
    assert len({r["id"] for r in rows}) == len(rows)
    assert len({r["title"] for r in rows}) == len(rows)  # 2Wiki titles are unique, so every copy's are
    assert len({(r["title"], r["text"]) for r in rows}) == len(rows)
    copies = _by_copy(rows)
    words = {k: {w for r in c.values() for w in WORD.findall(r["title"] + " " + r["text"])} for k, c in copies.items()}
    # A word new in copy k (not in the source) appears in no other copy.
    for k in range(1, 5):
        new = words[k] - words[0]
        assert new
        for j in range(1, 5):
            if j != k:
                assert not new & words[j], (k, j, sorted(new & words[j])[:5])


def test_planted_questions_gold_passages_are_in_their_copy(source: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, qfile = source
    n = len(load_corpus(corpus))
    total = 2 * n + n // 3  # the last copy is partial
    result = synthesise(corpus, qfile, tmp_path / "s", total)
    passages = load_corpus(tmp_path / "s" / "corpus.jsonl")
    assert len(passages) == total == result.manifest["counts"]["passages"]
    questions = load_questions(tmp_path / "s" / "questions.json")
    raw = json.loads((tmp_path / "s" / "questions.json").read_text())
    assert len(questions) == result.manifest["counts"]["questions"]
    matcher = GoldMatcher(passages)
    per_copy: dict[int, int] = defaultdict(int)
    for q, rec in zip(questions, raw, strict=True):
        for rows in matcher.resolve(q):  # raises if a gold passage is missing
            assert len(rows) == 1
            (row,) = rows
            assert passages[row].id.startswith(f"c{rec['copy']}:")
        per_copy[rec["copy"]] += 1
    assert per_copy[0] == per_copy[1] == 12  # every source question, in each full copy
    assert per_copy[2] < 12  # the partial copy plants only questions whose gold it holds
    # The renamed question names its renamed entities: some gold title word appears in the question.
    q1 = [r for r in raw if r["copy"] == 1]
    assert sum(any(w in r["question"] for g in r["gold"] for w in WORD.findall(g) if w[0].isupper())
               for r in q1) >= len(q1) // 2


def test_output_is_streamed_not_held(source: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, qfile = source
    tracemalloc.start()
    try:
        synthesise(corpus, qfile, tmp_path / "s", 30_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = (tmp_path / "s" / "corpus.jsonl").stat().st_size
    assert sum(1 for _ in (tmp_path / "s" / "corpus.jsonl").open()) == 30_000
    # Holding the 30,000 passages would take more than the file's size; streaming needs a fraction. tracemalloc
    # counts every thread's allocations: a thread another test left running (a service's) shows in the peak.
    assert peak < size / 4, (peak, size, [t.name for t in threading.enumerate()])


def test_triples_from_an_index_are_renamed_with_their_passages(tmp_path: Path, tiny_index) -> None:
    corpus, qfile = tmp_path / "tiny.json", tmp_path / "q.json"
    corpus.write_text(json.dumps([{"title": t, "text": x} for t, x in TINY]))
    qfile.write_text(json.dumps([{"id": "q1", "question": "Who is the father of Stephen Curry?",
                                  "answer": "Dell Curry", "gold": ["Dell Curry", "Stephen Curry"]}]))
    result = synthesise(corpus, qfile, tmp_path / "s", 3 * len(TINY), triples=tiny_index.path)
    out = tmp_path / "s"
    passages = load_corpus(out / "corpus.jsonl")
    extracted = list(OpenIEExtractor(out / "triples.json").extract(passages))  # every passage has its doc
    assert result.manifest["counts"]["triples"] == sum(len(t) for t in extracted) == 3 * len(tiny_index.triples)
    for p, facts in zip(passages, extracted, strict=True):
        for fact in facts:  # the stub's triples are (title, "mentions", Word in text)
            assert fact.subject == p.title
            assert re.search(rf"(?<!\w){re.escape(fact.object)}(?!\w)", p.text)
    q = json.loads((out / "questions.json").read_text())
    c2 = next(r for r in q if r["copy"] == 2)
    assert "Curry" not in c2["question"] and c2["answer"] in c2["gold"]


def test_name_tokens_come_from_the_data() -> None:
    texts = ["The film was directed by Zed Arno.", "the film", "In June he met Arno."]
    titles = ["Zed Arno", "The Film"]
    names = name_tokens(texts, titles)
    assert {"Zed", "Arno", "June"} <= set(names)
    assert "The" not in names  # occurs lower-case: not a name
    assert "Film" in names  # a title without a name token gets its rarest word
    with pytest.raises(DataError, match="no word to rename"):
        name_tokens([], ["!!"])


def test_bad_inputs_are_one_line_errors(source: tuple[Path, Path], tmp_path: Path, cli) -> None:
    corpus, qfile = source
    assert_clean_error(cli("synth", tmp_path / "nope.json", qfile, "--passages", 10, "--out", tmp_path / "o"),
                       "nope.json")
    assert_clean_error(cli("synth", corpus, qfile, "--passages", 10, "--out", tmp_path / "o",
                           "--triples", tmp_path / "none"), "--triples")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert_clean_error(cli("synth", corpus, qfile, "--passages", 10, "--out", foreign), "notes.txt")
    assert (foreign / "notes.txt").read_text() == "mine"
    assert_clean_error(cli("synth", corpus, qfile, "--passages", 10, "--out", tmp_path / "few"), "raise --passages")
    assert not (tmp_path / "few").exists()  # checked before anything is written
    assert cli("synth", corpus, qfile, "--passages", 100, "--out", tmp_path / "ok").code == 0
    assert_clean_error(cli("synth", corpus, qfile, "--passages", 100, "--out", tmp_path / "ok"), "--overwrite")
    assert cli("synth", corpus, qfile, "--passages", 200, "--out", tmp_path / "ok", "--overwrite").code == 0
    assert json.loads((tmp_path / "ok" / "synth.json").read_text())["counts"]["passages"] == 200
    bad_q = tmp_path / "bad_q.json"
    bad_q.write_text(json.dumps([{"id": "x", "question": "?", "gold": ["No Such Title"]}]))
    assert_clean_error(cli("synth", corpus, bad_q, "--passages", 10, "--out", tmp_path / "o2"), "No Such Title")
    other = tmp_path / "other_openie.json"  # triples of another corpus
    other.write_text(json.dumps({"docs": [{"title": "Other", "text": "Other text.", "extracted_triples": []}]}))
    assert_clean_error(cli("synth", corpus, qfile, "--passages", 100, "--out", tmp_path / "o4",
                           "--triples", other), "no OpenIE result")
    with pytest.raises(OutputError):
        synthesise(corpus, qfile, foreign, 10)
    r = cli("synth", corpus, qfile, "--passages", 0, "--out", tmp_path / "o3")
    assert r.code == 2 and "Traceback" not in r.stderr


def test_synth_never_replaces_a_corpus_it_did_not_write(source: tuple[Path, Path], tmp_path: Path, cli) -> None:
    corpus, qfile = source
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "corpus.jsonl").write_text('{"title": "My", "text": "own corpus"}\n', encoding="utf-8")
    assert_clean_error(cli("synth", corpus, qfile, "--passages", 100, "--out", mine), "corpus.jsonl",
                       "did not write")
    # The source corpus itself, under the name synth writes.
    assert_clean_error(cli("synth", mine / "corpus.jsonl", qfile, "--passages", 100, "--out", mine),
                       "input file")
    assert (mine / "corpus.jsonl").read_text(encoding="utf-8") == '{"title": "My", "text": "own corpus"}\n'
    out = tmp_path / "made"
    assert cli("synth", corpus, qfile, "--passages", 100, "--out", out).code == 0
    assert cli("synth", corpus, qfile, "--passages", 120, "--out", out, "--overwrite").code == 0  # its own files
