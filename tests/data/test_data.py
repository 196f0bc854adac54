"""Corpus and question loaders, gold resolution, entity normalisation."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import write_jsonl
from gearag.data import GoldMatcher, load_corpus, load_questions
from gearag.data.corpus import join_sentences
from gearag.errors import DataError, GearagError
from gearag.model import GoldRef, Passage, Question
from gearag.text import normalise_entity

# --------------------------------------------------------------------------- corpus


def test_corpus_json_list_with_and_without_ids(tmp_path: Path) -> None:
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps([
        {"title": "  A  ", "text": " alpha text "},
        {"id": "x7", "title": "B", "text": "beta"},
        {"id": 42, "title": "C", "paragraph_text": "gamma"},
    ]), encoding="utf-8")
    passages = load_corpus(path)
    assert passages == [
        Passage("p0", "A", "alpha text"),
        Passage("x7", "B", "beta"),
        Passage("42", "C", "gamma"),
    ]
    assert passages[0].content == "A\nalpha text"


def test_corpus_jsonl_keeps_file_order_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        '{"title": "First", "text": "one"}\n\n{"id": "b", "title": "Second", "contents": "two"}\n',
        encoding="utf-8",
    )
    passages = load_corpus(path)
    assert [(p.id, p.title, p.text) for p in passages] == [("p0", "First", "one"), ("b", "Second", "two")]


def test_corpus_jsonl_in_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "corpus.json"
    path.write_text('{"title": "A", "text": "x"}\n{"title": "B", "text": "y"}\n', encoding="utf-8")
    assert [p.title for p in load_corpus(path)] == ["A", "B"]


def test_corpus_title_to_sentences_dict(tmp_path: Path) -> None:
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps({
        "Alpha": ["Alpha is a letter.", " It comes first."],
        "Beta": ["Beta is second.", "It follows alpha."],
        "Gamma": "Gamma as plain text.",
    }), encoding="utf-8")
    passages = load_corpus(path)
    assert [(p.id, p.title, p.text) for p in passages] == [
        ("p0", "Alpha", "Alpha is a letter. It comes first."),
        ("p1", "Beta", "Beta is second. It follows alpha."),
        ("p2", "Gamma", "Gamma as plain text."),
    ]


def test_join_sentences_adds_space_only_where_missing() -> None:
    assert join_sentences(["A.", " B.", "C.", ""]) == "A. B. C."
    assert join_sentences([]) == ""


def test_corpus_text_as_sentence_list(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [{"title": "T", "text": ["One.", "Two."]}])
    assert load_corpus(path)[0].text == "One. Two."


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("[]", "empty"),
        ("", "empty"),
        ("   \n", "empty"),
        ('[{"title": "A"}]', "missing 'text'"),
        ('[{"title": "A", "text": 3}]', "must be a string"),
        ('[{"title": 5, "text": "x"}]', "'title' must be a string"),
        ('[{"title": " ", "text": "  "}]', "neither title nor text"),
        ('["just a string"]', "expected an object"),
        ('[{"id": "a", "title": "A", "text": "x"}, {"id": "a", "title": "B", "text": "y"}]', "duplicate id 'a'"),
        ('[{"title": "A", "text": "x"}, {"title": "B", "text": "y"', "invalid JSON"),
        ("42", "expected a list"),
    ],
)
def test_corpus_errors_name_the_problem(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "corpus.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_corpus(path)
    assert needle in str(info.value)
    assert str(path) in str(info.value)


def test_corpus_error_names_the_record(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [{"title": "A", "text": "a"}, {"title": "B", "text": "b"},
                                              {"title": "C", "body": "c"}])
    with pytest.raises(DataError, match=r"record 2: missing 'text' field \(keys: title, body\)"):
        load_corpus(path)


def test_corpus_jsonl_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"title": "A", "text": "a"}\n{"title": "B", "text": \n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2: invalid JSON"):
        load_corpus(path)


def test_corpus_non_utf8_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"title": "A", "text": "ok"}\n{"title": "B", "text": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"line 2: not valid UTF-8 \(byte 0xe9"):
        load_corpus(path)


def test_corpus_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes("\ufeff".encode() + json.dumps([{"title": "Café", "text": "naïve"}]).encode())
    assert load_corpus(path) == [Passage("p0", "Café", "naïve")]


def test_corpus_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        load_corpus(tmp_path / "nope.json")
    with pytest.raises(DataError, match="is a directory"):
        load_corpus(tmp_path)


def test_data_error_is_a_gearag_error() -> None:
    assert issubclass(DataError, GearagError)


def test_real_corpora_load(data_dir: Path) -> None:
    two = load_corpus(data_dir / "2wikimultihopqa" / "2wikimultihopqa_corpus.json")
    assert len(two) == 6119
    assert two[0].title == "Teutberga" and two[0].text.startswith("Teutberga( died 11 November 875)")
    hotpot = load_corpus(data_dir / "hotpotqa_train" / "hotpotqa_train_corpus.json")
    assert len(hotpot) == 994
    # Sentences are joined into one text that starts with the first sentence.
    raw = json.loads((data_dir / "hotpotqa_train" / "hotpotqa_train_corpus.json").read_text(encoding="utf-8"))
    title, sentences = next(iter(raw.items()))
    assert hotpot[0].title == title.strip()
    assert hotpot[0].text.startswith(sentences[0].strip())
    assert all(s.strip() in hotpot[0].text for s in sentences)
    musique = load_corpus(data_dir / "musique_train" / "musique_train_corpus.json")
    assert len(musique) == 1890
    assert len({p.id for p in musique}) == 1890
    # MuSiQue titles repeat; ids are still unique row ids.
    assert max(Counter(p.title for p in musique).values()) > 1


# --------------------------------------------------------------------------- questions


def test_plain_jsonl_questions(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "q1", "question": " Who? ", "answer": "Me", "gold": [["T1", "text one"], "T2"]},
        {"id": 7, "question": "What?"},
        {"question": "Where?", "answers": ["Here", "There"], "gold": [{"title": "T3", "text": "x"}, {"title": "T4"}]},
    ])
    qs = load_questions(path)
    assert qs[0] == Question("q1", "Who?", "Me", [], [GoldRef("T1", "text one"), GoldRef("T2")])
    assert qs[1] == Question("7", "What?")
    assert qs[2].id == "2"  # no id: the row number
    assert qs[2].answer == "Here" and qs[2].answer_aliases == ["There"]
    assert qs[2].answers == ["Here", "There"]
    assert qs[2].gold == [GoldRef("T3", "x"), GoldRef("T4")]


def test_question_ids_default_to_row(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "q.jsonl", [{"question": "a?"}, {"question": "b?"}])
    assert [q.id for q in load_questions(path)] == ["0", "1"]


def test_answers_list_drops_duplicate_alias() -> None:
    q = Question("x", "?", answer="Detroit", answer_aliases=["Detroit, Michigan", "Detroit", ""])
    assert q.answers == ["Detroit", "Detroit, Michigan"]


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        ([{"id": "a", "question": "x?"}, {"id": "a", "question": "y?"}], "duplicate question id 'a'"),
        ([{"id": "a"}], "missing or empty 'question'"),
        ([{"id": "a", "question": "   "}], "missing or empty 'question'"),
        ([{"id": "a", "question": "x?", "gold": "T"}], "must be a list"),
        ([{"id": "a", "question": "x?", "gold": [5]}], "cannot read gold entry 5"),
        ([5], "expected an object"),
    ],
)
def test_question_errors(tmp_path: Path, rows: list, needle: str) -> None:
    path = write_jsonl(tmp_path / "q.jsonl", rows)
    with pytest.raises(DataError) as info:
        load_questions(path)
    assert needle in str(info.value)


def test_empty_question_list(tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(DataError, match="no questions"):
        load_questions(path)


def test_musique_questions(data_dir: Path) -> None:
    path = data_dir / "musique_train" / "musique_train.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    qs = load_questions(path)
    assert len(qs) == 100
    for q, rec in zip(qs, raw, strict=True):
        assert q.id == rec["id"] and q.question == rec["question"].strip()
        assert q.answer == rec["answer"]
        gold = [(p["title"], p["paragraph_text"]) for p in rec["paragraphs"] if p["is_supporting"]]
        assert [(g.title, g.text) for g in q.gold] == gold
        assert 2 <= len(q.gold) <= 4
    assert sum(len(q.gold) for q in qs) / len(qs) == pytest.approx(2.4, abs=0.05)


def test_hotpotqa_questions(data_dir: Path) -> None:
    path = data_dir / "hotpotqa_train" / "hotpotqa_train.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    qs = load_questions(path)
    assert len(qs) == 100
    for q, rec in zip(qs, raw, strict=True):
        assert q.id == rec["_id"]
        titles = list(dict.fromkeys(t for t, _ in rec["supporting_facts"]))
        assert [g.title for g in q.gold] == titles  # distinct, first-seen order
        assert all(g.text is None for g in q.gold)
    # HotpotQA names a title once per supporting sentence; the loader must dedupe.
    assert any(len(rec["supporting_facts"]) > len(q.gold) for q, rec in zip(qs, raw, strict=True))


def test_2wiki_questions(data_dir: Path) -> None:
    path = data_dir / "2wikimultihopqa" / "2wikimultihopqa.json"
    qs = load_questions(path)
    assert len(qs) == 1000
    first = qs[0]
    assert first.id == "a1d9a65c0bd911eba7f7acde48001122"
    assert first.answer == "Detroit"
    assert "Motor City" in first.answers
    assert first.gold == [GoldRef("Aretha Franklin"), GoldRef("I Can't See Myself Leaving You")]


# --------------------------------------------------------------------------- gold resolution


def test_gold_matcher_title_only_and_title_text() -> None:
    passages = [
        Passage("a", "Paris", "Paris is the capital of France."),
        Passage("b", "Paris", "Paris is a  city in Texas.\n"),
        Passage("c", "Lyon", "Lyon is in France."),
    ]
    m = GoldMatcher(passages)
    q = Question("q", "?", gold=[GoldRef("Paris", "Paris is a city in Texas."), GoldRef("Lyon"), GoldRef("Paris")])
    assert m.resolve(q) == [frozenset({1}), frozenset({2}), frozenset({0, 1})]


def test_gold_matcher_unresolvable_names_the_question() -> None:
    m = GoldMatcher([Passage("a", "Paris", "Paris is the capital of France.")])
    with pytest.raises(DataError, match=r"question q-17: gold passage not in the corpus \(title 'Berlin'\)"):
        m.resolve(Question("q-17", "?", gold=[GoldRef("Berlin")]))
    with pytest.raises(DataError, match=r"question q-18: .*title 'Paris' with the given text"):
        m.resolve(Question("q-18", "?", gold=[GoldRef("Paris", "Some other text")]))


def test_musique_repeated_titles_resolve_by_text(data_dir: Path) -> None:
    passages = load_corpus(data_dir / "musique_train" / "musique_train_corpus.json")
    qs = load_questions(data_dir / "musique_train" / "musique_train.json")
    m = GoldMatcher(passages)
    title_count = Counter(p.title for p in passages)
    repeated = 0
    for q in qs:
        for ref, rows in zip(q.gold, m.resolve(q), strict=True):
            assert len(rows) == 1
            (row,) = rows
            assert passages[row].title == ref.title
            assert " ".join(passages[row].text.split()) == " ".join(ref.text.split())
            if title_count[ref.title] > 1:
                repeated += 1
                # By title alone the reference would be ambiguous.
                assert len(m.resolve(Question("t", "?", gold=[GoldRef(ref.title)]))[0]) > 1
    assert repeated > 0, "expected some MuSiQue gold passages whose title repeats in the corpus"


@pytest.mark.parametrize(
    ("questions", "corpus"),
    [
        ("hotpotqa_train/hotpotqa_train.json", "hotpotqa_train/hotpotqa_train_corpus.json"),
        ("2wikimultihopqa/2wikimultihopqa.json", "2wikimultihopqa/2wikimultihopqa_corpus.json"),
    ],
)
def test_real_gold_resolves(data_dir: Path, questions: str, corpus: str) -> None:
    m = GoldMatcher(load_corpus(data_dir / corpus))
    for q in load_questions(data_dir / questions):
        assert q.gold
        assert all(len(rows) >= 1 for rows in m.resolve(q))


# --------------------------------------------------------------------------- entity names


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The Beatles", "beatles"),
        ("the  Beatles", "BEATLES"),
        ("Beyoncé", "beyonce"),
        ("A Tribe Called Quest", "tribe called quest"),
        ("U.S.", "u s"),
        ("an apple", "Apple"),
    ],
)
def test_normalise_entity_merges(a: str, b: str) -> None:
    assert normalise_entity(a) == normalise_entity(b)


def test_normalise_entity_keeps_distinct_names_apart() -> None:
    assert normalise_entity("The Beatles") == "beatles"
    assert normalise_entity("Theodore") == "theodore"  # "the" prefix inside a word is not an article
    assert normalise_entity("Anaheim") == "anaheim"
    assert normalise_entity("A") == "a"
    assert normalise_entity("!!!") == ""


def test_normalise_entity_strips_marks_only_where_there_are_any() -> None:
    """The ASCII shortcut gives what stripping every combining mark gives (accents, ligatures, mixed)."""
    import random
    import unicodedata

    def reference(name: str) -> str:
        text = "".join(ch for ch in unicodedata.normalize("NFKD", name) if not unicodedata.combining(ch))
        text = re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text.casefold())).strip()
        return re.sub(r"^(the|a|an)\s+", "", text)

    rng = random.Random(5)
    chars = "abcXYZ .,'-éÅñüçøﬁ²ǅ\u0301\u00a0the "
    for _ in range(2000):
        name = "".join(rng.choice(chars) for _ in range(rng.randint(0, 12)))
        assert normalise_entity(name) == reference(name), name
    assert normalise_entity("Ångström ﬁsh") == "angstrom fish"
