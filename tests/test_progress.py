"""Progress display: off unless enabled, and a status line that names the step under way."""

from __future__ import annotations

import io

from rich.console import Console

from gearag.progress import PREFIX, lines_when_piped, progress_mode, status, track


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100), out


def test_status_is_silent_unless_progress_is_enabled(monkeypatch) -> None:
    monkeypatch.setenv("GEARAG_PROGRESS", "0")
    console, out = _console()
    with status(console, "merging the shards") as show:
        show("next step")
    assert out.getvalue() == ""


def test_status_shows_each_step_under_way(monkeypatch) -> None:
    monkeypatch.setenv("GEARAG_PROGRESS", "1")
    console, out = _console()
    with status(console, "building the new shard") as show:
        console.print("shard done")
        show("deriving the union")
        console.print("generation done")
        show("")
    text = out.getvalue()
    assert text.index("building the new shard") < text.index("shard done") < text.index("deriving the union")
    assert "generation done" in text


def test_lines_mode_prints_plain_lines_on_stderr(monkeypatch, capsys) -> None:
    monkeypatch.setenv("GEARAG_PROGRESS", "lines")
    monkeypatch.setenv("GEARAG_PROGRESS_EVERY", "0")
    assert list(track(range(4), total=4, description="extract")) == [0, 1, 2, 3]
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{PREFIX}extract: 1/4 (25%), ")
    assert err[-1].startswith(f"{PREFIX}extract: 4/4 (100%) done")
    assert "\x1b" not in "".join(err)  # no escape codes: a log file reads it


def test_a_short_stage_prints_no_line(monkeypatch, capsys) -> None:
    monkeypatch.setenv("GEARAG_PROGRESS", "lines")
    monkeypatch.delenv("GEARAG_PROGRESS_EVERY", raising=False)
    assert list(track(range(3), total=3, description="quick")) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def test_a_pipe_gets_lines_only_where_a_command_asks(monkeypatch, capsys) -> None:
    monkeypatch.delenv("GEARAG_PROGRESS", raising=False)
    monkeypatch.setenv("GEARAG_PROGRESS_EVERY", "0")
    assert progress_mode() == "off"  # pytest's stderr is not a terminal
    list(track(range(2), total=2, description="silent"))
    assert capsys.readouterr().err == ""
    with lines_when_piped():
        assert progress_mode() == "lines"
        list(track(range(2), total=2, description="shown"))
    assert progress_mode() == "off"
    assert f"{PREFIX}shown: 2/2 (100%)" in capsys.readouterr().err
    monkeypatch.setenv("GEARAG_PROGRESS", "0")
    with lines_when_piped():
        assert progress_mode() == "off"
