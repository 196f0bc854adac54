"""Progress display: off unless enabled, and a status line that names the step under way."""

from __future__ import annotations

import io

from rich.console import Console

from gearag.progress import status


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
