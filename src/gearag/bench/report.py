"""The bench's outputs: one Markdown table in Table-2 layout, the JSON numbers and two figures.

* ``results.md`` — per (extractor, embedder): recall R@2/5/10/15 with one
  column group per dataset (the GEAR paper's Table 2), then median latency
  per question, mean iterations and mean tokens per question, then the index
  builds;
* ``results.json`` — everything, including recall after every iteration;
* ``recall_by_iteration.png`` — R@15 after each iteration of the multi-step
  methods (GEAR Figure 2), one panel per dataset;
* ``tokens_by_iteration.png`` — mean tokens per iteration (GEAR Figure 4),
  only when a model spent tokens (offline engines use none).

All four go through an :class:`~gearag.outputs.OutputFolder`: ``--out`` may
be a folder of the user's own, and a file of one of these names there that
gearag did not write is refused before the run starts, never replaced.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gearag.bench.evaluate import KS
from gearag.bench.subset import DISTRACTORS
from gearag.llm.fallback import describe
from gearag.outputs import OutputFolder

RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
RECALL_FIGURE = "recall_by_iteration.png"
TOKENS_FIGURE = "tokens_by_iteration.png"
#: Every file the bench writes into ``--out`` (its indices go to their own folders).
FILES = (RESULTS_JSON, RESULTS_MD, RECALL_FIGURE, TOKENS_FIGURE)


def claim(out_dir: Path, inputs: Iterable[Path | None] = ()) -> OutputFolder:
    """``out_dir`` as the bench's output folder, checked before any work (see :class:`OutputFolder`)."""
    return OutputFolder.claim(out_dir, FILES, what="--out", inputs=inputs)


