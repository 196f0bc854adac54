"""Every user or environment error is one line naming the file, record or option, exit 2.

Walks every command with an unwritable output, a missing input and a
malformed input, plus the option and passage-size rules.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import StubExtractor, assert_clean_error, use_stub_extractor, write_jsonl
from gearag.data import load_corpus
from gearag.data.corpus import split_text
from gearag.store.index import MANIFEST, Index


@pytest.fixture
def files(tmp_path: Path, tiny_index: Index) -> dict[str, Path]:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n", encoding="utf-8")
    broken_index = tmp_path / "broken-index"
    shutil.copytree(tiny_index.path, broken_index)
    (broken_index / MANIFEST).write_text('{"format": "gearag-index", "format_version": 2, "files": 7}',
                                         encoding="utf-8")
    return {
        "index": tiny_index.path,
        "broken_index": broken_index,
        "missing": tmp_path / "missing.jsonl",
        "corpus": write_jsonl(tmp_path / "corpus.jsonl", [{"title": "A", "text": "Alpha beta."}]),
        "bad_corpus": _write(tmp_path / "bad-corpus.json", json.dumps({"Some Title": ["One sentence.", 42]})),
        "questions": write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "question": "Who?", "gold": ["A"]}]),
        "bad_questions": _write(tmp_path / "bad-q.jsonl", '{"id": "q1", "question": "Who?"}\n{"id": \n'),
        "run": write_jsonl(tmp_path / "run.jsonl", [{"id": "q1", "passages": [{"title": "A", "text": "a"}]}]),
        "bad_run": _write(tmp_path / "bad-run.jsonl", '{"id": "q1", "passages": "none"}\n'),
        "unwritable": blocker / "out",
        "dir": tmp_path,
    }


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


CASES = {
    # command: (unwritable output, missing input, malformed input) — argv templates and a needle each.
    "index": [
        (["index", "{corpus}", "--out", "{unwritable}", "--extractor", "stub"], "a-file"),
        (["index", "{missing}", "--out", "{dir}/new-index", "--extractor", "stub"], "missing.jsonl"),
        (["index", "{bad_corpus}", "--out", "{dir}/new-index", "--extractor", "stub"], "sentence 1 must be a string"),
    ],
    "info": [
        (None, None),
        (["info", "{missing}"], "missing.jsonl"),
        (["info", "{broken_index}"], "'files' is malformed"),
    ],
    "retrieve": [
        (["retrieve", "{index}", "{questions}", "--out", "{unwritable}"], "a-file"),
        (["retrieve", "{index}", "{missing}", "--out", "{dir}/run-out.jsonl"], "missing.jsonl"),
        (["retrieve", "{index}", "{bad_questions}", "--out", "{dir}/run-out.jsonl"], "bad-q.jsonl: line 2"),
    ],
    "eval": [
        (["eval", "{questions}", "{run}", "--json", "{unwritable}"], "a-file"),
        (["eval", "{questions}", "{missing}"], "missing.jsonl"),
        (["eval", "{questions}", "{bad_run}"], "bad-run.jsonl: line 1"),
    ],
    "ask": [
        (None, None),
        (["ask", "{missing}", "Who?"], "missing.jsonl"),
        (["ask", "{broken_index}", "Who?"], "broken-index"),
    ],
    "synth": [
        (["synth", "{corpus}", "{questions}", "--passages", "5", "--out", "{unwritable}"], "a-file"),
        (["synth", "{missing}", "{questions}", "--passages", "5", "--out", "{dir}/new-index"], "missing.jsonl"),
        (["synth", "{corpus}", "{bad_questions}", "--passages", "5", "--out", "{dir}/new-index"],
         "bad-q.jsonl: line 2"),
    ],
    "bench": [
        (["bench", "--corpus", "{corpus}", "--questions", "{questions}", "--out", "{unwritable}"], "a-file"),
        (["bench", "--corpus", "{missing}", "--questions", "{questions}", "--out", "{dir}/new-index"],
         "missing.jsonl"),
        (["bench", "--corpus", "{corpus}", "--questions", "{bad_questions}", "--out", "{dir}/new-index",
          "--methods", "bm25"], "bad-q.jsonl: line 2"),
    ],
    "export": [
        (["export", "{index}", "{unwritable}"], "a-file"),
        (["export", "{missing}", "{dir}/new-index"], "missing.jsonl"),
        (["export", "{broken_index}", "{dir}/new-index"], "'files' is malformed"),
    ],
    "demo": [
        (["demo", "--dir", "{unwritable}"], "a-file"),
        (None, None),  # the demo reads no input
        (["demo", "--dir", "{corpus}"], "is a file"),
    ],
}


@pytest.mark.parametrize("kind", ["unwritable output", "missing input", "malformed input"])
@pytest.mark.parametrize("command", sorted(CASES))
def test_every_command_fails_cleanly(cli, files: dict[str, Path], command: str, kind: str) -> None:
    use_stub_extractor(StubExtractor())
    argv, needle = CASES[command][["unwritable output", "missing input", "malformed input"].index(kind)]
    if argv is None:
        pytest.skip(f"{command} has no {kind}")
    result = cli(*[a.format(**files) for a in argv])
    assert_clean_error(result, needle)
    assert not (files["dir"] / "new-index").exists() and not (files["dir"] / "run-out.jsonl").exists()


@pytest.mark.parametrize("target", ["dir", "index"])
def test_outputs_that_are_directories(cli, files: dict[str, Path], target: str) -> None:
    assert_clean_error(cli("retrieve", files["index"], files["questions"], "--out", files[target]), "is a directory")
    assert_clean_error(cli("eval", files["questions"], files["run"], "--json", files[target]), "is a directory")


def test_index_out_is_checked_before_loading_the_corpus(cli, files: dict[str, Path]) -> None:
    # A missing corpus would be reported first if the output were checked late.
    assert_clean_error(cli("index", files["missing"], "--out", files["corpus"]), "is a file")
    assert_clean_error(cli("index", files["missing"], "--out", files["unwritable"]), "a-file")


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        (["--method", "gear", "--gamma", "nan"], "--gamma must be a finite number"),
        (["--method", "syncge", "--gamma", "inf"], "--gamma must be a finite number"),
        (["--method", "gear", "--scoring", "bogus"], "--scoring: unknown value 'bogus'"),
        (["--method", "bm25", "--beam-width", "5"], "--beam-width does not apply to method 'bm25'"),
    ],
)
def test_bad_or_non_applicable_options_fail_before_any_loading(cli, files: dict[str, Path], options: list[str],
                                                               needle: str) -> None:
    # The index and questions do not exist: the option error must come first.
    result = cli("retrieve", files["missing"], files["missing"], "--out", files["dir"] / "r.jsonl", *options)
    assert_clean_error(result, needle)
    assert_clean_error(cli("ask", files["missing"], "Who?", *options), needle)


def test_overlong_passages_are_split_with_a_warning(cli, tmp_path: Path) -> None:
    use_stub_extractor(StubExtractor())
    big = " ".join(f"word{i}" for i in range(60_000))  # ~530,000 characters
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "big", "title": "Big", "text": big},
                                                {"id": "small", "title": "Small", "text": "Liverpool."}])
    warnings: list[str] = []
    passages = load_corpus(corpus, on_warning=warnings.append)
    assert [p.id for p in passages] == ["big#1", "big#2", "big#3", "small"]
    assert all(len(p.text) <= 200_000 and p.title == "Big" for p in passages[:3])
    assert " ".join(p.text for p in passages[:3]) == big  # split at spaces, nothing lost
    assert len(warnings) == 1 and "'big'" in warnings[0] and "split into 3" in warnings[0]
    result = cli("index", corpus, "--out", tmp_path / "idx", "--extractor", "stub")
    assert result.code == 0, result.stderr
    assert "warning:" in result.stderr and "split into 3 passages" in result.stderr
    assert Index.load(tmp_path / "idx").manifest["counts"]["passages"] == 4
    assert_clean_error(cli("index", corpus, "--out", tmp_path / "idx2", "--max-passage-chars", "10"),
                       "--max-passage-chars")


def test_split_text_without_whitespace_cuts_hard() -> None:
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_index_and_add_give_spacy_bounded_calls(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gearag.extract.spacy.pipeline import DEFAULT_PARSE_CHARS, load_nlp

    nlp = load_nlp()
    real, calls = nlp.pipe, []

    def pipe(texts, **kwargs):
        texts = list(texts)
        calls.append(sum(map(len, texts)))
        return real(texts, **kwargs)

    monkeypatch.setattr(nlp, "pipe", pipe)
    long = " ".join(f"Ship {i} was built in Glasgow for the Clyde Line." for i in range(1200))  # ~60,000
    first = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "title": "Clyde Line", "text": long}])
    assert cli("index", first, "--out", tmp_path / "idx").code == 0
    assert len(calls) >= 2 and max(calls) <= DEFAULT_PARSE_CHARS
    calls.clear()
    more = write_jsonl(tmp_path / "more.jsonl", [{"id": "b", "title": "Forth Line", "text": long}])
    result = cli("add", tmp_path / "idx", more)
    assert result.code == 0, result.stderr
    assert len(calls) >= 2 and max(calls) <= DEFAULT_PARSE_CHARS
