"""Output paths are checked before any work, and files are replaced atomically."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from conftest import assert_clean_error, write_jsonl
from gearag.errors import OutputError
from gearag.outputs import RECORD, OutputFolder, atomic_write, check_output_dir, check_output_file, replace_file
from gearag.store.index import Index


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "q.jsonl", [
        {"id": "q1", "question": "Who is the father of Stephen Curry?", "gold": ["Dell Curry"]},
        {"id": "q2", "question": "Where were the Beatles formed?", "gold": ["The Beatles"]},
    ])


def _run_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "run.jsonl", [
        {"id": "q1", "passages": [{"id": "t1", "title": "Dell Curry", "text": "x", "score": 1.0}]},
        {"id": "q2", "passages": [{"id": "t3", "title": "The Beatles", "text": "y", "score": 1.0}]},
    ])


def test_retrieve_out_fifo_is_refused_and_left_alone(cli, tiny_index: Index, questions: Path,
                                                      tmp_path: Path) -> None:
    # The stand-in for /dev/stdout: the old code renamed its temporary file over any path.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = cli("retrieve", tiny_index.path, questions, "--out", fifo)
    assert result.code == 2 and "is a FIFO" in result.stderr, result.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert not any(p.name.startswith((".pipe", "pipe.")) for p in tmp_path.iterdir())


def test_retrieve_out_dev_stdout_is_refused(cli, tiny_index: Index, questions: Path) -> None:
    with pytest.raises(OutputError, match="is a special file"):
        check_output_file("/dev/stdout")
    result = cli("retrieve", tiny_index.path, questions, "--out", "/dev/null")
    assert result.code == 2 and "is a special file" in result.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert os.path.islink("/dev/stdout") or not os.path.isfile("/dev/stdout")


def test_a_symlinked_output_updates_its_target(cli, tiny_index: Index, questions: Path, tmp_path: Path) -> None:
    target = tmp_path / "real-run.jsonl"
    target.write_text("", encoding="utf-8")
    link = tmp_path / "run.jsonl"
    link.symlink_to(target)
    result = cli("retrieve", tiny_index.path, questions, "--out", link, "--top-k", "1")
    assert result.code == 0, result.stderr
    assert link.is_symlink() and len(target.read_text(encoding="utf-8").split("\n")) == 3


def test_retrieve_out_equal_to_the_questions_file_is_refused(cli, tiny_index: Index, questions: Path) -> None:
    before = questions.read_bytes()
    result = cli("retrieve", tiny_index.path, questions, "--out", questions)
    assert result.code == 2 and "input file" in result.stderr
    assert questions.read_bytes() == before


def test_eval_json_equal_to_the_run_file_is_refused(cli, questions: Path, tmp_path: Path) -> None:
    run = _run_file(tmp_path)
    before = run.read_bytes()
    result = cli("eval", questions, run, "--json", run)
    assert result.code == 2 and "input file" in result.stderr
    assert run.read_bytes() == before


def test_eval_json_is_checked_before_computing(cli, questions: Path, tmp_path: Path) -> None:
    # An unreadable run file would be reported if eval computed first; the bad --json wins.
    result = cli("eval", questions, tmp_path / "missing-run.jsonl", "--json", tmp_path)
    assert result.code == 2 and "--json" in result.stderr and "is a directory" in result.stderr


def test_eval_json_is_written_atomically(cli, questions: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = cli("eval", questions, _run_file(tmp_path), "--json", report)
    assert result.code == 0, result.stderr
    assert json.loads(report.read_text(encoding="utf-8"))["n_questions"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.jsonl", "report.json", "run.jsonl"]


def test_index_out_that_is_a_file_or_cwd_is_refused(cli, tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"title": "A", "text": "Alpha beta."}])
    assert_clean_error(cli("index", corpus, "--out", corpus), "is a file")
    assert corpus.read_text(encoding="utf-8").startswith("{")
    proc = cli("index", corpus, "--out", ".", "--overwrite")
    assert_clean_error(proc, "current directory")


def test_unwritable_output_is_refused_before_work(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(OutputError, match=r"is not a directory|is a file"):
        check_output_file(blocker / "run.jsonl")
    with pytest.raises(OutputError, match=r"is not a directory|is a file"):
        check_output_dir(blocker / "index")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only directories")
def test_read_only_directory_is_refused(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="cannot write"):
            check_output_file(ro / "run.jsonl")
        with pytest.raises(OutputError, match="cannot write"):
            check_output_dir(ro / "index")
    finally:
        ro.chmod(0o755)


def test_atomic_write_removes_its_temporary_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_write(target) as fh:
        fh.write("new, half written")
        raise RuntimeError("crash")
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_final_rename_only_replaces_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    tmp = tmp_path / "tmp"
    tmp.write_text("data", encoding="utf-8")
    with pytest.raises(OutputError, match="not replaced"):
        replace_file(tmp, fifo)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_demo_refuses_a_directory_it_did_not_write(cli, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "corpus.jsonl").write_text("my own corpus\n", encoding="utf-8")
    assert_clean_error(cli("demo", "--dir", mine), "not written by `gearag demo`")
    assert (mine / "corpus.jsonl").read_text(encoding="utf-8") == "my own corpus\n"
    assert sorted(p.name for p in mine.iterdir()) == ["corpus.jsonl"]


def test_demo_reruns_in_its_own_directory(cli, tmp_path: Path) -> None:
    out = tmp_path / "demo"
    first = cli("demo", "--dir", out, "--method", "bm25")
    assert first.code == 0, first.stderr
    assert (out / ".gearag-demo").is_file() and Index.load(out / "index").manifest["counts"]["passages"] == 12
    again = cli("demo", "--dir", out, "--method", "bm25")
    assert again.code == 0, again.stderr
    assert "bm25" in again.stdout and "R@5" in again.stdout
    assert_clean_error(cli("demo", "--dir", tmp_path / "demo" / "corpus.jsonl"), "is a file")


# --------------------------------------------------------------------------- a folder of gearag-written files

NAMES = ("results.md", "results.json")


def test_a_folder_refuses_a_file_of_its_names_that_gearag_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.md").write_text("my own notes\n", encoding="utf-8")
    (out / "notes.txt").write_text("other names are never touched\n", encoding="utf-8")
    with pytest.raises(OutputError, match=r"holds results\.md, which gearag did not write.*move it away"):
        OutputFolder.claim(out, NAMES)
    assert (out / "results.md").read_text(encoding="utf-8") == "my own notes\n"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "results.md"]  # nothing created


def test_a_folder_gearag_wrote_can_be_written_again_until_a_file_is_changed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    folder = OutputFolder.claim(out, NAMES)
    assert not out.exists()  # claiming creates nothing
    folder.write_text("results.md", "first\n")
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    again = OutputFolder.claim(out, NAMES)  # a rerun into its own folder
    again.write_text("results.md", "second\n")
    again.write_text("results.json", "{}")
    OutputFolder.claim(out, NAMES)
    assert (out / "results.md").read_text(encoding="utf-8") == "second\n"
    assert sorted(p.name for p in out.iterdir()) == [RECORD, "notes.txt", "results.json", "results.md"]
    (out / "results.json").write_text('{"edited": "by the user"}', encoding="utf-8")
    with pytest.raises(OutputError, match=r"results\.json, which gearag did not write there \(or which was changed"):
        OutputFolder.claim(out, NAMES)
    with pytest.raises(OutputError, match="not replaced"):  # checked again at the write itself
        again.write_text("results.json", "{}")
    assert json.loads((out / "results.json").read_text(encoding="utf-8")) == {"edited": "by the user"}


def test_a_folder_refuses_symlinks_fifos_and_folders_under_its_names(tmp_path: Path) -> None:
    mine = tmp_path / "mine.md"
    mine.write_text("mine\n", encoding="utf-8")
    out = tmp_path / "out"
    OutputFolder.claim(out, NAMES).write_text("results.md", "gearag's\n")
    (out / "results.md").unlink()
    (out / "results.md").symlink_to(mine)
    with pytest.raises(OutputError, match=r"results\.md is a symbolic link"):
        OutputFolder.claim(out, NAMES)
    (out / "results.md").unlink()
    os.mkfifo(out / "results.md")
    with pytest.raises(OutputError, match=r"results\.md is a FIFO"):
        OutputFolder.claim(out, NAMES)
    (out / "results.md").unlink()
    (out / "results.md").mkdir()
    with pytest.raises(OutputError, match=r"results\.md is a directory"):
        OutputFolder.claim(out, NAMES)
    assert mine.read_text(encoding="utf-8") == "mine\n"


def test_a_folder_through_a_symlink_is_the_folder_it_names(tmp_path: Path) -> None:
    users = tmp_path / "users-folder"
    users.mkdir()
    (users / "results.json").write_text("[1, 2]", encoding="utf-8")
    link = tmp_path / "out"
    link.symlink_to(users)
    with pytest.raises(OutputError, match=r"results\.json, which gearag did not write"):
        OutputFolder.claim(link, NAMES)
    assert (users / "results.json").read_text(encoding="utf-8") == "[1, 2]"


@pytest.mark.parametrize("where", ["file", "fifo", "/dev/stdout", "/dev/null"])
def test_a_folder_is_not_a_file_or_a_device(tmp_path: Path, where: str) -> None:
    path = {"file": tmp_path / "a-file", "fifo": tmp_path / "pipe"}.get(where, Path(where))
    if where == "file":
        path.write_text("data\n", encoding="utf-8")
    elif where == "fifo":
        os.mkfifo(path)
    with pytest.raises(OutputError, match=r"is a file, not a directory|is a FIFO|special file"):
        OutputFolder.claim(path, NAMES)
    if where == "file":
        assert path.read_text(encoding="utf-8") == "data\n"


def test_a_folder_refuses_to_write_over_an_input(tmp_path: Path) -> None:
    out = tmp_path / "out"
    OutputFolder.claim(out, NAMES).write_text("results.json", "[]")
    # Even gearag's own earlier output, once it is an input of this command, is not replaced.
    with pytest.raises(OutputError, match="input file of this command"):
        OutputFolder.claim(out, NAMES, inputs=[tmp_path / "q.json", out / "results.json"])


def test_an_interrupted_write_leaves_a_folder_the_next_run_accepts(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    OutputFolder.claim(out, NAMES).write_text("results.md", "old\n")
    real = OutputFolder._write_record
    calls: list[int] = []

    def dies_after_the_rename(self: OutputFolder, record: dict) -> None:
        calls.append(1)
        if len(calls) == 2:  # the record's second write comes after the rename
            raise KeyboardInterrupt
        real(self, record)

    monkeypatch.setattr(OutputFolder, "_write_record", dies_after_the_rename)
    with pytest.raises(KeyboardInterrupt):
        OutputFolder.claim(out, NAMES).write_text("results.md", "new\n")
    monkeypatch.undo()
    assert (out / "results.md").read_text(encoding="utf-8") == "new\n"
    OutputFolder.claim(out, NAMES).write_text("results.md", "newer\n")  # the rerun is not refused
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_export_location_is_checked_before_the_index_is_opened(cli, tiny_index: Index, tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("data\n", encoding="utf-8")
    os.mkfifo(tmp_path / "pipe")
    missing = tmp_path / "no-index"  # were the index opened first, its error would come first
    assert_clean_error(cli("export", missing, "/dev/stdout"), "export location", "special file")
    assert_clean_error(cli("export", missing, a_file), "export location", "is a file")
    assert_clean_error(cli("export", missing, tmp_path / "pipe"), "export location", "is a FIFO")
    assert_clean_error(cli("export", tiny_index.path, tiny_index.path / "lance"), "inside the index")
    assert a_file.read_text(encoding="utf-8") == "data\n" and not (tiny_index.path / "lance").exists()
