"""Progress for long work: a bar on an interactive terminal, plain lines where asked, else nothing.

``GEARAG_PROGRESS`` chooses: ``1`` forces bars (e.g. under ``tee``), ``lines`` prints a plain line
(:data:`PREFIX` + text) to stderr every ``GEARAG_PROGRESS_EVERY`` seconds (default 5) of a long
stage — a log file or a CI job gets them, a terminal's bar would be escape codes there — and ``0``
hides them. Unset, a terminal gets bars and a pipe or file gets nothing, unless the command runs
inside :func:`lines_when_piped` (``gearag bench`` does: its builds take minutes).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

T = TypeVar("T")
Mode = Literal["bar", "lines", "off"]

#: The start of every plain progress line (a caller that reads a child's stderr picks them out by it).
PREFIX = "progress: "
#: Seconds between two plain lines of one stage, unless ``GEARAG_PROGRESS_EVERY`` says otherwise.
EVERY = 5.0

_when_piped: Mode = "off"


def progress_mode() -> Mode:
    """``bar``, ``lines`` or ``off`` for this process (see the module docstring)."""
    flag = os.environ.get("GEARAG_PROGRESS")
    if flag is not None:
        flag = flag.strip().lower()
        if flag in ("0", "false", "no", "off", ""):
            return "off"
        return "lines" if flag == "lines" else "bar"
    return "bar" if sys.stderr.isatty() else _when_piped


def progress_enabled() -> bool:
    return progress_mode() != "off"


@contextmanager
def lines_when_piped() -> Iterator[None]:
    """Inside the block, an unset ``GEARAG_PROGRESS`` with stderr not a terminal means ``lines``."""
    global _when_piped
    before, _when_piped = _when_piped, "lines"
    try:
        yield
    finally:
        _when_piped = before


def every() -> float:
    """Seconds between two plain lines of one stage (``GEARAG_PROGRESS_EVERY``, default :data:`EVERY`)."""
    try:
        return max(0.0, float(os.environ.get("GEARAG_PROGRESS_EVERY", EVERY)))
    except ValueError:
        return EVERY


def say(text: str) -> None:
    """One plain progress line on stderr (flushed: a reader of the pipe gets it now)."""
    print(PREFIX + text, file=sys.stderr, flush=True)


def _count(done: int, total: int | None) -> str:
    if not total:
        return f"{done:,}"
    return f"{done:,}/{total:,} ({100 * done // total}%)"


def _lines(items: Iterable[T], total: int | None, description: str) -> Iterator[T]:
    """``items``, with a line every :func:`every` seconds and a last one if any was printed."""
    gap = every()
    start = last = time.monotonic()
    done, said = 0, False
    for item in items:
        yield item
        done += 1
        now = time.monotonic()
        if now - last >= gap:
            say(f"{description}: {_count(done, total)}, {now - start:.0f} s")
            last, said = now, True
    if said:
        say(f"{description}: {_count(done, total)} done in {time.monotonic() - start:.0f} s")


def track(items: Iterable[T], *, total: int | None = None, description: str = "working") -> Iterator[T]:
    """Iterate ``items`` with a progress bar or plain lines on stderr (:func:`progress_mode`)."""
    mode = progress_mode()
    if mode == "off":
        yield from items
        return
    if mode == "lines":
        yield from _lines(items, total, description)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)


@contextmanager
def status(console: Console, text: str) -> Iterator[Callable[[str], None]]:
    """A spinner with ``text`` and the seconds since it was shown, while the block runs (when enabled);
    yields a function that shows another text, its seconds counted from then ("": none). Gone when the
    block ends. In ``lines`` mode each text is one plain line when shown."""
    mode = progress_mode()
    if mode == "off":
        yield lambda _text: None
        return
    if mode == "lines":

        def line(new: str) -> None:
            if new:
                say(new)

        line(text)
        yield line
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as shown:
        task = shown.add_task(text, total=None)

        def show(new: str) -> None:
            nonlocal task
            shown.remove_task(task)
            task = shown.add_task(new, total=None, visible=bool(new))

        yield show
