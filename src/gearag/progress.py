"""Progress bars for long work, shown on an interactive terminal only.

Set ``GEARAG_PROGRESS=1`` to force bars (e.g. under ``tee``), ``0`` to hide them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

T = TypeVar("T")


def progress_enabled() -> bool:
    flag = os.environ.get("GEARAG_PROGRESS")
    if flag is not None:
        return flag not in ("0", "false", "no", "")
    return sys.stderr.isatty()


def track(items: Iterable[T], *, total: int | None = None, description: str = "working") -> Iterator[T]:
    """Iterate ``items`` with a progress bar on stderr when enabled."""
    if not progress_enabled():
        yield from items
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
    block ends."""
    if not progress_enabled():
        yield lambda _text: None
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
