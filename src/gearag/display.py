"""Terminal rendering of results for ``gearag ask`` and the demo, and :func:`safe` for any text from data.

Everything printed that comes from data — passages, titles, questions, LLM
replies, paths, error messages — goes through :func:`safe`: rich markup is
escaped (``[/x]`` prints as itself instead of crashing or vanishing) and
control characters are replaced (terminal escape sequences from a passage
never reach the terminal).
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gearag.results import RANK, Result, node_entry
from gearag.store.collection import PASSAGES
from gearag.store.interface import IndexStore

#: C0 controls except tab and newline, DEL, and the C1 controls (U+0080–U+009F, e.g. CSI U+009B).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Same, for single-line contexts (table cells, error lines): newlines and tabs too.
_CONTROL_LINE = re.compile("[\x00-\x1f\x7f-\x9f]")


def plain(text: object, *, one_line: bool = False) -> str:
    """``text`` with control characters replaced by U+FFFD (``one_line``: newlines and tabs by spaces)."""
    value = str(text)
    if one_line:
        value = value.replace("\n", " ").replace("\t", " ")
        return _CONTROL_LINE.sub("\ufffd", value)
    return _CONTROL.sub("\ufffd", value)


def safe(text: object, *, one_line: bool = False) -> str:
    """``text`` ready to embed in rich markup: controls replaced, markup escaped."""
    return escape(plain(text, one_line=one_line))


def json_for_terminal(text: str) -> str:
    """JSON text with C1 controls and DEL written as ``\\u`` escapes (``json.dumps`` leaves them raw).

    Lossless: the JSON means the same; only the terminal is spared.
    """
    return re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", text)


def snippet(text: str, width: int = 110) -> str:
    text = " ".join(plain(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def print_result(
    console: Console, index: IndexStore, question: str, result: Result, gold_rows: set[int] | None = None
) -> None:
    """Print the answer (if any), the ranked passages and any expansion paths.

    Passages the answer rests on are marked ``evidence``; a ranking without per-passage scores
    (``Result.score_kind`` :data:`~gearag.results.RANK`) shows its ranks only, never ``1 / rank``.
    """
    console.print(f"[bold]Q:[/] {safe(question)}")
    if result.answer is not None:
        console.print(f"[bold green]{safe(result.answer_label)}:[/] {safe(result.answer)}")
    ranked_only = result.score_kind == RANK
    evidence = set(result.evidence)
    table = Table(show_lines=False, box=None, pad_edge=False)
    table.add_column("#", justify="right")
    if not ranked_only:
        table.add_column("score", justify="right")
    table.add_column("title", style="bold")
    table.add_column("passage")
    for rank, hit in enumerate(result.passages, 1):
        score = [] if ranked_only else [f"{hit.score:.3f}"]
        if hit.collection != PASSAGES:  # a pool node: say what it is and how many passages it covers
            e = node_entry(index, hit)
            what = e["title"] or f"[{e.get('tree', '')} {e.get('kind', '')} L{e.get('level', '')}]"
            label = f"{what} ({len(e['sources'])} passages)" if len(e["sources"]) > 1 else what
            table.add_row(str(rank), *score, escape(label), escape(snippet(e["text"])))
            continue
        p = index.passages[hit.idx]
        mark = " [green]✓[/]" if gold_rows and hit.idx in gold_rows else ""
        if hit.idx in evidence:
            mark += " [cyan](evidence)[/]"
        table.add_row(str(rank), *score, safe(p.title, one_line=True) + mark, safe(snippet(p.text)))
    console.print(table)
    if ranked_only:
        console.print("[dim]# is the rank: this method ranks passages without a score per passage[/]")
    for key in ("paths", "evidence"):
        lines = getattr(result.trace, key, None)
        if lines:
            console.print(f"[bold]{key}:[/]")
            for line in lines[:10]:
                console.print(f"  {safe(line)}")
