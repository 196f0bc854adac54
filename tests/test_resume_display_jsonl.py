"""Resume that knows the index changed, display that escapes data, JSONL split by ``\\n`` only."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import gearag.api
from conftest import StubExtractor, tiny_passages, write_jsonl
from gearag.config import IndexConfig
from gearag.data import load_corpus, load_questions
from gearag.display import print_result
from gearag.indexing import build_index
from gearag.model import Passage
from gearag.results import Result
from gearag.retrieve.base import Hit
from gearag.runfile import read_run
from gearag.store.index import Index


def _build(out: Path, passages: list[Passage], **kwargs: object) -> Index:
    return build_index(passages, out, IndexConfig.of(extractor="stub"), extractor=StubExtractor(),
                       **kwargs)  # type: ignore[arg-type]


def _interrupt_after(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    real = gearag.api.make_method
    calls = {"n": 0}

    def interrupting(index, name, config=None, **options):
        run = real(index, name, config, **options)

        def wrapped(question: str, k: int) -> Result:
            calls["n"] += 1
            if calls["n"] > n:
                raise KeyboardInterrupt
            return run(question, k)

        return wrapped

    monkeypatch.setattr(gearag.api, "make_method", interrupting)


# --------------------------------------------------------------------------- resume after the index changed


def test_resume_after_the_index_was_rebuilt_restarts(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = tmp_path / "idx"
    _build(index, tiny_passages())
    questions = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "q1", "question": "Who is Dell Curry?"},
        {"id": "q2", "question": "Where is Liverpool?"},
        {"id": "q3", "question": "What is a volcano?"},
    ])
    run = tmp_path / "run.jsonl"
    with monkeypatch.context() as patch:
        _interrupt_after(1, patch)
        assert cli("retrieve", index, questions, "--out", run, "--top-k", "2").code == 130
    partial_rows = [json.loads(line) for line in (tmp_path / "run.jsonl.partial").read_text().split("\n") if line]
    assert [r["id"] for r in partial_rows] == ["q1"]
    # Rebuild at the same path with other passages (new ids), then resume the same command.
    renamed = [Passage(f"new{i}", p.title, p.text) for i, p in enumerate(tiny_passages())]
    _build(index, renamed, overwrite=True)
    result = cli("retrieve", index, questions, "--out", run, "--top-k", "2")
    assert result.code == 0, result.stderr
    assert "restarting" in result.stderr and "rebuilt" in result.stderr, result.stderr
    rows = read_run(run)
    assert [r["id"] for r in rows] == ["q1", "q2", "q3"]
    assert all(p["id"].startswith("new") for r in rows for p in r["passages"])  # nothing from the old index


def test_resume_with_the_same_index_continues(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = tmp_path / "idx"
    _build(index, tiny_passages())
    questions = write_jsonl(tmp_path / "q.jsonl", [{"id": f"q{i}", "question": f"Curry {i}?"} for i in range(3)])
    run = tmp_path / "run.jsonl"
    with monkeypatch.context() as patch:
        _interrupt_after(2, patch)
        assert cli("retrieve", index, questions, "--out", run).code == 130
    result = cli("retrieve", index, questions, "--out", run)
    assert result.code == 0 and "resuming: 2 of 3" in result.stderr, result.stderr


# --------------------------------------------------------------------------- display escapes the data it shows


ANSI = "\x1b[31mRED\x1b[0m\x1b]0;pwned\x07"


@pytest.fixture(scope="module")
def hostile_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    passages = [
        Passage("h0", "Bracket [/x] Title", "Quokka text with [/x] and [bold]not bold[/bold] inside."),
        Passage("h1", "Escape", f"Quokka passage carrying {ANSI} terminal escapes and \x9b2J a C1 CSI."),
        Passage("h2", "Plain", "Nothing odd about Liverpool here."),
    ]
    return _build(tmp_path_factory.mktemp("hostile") / "idx", passages)


def test_ask_prints_brackets_and_never_terminal_escapes(cli, hostile_index: Index) -> None:
    result = cli("ask", hostile_index.path, "What does [/x] mean for a Quokka?", "--top-k", "3")
    assert result.code == 0, result.stderr
    assert "What does [/x] mean" in result.stdout  # the question
    assert "Bracket [/x] Title" in result.stdout and "[bold]not bold[/bold]" in result.stdout  # title, passage
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout and "\x07" not in result.stdout
    assert "RED" in result.stdout


def test_ask_json_keeps_data_but_escapes_c1_controls(cli, hostile_index: Index) -> None:
    result = cli("ask", hostile_index.path, "Quokka escapes?", "--top-k", "3", "--json")
    assert result.code == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout
    texts = [p["text"] for p in json.loads(result.stdout)["passages"]]
    assert any(ANSI in t and "\x9b" in t for t in texts)  # lossless JSON


def test_llm_answer_with_markup_is_printed_verbatim(hostile_index: Index) -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False)
    result = Result([Hit(0, 1.0)], answer="[/x] the answer is \x1b[2J[bold]1982")
    print_result(console, hostile_index, "Q [/x]?", result)
    text = buf.getvalue()
    assert "[/x] the answer is" in text and "[bold]1982" in text and "Q [/x]?" in text
    assert "\x1b" not in text


def test_errors_and_eval_titles_are_escaped(cli, tmp_path: Path) -> None:
    weird = tmp_path / "idx\x1b[2J[/x]"
    result = cli("info", weird)
    assert result.code == 2 and "[/x]" in result.stderr and "\x1b" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1
    questions = write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "question": "x?", "gold": ["A"]}])
    run = write_jsonl(tmp_path / "[bold]run:smile:.jsonl", [{"id": "q1", "passages": [{"title": "A", "text": "a"}]}])
    result = cli("eval", questions, run)
    assert result.code == 0, result.stderr
    assert "[bold]run:smile:.jsonl" in result.stdout


# --------------------------------------------------------------------------- JSONL lines split by \n only


SEPARATORS = "a\u2028b\u2029c\u0085d\x1ce\x1df\x1eg\x0bh\x0ci"


def test_jsonl_with_unicode_line_separators_loads(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"title": "T", "text": f"Text {SEPARATORS}"},
                                                 {"title": "U", "text": "Other"}])
    passages = load_corpus(corpus)
    assert len(passages) == 2 and SEPARATORS in passages[0].text
    questions = write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "question": f"Q {SEPARATORS}?"}])
    assert load_questions(questions)[0].question == f"Q {SEPARATORS}?"


def test_retrieve_then_eval_round_trips_any_unicode(cli, tmp_path: Path) -> None:
    index = tmp_path / "idx"
    _build(index, [Passage("u0", "Sep\u2028Title", f"Quokka {SEPARATORS} text"),
                   Passage("u1", "Other", "Liverpool port city")])
    questions = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "q\u20281", "question": f"Quokka {SEPARATORS}?",
         "gold": [["Sep\u2028Title", f"Quokka {SEPARATORS} text"]]},
    ])
    run = tmp_path / "run.jsonl"
    assert cli("retrieve", index, questions, "--out", run, "--top-k", "2").code == 0
    assert "\u2028" in run.read_text(encoding="utf-8")  # written raw (ensure_ascii=False)
    rows = read_run(run)
    assert rows[0]["id"] == "q\u20281" and rows[0]["passages"][0]["title"] == "Sep\u2028Title"
    report = tmp_path / "report.json"
    result = cli("eval", questions, run, "--k", "1,2", "--json", report)
    assert result.code == 0, result.stderr
    assert json.loads(report.read_text(encoding="utf-8"))["recall"]["R@1"] == pytest.approx(100.0)
