"""Recall@k, SQuAD EM/F1, evaluate_run, and run files (reading, resumable writing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gearag.errors import DataError
from gearag.evaluation import (
    evaluate_run,
    exact_match,
    f1_score,
    normalize_answer,
    recall_at_k,
)
from gearag.model import GoldRef, Question
from gearag.runfile import RunWriter, read_run

# --------------------------------------------------------------------------- recall


def test_recall_at_k_hand_computed() -> None:
    retrieved = [("A", "a"), ("X", "x"), ("B", "b"), ("Y", "y"), ("C", "c")]
    gold = [GoldRef("A"), GoldRef("B"), GoldRef("C"), GoldRef("D")]
    assert recall_at_k(retrieved, gold, 1) == 1 / 4
    assert recall_at_k(retrieved, gold, 2) == 1 / 4
    assert recall_at_k(retrieved, gold, 3) == 2 / 4
    assert recall_at_k(retrieved, gold, 5) == 3 / 4
    assert recall_at_k(retrieved, gold, 100) == 3 / 4
    assert recall_at_k([], gold, 5) == 0.0


def test_recall_with_text_disambiguates_repeated_titles() -> None:
    gold = [GoldRef("Paris", "Paris is in Texas."), GoldRef("Lyon")]
    wrong_paris = [("Paris", "Paris is the capital of France."), ("Lyon", "Lyon.")]
    assert recall_at_k(wrong_paris, gold, 2) == 0.5
    right_paris = [("Paris", "  Paris is in\nTexas. "), ("Lyon", "Lyon.")]
    assert recall_at_k(right_paris, gold, 2) == 1.0
    assert recall_at_k(right_paris, gold, 1) == 0.5


def test_recall_counts_each_gold_once() -> None:
    retrieved = [("A", "one"), ("A", "two"), ("A", "three")]
    assert recall_at_k(retrieved, [GoldRef("A"), GoldRef("B")], 3) == 0.5


def test_recall_needs_gold() -> None:
    with pytest.raises(ValueError):
        recall_at_k([("A", "a")], [], 1)


# --------------------------------------------------------------------------- EM / F1


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("The Beatles!", "beatles"),
        ("  a   Tale of Two  Cities. ", "tale of two cities"),
        ("U.S.A.", "usa"),
        ("Anaheim", "anaheim"),  # "an" inside a word stays
        ("the", ""),
        ("Rock-'n'-roll", "rocknroll"),
        ("An apple, a pear and the plum", "apple pear and plum"),
    ],
)
def test_normalize_answer(text: str, normalised: str) -> None:
    assert normalize_answer(text) == normalised


def test_exact_match() -> None:
    assert exact_match("the Beatles", ["Beatles"]) == 1.0
    assert exact_match("Detroit", ["Detroit, Michigan", "detroit."]) == 1.0
    assert exact_match("Detroit city", ["Detroit"]) == 0.0
    assert exact_match("anything", []) == 0.0


def test_f1_hand_computed() -> None:
    # pred tokens {cat, sat}, gold {cat}: P = 1/2, R = 1, F1 = 2/3.
    assert f1_score("The cat sat", ["cat"]) == pytest.approx(2 / 3)
    # pred {john, smith, jr}, gold {john, smith}: P = 2/3, R = 1 → 0.8.
    assert f1_score("John Smith Jr.", ["John Smith"]) == pytest.approx(0.8)
    # Repeated tokens count with multiplicity: pred {a:2 → "x x"}, gold {"x"}: P = 1/2, R = 1.
    assert f1_score("x x", ["x"]) == pytest.approx(2 / 3)
    assert f1_score("red", ["blue"]) == 0.0
    # Max over aliases.
    assert f1_score("Motor City", ["Detroit", "Motor City"]) == 1.0
    assert f1_score("x", []) == 0.0


def test_f1_empty_after_normalisation() -> None:
    assert f1_score("the", ["a"]) == 1.0  # both empty
    assert f1_score("", ["Paris"]) == 0.0
    assert f1_score("Paris", ["the"]) == 0.0


# --------------------------------------------------------------------------- evaluate_run


QUESTIONS = [
    Question("q1", "?", answer="Paris", gold=[GoldRef("A"), GoldRef("B")]),
    Question("q2", "?", answer="Lyon", answer_aliases=["Lugdunum"], gold=[GoldRef("C")]),
    Question("q3", "?"),  # no gold, no answer
]


def _row(qid: str, titles: list[str], answer: str | None = None) -> dict:
    row = {"id": qid, "passages": [{"title": t, "text": t.lower()} for t in titles]}
    if answer is not None:
        row["answer"] = answer
    return row


def test_evaluate_run_hand_computed() -> None:
    rows = [
        _row("q1", ["X", "A", "Y", "B"], answer="paris"),
        _row("q2", ["Z", "W", "C"], answer="Lugdunum city"),
        _row("q3", ["A"]),
    ]
    report = evaluate_run(QUESTIONS, rows, ks=(1, 2, 4))
    # q1: R@1 0, R@2 1/2, R@4 1; q2: R@1 0, R@2 0, R@4 1.
    assert report.recall == pytest.approx({1: 0.0, 2: 0.25, 4: 1.0})
    assert report.n_questions == 3
    assert report.skipped_no_gold == 1
    assert report.em == pytest.approx(0.5)  # q1 exact, q2 not
    assert report.f1 == pytest.approx((1.0 + 2 / 3) / 2)  # q2: {lugdunum, city} vs {lugdunum}
    d = report.to_dict()
    assert d["recall"] == {"R@1": 0.0, "R@2": 25.0, "R@4": 100.0}
    assert d["EM"] == 50.0 and d["F1"] == pytest.approx(83.33)
    assert d["skipped_no_gold"] == 1
    assert [e["id"] for e in d["per_question"]] == ["q1", "q2", "q3"]
    assert d["per_question"][0]["R@2"] == 0.5 and d["per_question"][2]["R@2"] is None
    assert report.row() == {"R@1": "0.0", "R@2": "25.0", "R@4": "100.0", "AR@1": "0.0", "AR@2": "0.0",
                            "AR@4": "0.0", "EM": "50.0", "F1": "83.3"}


def test_evaluate_run_without_answers_has_no_em() -> None:
    rows = [_row("q1", ["A", "B"]), _row("q2", ["C"]), _row("q3", [])]
    report = evaluate_run(QUESTIONS, rows, ks=(2,))
    assert report.recall == {2: 1.0}
    assert report.em is None and report.f1 is None
    assert "EM" not in report.to_dict() and "EM" not in report.row()


def test_questions_without_gold_are_left_out_of_recall_not_scored_zero() -> None:
    rows = [_row("q1", ["A", "B"]), _row("q2", ["X"]), _row("q3", ["A"])]
    report = evaluate_run(QUESTIONS, rows, ks=(2,))
    assert report.recall == {2: 0.5}  # (1 + 0) / 2: q3 is not a third question scoring 0
    assert report.n_recall_questions == 2 and report.skipped_no_gold == 1
    d = report.to_dict()
    assert d["recall_questions"] == 2 and d["skipped_no_gold"] == 1
    assert [e["R@2"] for e in d["per_question"]] == [1.0, 0.0, None]


def test_a_run_whose_questions_have_no_gold_has_recall_na() -> None:
    only = [Question("q3", "?"), Question("q4", "?", answer="Oslo")]
    report = evaluate_run(only, [_row("q3", ["A"]), _row("q4", ["Oslo"])], ks=(2, 5))
    assert report.recall == {2: None, 5: None}
    assert report.row()["R@2"] == "n/a" and report.row()["R@5"] == "n/a"
    d = json.loads(json.dumps(report.to_dict()))
    assert d["recall"] == {"R@2": None, "R@5": None} and d["recall_questions"] == 0 and d["skipped_no_gold"] == 2
    assert all(e["R@2"] is None for e in d["per_question"])
    assert d["answer_recall"] == {"AR@2": 100.0, "AR@5": 100.0}
    assert d["per_question"][0]["AR@2"] is None  # q3 has no answer: left out of AR, not a miss


def test_answers_to_questions_without_a_gold_answer_are_left_out_of_em_f1() -> None:
    rows = [_row("q1", ["A"], answer="Paris"), _row("q2", ["C"], answer="Rome"), _row("q3", ["A"], answer="x")]
    report = evaluate_run(QUESTIONS, rows, ks=(2,))
    assert report.em == pytest.approx(0.5) and report.n_em_questions == 2 and report.skipped_no_answer == 1
    d = report.to_dict()
    assert d["em_questions"] == 2 and d["skipped_no_gold_answer"] == 1
    assert d["per_question"][2]["EM"] is None and d["per_question"][2]["F1"] is None
    only = evaluate_run([Question("q3", "?")], [_row("q3", ["A"], answer="x")], ks=(2,))
    assert only.em is None and only.f1 is None
    assert only.row()["EM"] == "n/a" and only.row()["F1"] == "n/a"
    assert only.to_dict()["EM"] is None and only.to_dict()["skipped_no_gold_answer"] == 1


def test_eval_prints_na_and_the_count_left_out(cli, tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    qfile.write_text('{"id": "q1", "question": "Who?"}\n{"id": "q2", "question": "What?"}\n', encoding="utf-8")
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps(_row(q, ["A"])) + "\n" for q in ("q1", "q2")), encoding="utf-8")
    result = cli("eval", qfile, run, "--json", tmp_path / "report.json")
    assert result.code == 0, result.stderr
    assert "n/a" in result.stdout and "0.0" not in result.stdout
    assert "2 question(s) have no gold passages" in result.stderr
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["recall"]["R@5"] is None and report["per_question"][0]["R@5"] is None


def test_evaluate_run_missing_question_is_an_error() -> None:
    with pytest.raises(DataError, match=r"no row for 1 question\(s\), e\.g\. 'q3'"):
        evaluate_run(QUESTIONS, [_row("q1", ["A"]), _row("q2", ["C"])])


def test_evaluate_run_unknown_question_is_an_error() -> None:
    rows = [_row("q1", []), _row("q2", []), _row("q3", []), _row("q99", [])]
    with pytest.raises(DataError, match="unknown question id 'q99'"):
        evaluate_run(QUESTIONS, rows)


def test_evaluate_run_uses_text_for_musique_style_gold() -> None:
    q = [Question("m", "?", gold=[GoldRef("Paris", "Paris in Texas")])]
    rows = [{"id": "m", "passages": [{"title": "Paris", "text": "Paris in France"},
                                     {"title": "Paris", "text": "Paris in Texas"}]}]
    assert evaluate_run(q, rows, ks=(1, 2)).recall == {1: 0.0, 2: 1.0}


# --------------------------------------------------------------------------- run files


def test_read_run_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"id": "a", "passages": []}\n\n{"id": "b", "passages": [}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 3: invalid JSON"):
        read_run(path)
    path.write_text('{"id": "a", "passages": []}\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2: expected an object with 'id' and a 'passages' list"):
        read_run(path)
    path.write_text('{"id": "a", "passages": []}\n\n', encoding="utf-8")
    assert read_run(path) == [{"id": "a", "passages": []}]


def test_run_writer_writes_in_question_order(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "run.jsonl"
    writer = RunWriter(out)
    writer.write({"id": "b", "passages": []})
    writer.write({"id": "a", "passages": []})
    assert writer.partial.exists() and not out.exists()
    rows = writer.finish(["a", "b"])
    assert [r["id"] for r in rows] == ["a", "b"]
    assert [r["id"] for r in read_run(out)] == ["a", "b"]
    assert not writer.partial.exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["run.jsonl"]


def test_run_writer_resumes_after_torn_line(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    partial = tmp_path / "run.jsonl.partial"
    good = "".join(json.dumps({"id": i, "question": f"old {i}", "passages": []}) + "\n" for i in ("q1", "q2"))
    partial.write_text(good + '{"id": "q3", "passages": [{"title": "T', encoding="utf-8")
    writer = RunWriter(out, resume=True)
    assert set(writer.done) == {"q1", "q2"}
    assert partial.read_text(encoding="utf-8") == good  # torn line truncated away
    writer.write({"id": "q3", "question": "new 3", "passages": []})
    writer.close()
    # A second interruption, then a resume that finishes.
    writer = RunWriter(out, resume=True)
    assert set(writer.done) == {"q1", "q2", "q3"}
    rows = writer.finish(["q3", "q2", "q1"])
    assert [(r["id"], r["question"]) for r in rows] == [("q3", "new 3"), ("q2", "old q2"), ("q1", "old q1")]
    assert read_run(out) == rows
    assert not partial.exists()


def test_run_writer_without_resume_starts_over(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    partial = tmp_path / "run.jsonl.partial"
    partial.write_text(json.dumps({"id": "q1", "passages": []}) + "\n", encoding="utf-8")
    writer = RunWriter(out, resume=False)
    assert writer.done == {}
    writer.write({"id": "q2", "passages": []})
    assert [r["id"] for r in writer.finish(["q1", "q2"])] == ["q2"]


def test_answer_recall_whole_words_aliases_and_yes_no_skipped() -> None:
    questions = [
        Question("a", "?", answer="Paris", gold=[GoldRef("A")]),
        Question("b", "?", answer="Lyon", answer_aliases=["Lugdunum"], gold=[GoldRef("B")]),
        Question("c", "?", answer="Yes", gold=[GoldRef("C")]),
        Question("d", "?", answer="the Rhône", gold=[GoldRef("D")]),
    ]
    rows = [
        {"id": "a", "passages": [{"title": "X", "text": "Parisian cafés."}, {"title": "A", "text": "In Paris."}]},
        {"id": "b", "passages": [{"title": "Lugdunum", "text": "A Roman city."}]},
        {"id": "c", "passages": [{"title": "C", "text": "yes"}]},
        {"id": "d", "passages": [{"title": "Z", "text": "no"}, {"title": "Y", "text": "rivers: Rhône, Saône"}]},
    ]
    report = evaluate_run(questions, rows, ks=(1, 2))
    # "Parisian" is not "Paris" (whole words); the alias matches the title; yes/no is left out.
    assert report.answer_recall == pytest.approx({1: 1 / 3, 2: 1.0})
    assert report.n_answer_questions == 3 and report.skipped_yes_no == 1
    d = report.to_dict()
    assert d["answer_recall"] == {"AR@1": pytest.approx(33.33), "AR@2": 100.0}
    assert d["answer_recall_skipped_yes_no"] == 1
    assert d["per_question"][0]["AR@1"] == 0.0 and d["per_question"][2]["AR@1"] is None  # yes/no: n/a


def test_pool_rows_passage_recall_via_sources() -> None:
    questions = [Question("q", "?", answer="Lyon", gold=[GoldRef("A"), GoldRef("B", "b text")])]
    summary = {"id": "sirerag:9", "title": "", "text": "Lyon is in France.", "kind": "summary",
               "sources": [{"id": "pa", "title": "A"}, {"id": "pb", "title": "B"}]}
    chunk = {"id": "pc", "title": "C", "text": "c", "kind": "chunk", "sources": [{"id": "pc", "title": "C"}]}
    rows = [{"id": "q", "passages": [chunk, summary]}]
    # Without the corpus B (gold with text) matches by title; with it, by title and text.
    report = evaluate_run(questions, rows, ks=(1, 2))
    assert report.recall == {1: 0.0, 2: 1.0} and report.pool_rows
    assert report.answer_recall == {1: 0.0, 2: 1.0}
    corpus = {"pa": ("A", "a text"), "pb": ("B", "other text"), "pc": ("C", "c")}
    assert evaluate_run(questions, rows, ks=(2,), passages_by_id=corpus).recall == {2: 0.5}
    assert report.to_dict()["passage_recall"] == "via sources"