def _table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _groups(results: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Runs grouped by ``extractor · embedder`` (one table each)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for run in results["runs"]:
        groups.setdefault(f"{run['extractor']} · {run['embedder']}", []).append(run)
    return groups


def _labels(runs: list[dict[str, Any]]) -> list[str]:
    labels: list[str] = []
    for run in runs:
        for r in run["rows"]:
            if r["label"] not in labels:
                labels.append(r["label"])
    return labels


def _cell(value: Any, fmt: str = "{:.1f}") -> str:
    return "" if value is None else fmt.format(value)


def _subset(run: dict[str, Any]) -> dict[str, Any] | None:
    subset = run["index"].get("subset")
    return subset if isinstance(subset, dict) else None


def scope_note(results: dict[str, Any]) -> str | None:
    """What ``--limit`` did to the run, in one paragraph (None for a full run)."""
    limit = results.get("limit")
    if not limit:
        return None
    small = {run["dataset"]: s for run in results["runs"] if (s := _subset(run)) is not None}
    if not small:
        return (f"**--limit {limit}:** the first {limit} questions of each dataset, over the full corpus's "
                "index: the same index as a full run, on fewer questions.")
    sizes = "; ".join(
        f"{name} {s['passages']:,} of {s['corpus_passages']:,} passages ("
        + ("the questions' own paragraphs" if s["source"] == "contexts" else
           f"its question file ships no paragraphs: each question's gold passages plus BM25's top {DISTRACTORS}")
        + ")" for name, s in small.items())
    return (f"**--limit {limit}: not comparable to full runs.** Indices marked *subset* hold only the passages "
            f"of those {limit} questions, not the full corpus: {sizes}. Retrieval among so few passages is "
            "easier. For numbers comparable with a full run, rerun with --full-corpus (or without --limit).")


def render(results: dict[str, Any]) -> str:
    """``results.md``."""
    parts = [f"Command: `{results['command']}` · machine: {results['machine']} · date: {results['date']}\n"]
    note = scope_note(results)
    if note:
        parts.append(note + "\n")
    for group, runs in _groups(results).items():
        by = {(run["dataset"], r["label"]): r for run in runs for r in run["rows"]}
        names = [f"{run['dataset']} ({run['rows'][0]['n'] if run['rows'] else 0} q"
                 + (", subset)" if _subset(run) else ")") for run in runs]
        parts.append(f"\n### Recall · extractor · embedder = {group}\n")
        header = ["method"] + [f"{n} R@{k}" for n in names for k in KS]
        rows = []
        for label in _labels(runs):
            cells = [label]
            for run in runs:
                r = by.get((run["dataset"], label))
                cells += [_cell(r["recall"].get(str(k))) if r else "" for k in KS]
            rows.append(cells)
        parts.append(_table(header, rows))
        parts.append(f"\n### Cost · {group}\n")
        header = ["method"] + [f"{run['dataset']} {c}" for run in runs for c in ("ms/q", "iters", "tokens/q")]
        rows = []
        for label in _labels(runs):
            cells = [label]
            for run in runs:
                r = by.get((run["dataset"], label))
                if r is None:
                    cells += ["", "", ""]
                    continue
                tokens = r.get("mean_tokens")
                cells += [_cell(r["median_ms"]), _cell(r.get("mean_iterations"), "{:.2f}"),
                          _cell(tokens, "{:.0f}") if tokens is not None else "—"]
            rows.append(cells)
        parts.append(_table(header, rows))
        parts.append("\nms/q: median latency per question; iters: mean iterations (multi-step methods); "
                     "tokens/q: mean LLM tokens per question (— = offline engine, no model). "
                     "Rows with fewer questions say so in their label.\n")
        fell = [f"{run['dataset']} · {r['label']}: " + "; ".join(lines)
                for run in runs for r in run["rows"] if (lines := describe(r.get("fallbacks") or {}))]
        if fell:
            listed = "\n".join(f"* {line}" for line in fell)
            parts.append("Replies the model could not make usable, played by the offline engine instead "
                         f"(--no-llm-fallback shows the raw model):\n\n{listed}\n")
    builds = []
    for run in results["runs"]:
        b = run["index"]
        c = b.get("counts", {})
        subset = _subset(run)
        passages = f"{c.get('passages', 0):,}" + (f" (subset of {subset['corpus_passages']:,})" if subset else "")
        builds.append([run["dataset"], run["extractor"], run["embedder"], passages,
                       f"{c.get('triples', 0):,}", _cell(b.get("seconds")), _cell(b.get("peak_rss_mb"), "{:.0f}"),
                       "reused" if b.get("reused") else "built", _cell(run.get("query_peak_rss_mb"), "{:.0f}")])
    parts.append("\n### Index builds\n")
    parts.append(_table(["dataset", "extractor", "embedder", "passages", "triples", "build s", "build peak MB",
                         "this run", "query-process peak MB"], builds))
    return "\n".join(parts) + "\n"


def _stepped(results: dict[str, Any]) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """The multi-step rows (not ablations) per dataset, each named by its label (and extractor if several)."""
    groups = _groups(results)
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for run in results["runs"]:
        for r in run["rows"]:
            if "by_iteration" in r and not r.get("ablation"):
                name = r["label"] if len(groups) == 1 else f"{r['label']} · {run['extractor']}"
                out.setdefault(run["dataset"], []).append((name, r))
    return out


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    return buffer.getvalue()


def _panels(stepped: dict[str, list[tuple[str, dict[str, Any]]]], ylabel: str, title: str,
            points: Any) -> bytes:
    """One panel per dataset, the legend under the panels so that it covers no line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, len(stepped), figsize=(4.2 * len(stepped), 3.8), squeeze=False)
    names = list(dict.fromkeys(name for rows in stepped.values() for name, _ in rows))
    colours = {name: f"C{i % 10}" for i, name in enumerate(names)}  # one colour per method in every panel
    handles: dict[str, Any] = {}
    for ax, (dataset, rows) in zip(axes[0], stepped.items(), strict=True):
        for name, r in rows:
            xs, ys = points(r)
            if xs:
                (line,) = ax.plot(xs, ys, marker="o", label=name, color=colours[name])
                handles.setdefault(name, line)
        ax.set_title(f"{dataset} ({rows[0][1]['n']} q)" if rows else dataset)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title)
    fig.tight_layout()
    fig.legend(list(handles.values()), list(handles), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(3, max(1, len(handles))), fontsize=8, frameon=False)
    data = _png(fig)
    plt.close(fig)
    return data


def _recall_points(r: dict[str, Any]) -> tuple[list[int], list[float]]:
    curve = r["by_iteration"]["curve"]
    return [c["iteration"] for c in curve], [c["R@15"] for c in curve]


def _token_points(r: dict[str, Any]) -> tuple[list[int], list[float]]:
    points = r.get("tokens_by_iteration") or []
    return [p["iteration"] for p in points], [p["mean_tokens"] for p in points]


def plot(results: dict[str, Any]) -> dict[str, bytes]:
    """The figures as PNG bytes, by file name (written by :func:`write`, never straight to a path).

    Recall by iteration when a multi-step method ran; tokens by iteration only when a model spent tokens
    (an offline run has none to draw, and an empty figure says nothing).
    """
    stepped = _stepped(results)
    if not stepped:
        return {}
    figures = {RECALL_FIGURE: _panels(stepped, "R@15 (cumulative, carried forward)",
                                      "Recall by iteration (GEAR Fig. 2)", _recall_points)}
    spent = {ds: [(n, r) for n, r in rows if any(p["mean_tokens"] > 0 for p in r.get("tokens_by_iteration") or [])]
             for ds, rows in stepped.items()}
    spent = {ds: rows for ds, rows in spent.items() if rows}
    if spent:
        figures[TOKENS_FIGURE] = _panels(spent, "mean tokens (prompt + completion)",
                                         "Tokens per iteration (GEAR Fig. 4)", _token_points)
    return figures


def write(results: dict[str, Any], folder: OutputFolder) -> list[Path]:
    """``results.json``, ``results.md`` and both figures into ``folder``, each atomically."""
    written = [folder.write_text(RESULTS_JSON, json.dumps(results, indent=2)),
               folder.write_text(RESULTS_MD, render(results))]
    figures = plot(results)
    for name in (RECALL_FIGURE, TOKENS_FIGURE):
        if name not in figures:
            folder.remove(name)  # an earlier run's figure would describe another run
    return written + [folder.write_bytes(name, data) for name, data in figures.items()]
