"""Run every row of the grid over one index: recall, latency, iterations and tokens per row."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from gearag.api import Gearag
from gearag.bench.grid import Row
from gearag.evaluation import evaluate_run, recall_by_iteration
from gearag.llm.fallback import totals
from gearag.model import Question
from gearag.progress import track

#: Recall cut-offs of the table (GEAR Table 2 reports R@5/10/15; we add R@2 as HippoRAG does).
KS = (2, 5, 10, 15)
#: Passages requested per question: the deepest cut-off.
TOP_K = max(KS)


def tokens_per_step(rows: Sequence[dict[str, Any]]) -> list[dict[str, float]]:
    """Mean prompt + completion tokens at each step, over the questions that reached it (Figure 4)."""
    sums: dict[int, list[int]] = {}
    for row in rows:
        for n, step in enumerate((row.get("trace") or {}).get("steps") or [], start=1):
            sums.setdefault(n, []).append(int(step.get("tokens_in", 0)) + int(step.get("tokens_out", 0)))
    return [{"iteration": n, "mean_tokens": round(statistics.mean(v), 1), "questions": len(v)}
            for n, v in sorted(sums.items())]


def timed_run(app: Gearag, method: Callable[[str, int], Any], questions: Iterable[Question], k: int = TOP_K,
              ) -> tuple[list[float], list[dict[str, Any]]]:
    """Each question through ``method`` (top ``k``): its latency in seconds and its run-file row.

    Time a method only after a first call (:func:`warm_up`): models, graphs
    and memory maps load on first use.
    """
    latencies, rows = [], []
    for q in questions:
        t0 = time.perf_counter()
        result = method(q.question, k)
        latencies.append(time.perf_counter() - t0)
        rows.append(app.row(result, qid=q.id))
    return latencies, rows


def warm_up(method: Callable[[str, int], Any], k: int = TOP_K) -> float:
    """One untimed call that loads what the method needs; returns its seconds."""
    t0 = time.perf_counter()
    method("warm-up question", k)
    return time.perf_counter() - t0


def evaluate_row(app: Gearag, row: Row, questions: Sequence[Question]) -> dict[str, Any]:
    """One row over ``questions``: the figures the table, the JSON and the plots need."""
    qs = list(questions[: row.limit] if row.limit else questions)
    method = app.method(row.method, **row.options)
    warm_up(method)  # load models, graphs and mmaps before timing
    latencies, run_rows = timed_run(app, method, track(qs, total=len(qs), description=f"{row.label}"))
    iterations: list[int] = []
    tokens: list[int] = []
    for run_row in run_rows:
        trace = run_row.get("trace") or {}
        if "iterations" in trace:
            iterations.append(int(trace["iterations"]))
        used = trace.get("tokens_by_role")
        if used is not None:
            tokens.append(sum(u.get("prompt", 0) + u.get("completion", 0) for u in used.values()))
    report = evaluate_run(qs, run_rows, KS)
    out: dict[str, Any] = {
        "label": row.label, "method": row.method, "options": row.options, "ablation": row.ablation,
        "recall": {str(k): None if v is None else round(100 * v, 1) for k, v in report.recall.items()},
        "median_ms": round(1000 * statistics.median(latencies), 2) if latencies else 0.0,
        "n": len(qs),
    }
    if iterations:
        out["mean_iterations"] = round(statistics.mean(iterations), 2)
    out["mean_tokens"] = round(statistics.mean(tokens), 1) if tokens else None
    if any((r.get("trace") or {}).get("steps") for r in run_rows):
        by_id = {p.id: (p.title, p.text) for p in app.index.passages}
        out["by_iteration"] = recall_by_iteration(qs, run_rows, by_id)
        out["tokens_by_iteration"] = tokens_per_step(run_rows)
    if report.em is not None and report.f1 is not None:
        out["EM"], out["F1"] = round(100 * report.em, 1), round(100 * report.f1, 1)
    fallbacks = totals(r.get("trace") for r in run_rows)
    if fallbacks:  # LLM rows: replies per role and how many the offline engine played (gearag.llm.fallback)
        out["fallbacks"] = fallbacks
    return out
