"""Terminal rendering of results for ``gearag ask`` and the demo."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gearag.results import Result
from gearag.store.index import Index


def snippet(text: str, width: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def print_result(
    console: Console, index: Index, question: str, result: Result, gold_rows: set[int] | None = None
) -> None:
    """Print the answer (if any), the ranked passages and any expansion paths."""
    console.print(f"[bold]Q:[/] {escape(question)}")
    if result.answer is not None:
        console.print(f"[bold green]{escape(result.answer_label)}:[/] {escape(result.answer)}")
    table = Table(show_lines=False, box=None, pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("title", style="bold")
    table.add_column("passage")
    for rank, hit in enumerate(result.passages, 1):
        p = index.passages[hit.idx]
        mark = " [green]✓[/]" if gold_rows and hit.idx in gold_rows else ""
        table.add_row(str(rank), f"{hit.score:.3f}", escape(p.title) + mark, escape(snippet(p.text)))
    console.print(table)
    for key in ("paths", "evidence"):
        lines = getattr(result.trace, key, None)
        if lines:
            console.print(f"[bold]{key}:[/]")
            for line in lines[:10]:
                console.print(f"  {escape(line)}")
