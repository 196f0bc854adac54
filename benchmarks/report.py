"""Render benchmarks/out/results.json into BENCHMARKS.md (between the results markers) and a plot.

    python benchmarks/report.py [results.json ...]

Several result files (e.g. one per dataset run) are merged in order.
Hand-written analysis outside the markers is kept.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MD = ROOT / "BENCHMARKS.md"
PLOT = ROOT / "benchmarks" / "recall_by_iteration.png"
START, END = "<!-- results:start -->", "<!-- results:end -->"


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def render(results: list[dict]) -> str:
    parts = []
    for res in results:
        parts.append(f"Command: `{res['command']}` · machine: {res['machine']} · date: {res['date']}\n")
    builds = []
    for res in results:
        for run in res["runs"]:
            b = run["index"]
            c = b.get("counts", {})
            st = b.get("stages", {})
            builds.append([
                run["dataset"], run["extractor"], run["embedder"], f"{c.get('passages', 0):,}",
                f"{c.get('triples', 0):,}", f"{c.get('entities', 0):,}", f"{b.get('seconds', 0):.1f}",
                f"{st.get('extract', 0):.1f} / {st.get('embed', 0):.1f}", f"{b.get('peak_rss_mb', 0):.0f}",
                f"{run.get('query_peak_rss_mb', 0):.0f}",
            ])
    parts.append("### Index builds\n")
    parts.append(table(["dataset", "extractor", "embedder", "passages", "triples", "entities", "build s",
                        "extract / embed s", "build peak MB", "query-process peak MB*"], builds))
    parts.append("\n*High-water mark of the benchmark process while it runs every method on that index; "
                 "models loaded for earlier rows (minilm) stay resident, so rows after the first minilm row "
                 "include ~600 MB of them.\n")
    for res in results:
        for run in res["runs"]:
            parts.append(f"\n### {run['dataset']} · extractor `{run['extractor']}` · embedder `{run['embedder']}`\n")
            rows = []
            for r in run["rows"]:
                rec = r["recall"]
                rows.append([r["label"], *(f"{rec.get(k, rec.get(str(k), 0)):.1f}" for k in (2, 5, 10, 15)),
                             f"{r['median_ms']:.1f}", str(r.get("mean_iterations", "")), str(r["n"])])
            parts.append(table(["method", "R@2", "R@5", "R@10", "R@15", "median ms/q", "mean iters", "questions"],
                               rows))
            for r in run["rows"]:
                if "by_iteration" in r:
                    curve = r["by_iteration"]["curve"]
                    parts.append(f"\n{r['label']}, recall after each iteration (cumulative, carried forward):\n")
                    parts.append(table(["iteration", "R@5", "R@10", "R@15", "questions still running"],
                                       [[str(c["iteration"]), f"{c['R@5']:.1f}", f"{c['R@10']:.1f}",
                                         f"{c['R@15']:.1f}", str(c["still_running"])] for c in curve]))
    return "\n".join(parts) + "\n"


def plot(results: list[dict]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for res in results:
        for run in res["runs"]:
            for r in run["rows"]:
                if "by_iteration" in r:
                    curve = r["by_iteration"]["curve"]
                    ax.plot([c["iteration"] for c in curve], [c["R@15"] for c in curve], marker="o",
                             label=f"{run['dataset']} ({run['extractor']}, {run['embedder']})")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration")
    ax.set_ylabel("R@15 (cumulative, carried forward)")
    ax.set_title("GEAR-offline: recall by iteration")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=120)
    print(f"wrote {PLOT}")


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]] or [ROOT / "benchmarks" / "out" / "results.json"]
    results = [json.loads(p.read_text()) for p in paths]
    body = render(results)
    text = MD.read_text() if MD.exists() else f"# Benchmarks\n\n{START}\n{END}\n"
    if START not in text:
        text += f"\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    MD.write_text(f"{head}{START}\n{body}{END}{tail}")
    print(f"wrote {MD}")
    plot(results)


if __name__ == "__main__":
    main()
