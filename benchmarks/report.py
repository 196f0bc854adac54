"""Copy a ``gearag bench`` report (and the SiReRAG pools' tables) into BENCHMARKS.md, with the figures.

    python benchmarks/report.py [BENCH_DIR] [SIRERAG_RESULTS_JSON]
    # defaults: benchmarks/out/bench, benchmarks/out/sirerag/results.json (skipped when absent)
    python benchmarks/report.py --llm LLM_DIR     # make bench-llm: LLM_DIR/offline and LLM_DIR/local*

The bench's ``results.md`` goes between the ``results`` markers (latency for the
spaCy-triple indices only: the summary's; every index's recall), a summary of it
against the published numbers between the ``summary`` markers, the tables of
``benchmarks/sirerag_pools.py --report`` between the ``sirerag`` markers.
With ``--llm``, the same rows run offline and with an LLM engine go side by
side, one table per dataset, between the ``llm`` markers (nothing else is
touched). Hand-written analysis outside the markers is kept; the figures are
copied next to BENCHMARKS.md's other images in ``benchmarks/``.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MD = ROOT / "BENCHMARKS.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"
SIRE_START, SIRE_END = "<!-- sirerag:start -->", "<!-- sirerag:end -->"
SUMMARY_START, SUMMARY_END = "<!-- summary:start -->", "<!-- summary:end -->"
LLM_START, LLM_END = "<!-- llm:start -->", "<!-- llm:end -->"
#: The summary's rows: the bench's labels (spaCy triples), the base retrievers, the peers, then ours.
SUMMARY_ROWS = ("bm25", "dense", "hybrid", "title-link", "IRCoT (bm25)", "HippoRAG", "HippoRAG 2", "HippoRAG w/ IRCoT",
                "bm25 + SyncGE-offline", "GEAR-offline (bm25)")
#: The rows that are not ours (the best of them is bold).
OTHERS = SUMMARY_ROWS[:8]
SETS = ("musique", "2wiki", "hotpotqa")
#: The extractor of the indices the summary and the latency tables report (the others: their recall only).
MAIN_EXTRACTOR = "spacy"
#: Passage R@5 the HippoRAG 2 paper (Gutiérrez et al., 2025) reports, as ../shared/notes/anchors.md records them, on
#: its own corpora, which are larger than these (MuSiQue 11,656 passages against 1,890 here; HotpotQA 9,221 against
#: 994): anchors, not a like-for-like comparison.
PUBLISHED = {
    "BM25, published": {"musique": 43.5, "2wiki": 65.3, "hotpotqa": 74.8},
    "NV-Embed-v2 (7B), published": {"musique": 69.7, "2wiki": 76.5, "hotpotqa": 94.5},
    "HippoRAG 2 (NV-Embed-v2 + LLM), published": {"musique": 74.7, "2wiki": 90.4, "hotpotqa": 96.3},
}


def summary(results: dict) -> str:
    """The headline table: R@2 / R@5 / R@15 per set for the summary rows, then the published R@5 anchors."""
    rows: dict[str, dict[str, dict]] = {}
    sizes: dict[str, int] = {}
    for run in results["runs"]:
        if run["extractor"] != MAIN_EXTRACTOR:
            continue
        for r in run["rows"]:
            rows.setdefault(r["label"], {})[run["dataset"]] = r
            sizes[run["dataset"]] = r["n"]
    sets = [s for s in SETS if s in sizes]
    out = ["| method | " + " | ".join(f"{s} ({sizes[s]:,} q) R@2 / R@5 / R@15" for s in sets) + " |",
           "|---|" + "---|" * len(sets)]
    best = {s: max((rows[label][s]["recall"]["5"], label) for label in OTHERS if s in rows.get(label, {}))
            for s in sets}
    for label in SUMMARY_ROWS:
        cells = []
        for s in sets:
            r = rows.get(label, {}).get(s)
            if r is None:
                cells.append("")
                continue
            rec = r["recall"]
            r5 = f"**{rec['5']:.1f}**" if label == best[s][1] or label.startswith("GEAR") else f"{rec['5']:.1f}"
            cells.append(f"{rec['2']:.1f} / {r5} / {rec['15']:.1f}")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    for label, values in PUBLISHED.items():
        out.append(f"| *{label}* | " + " | ".join(f"— / {values[s]:.1f} / —" for s in sets) + " |")
    note = ("Bold: GEAR-offline and the best row that is not ours at R@5 per set (title-link: BM25 plus the pages "
            "whose titles the question names, our baseline for what entity linking alone gives).")
    return "\n".join(out) + "\n\n" + note
FIGURES = ("recall_by_iteration.png", "tokens_by_iteration.png")


def main_costs(results_md: str) -> str:
    """The bench's ``results.md`` without the latency tables of indices other than :data:`MAIN_EXTRACTOR`'s."""
    parts = re.split(r"(?m)^(?=### )", results_md)
    return "".join(part for part in parts
                   if not part.startswith("### Cost · ") or part.startswith(f"### Cost · {MAIN_EXTRACTOR} "))


def _method(label: str) -> str:
    """A row's label without the engine it names (``GEAR-local (bm25)`` and ``GEAR-offline (bm25)`` pair up)."""
    return label.replace(" [local]", "").replace(" [openai]", "").replace("-local", "").replace(
        "-openai", "").replace("-offline", "")


def llm_tables(offline: dict, *llm_runs: dict) -> str:
    """Per dataset: each row offline and with the LLM engine, side by side (R@5/R@15, EM/F1, tokens and
    seconds per question, and the replies the offline engine played for the model). ``llm_runs``: one bench run
    with the LLM engine, or several that each ran some rows or datasets; a row no run has is shown offline only."""
    rows = [r for llm in llm_runs for run in llm["runs"] for r in run["rows"]]
    engine = next((r["options"].get("engine") for r in rows), "llm")
    model = next((r["options"].get("llm_gguf") or r["options"].get("llm_model") for r in rows
                  if r["options"].get("llm_gguf") or r["options"].get("llm_model")), None)
    played_by = engine + (f" ({model})" if model else "")
    commands = "; ".join(f"`{c['command']}`" for c in (offline, *llm_runs))
    last = llm_runs[-1] if llm_runs else offline
    out = [f"Commands: {commands} · machine: {last['machine']} · date: {last['date']}"]
    model_rows = {(run["dataset"], _method(r["label"])): r for llm in llm_runs for run in llm["runs"]
                  for r in run["rows"]}
    for run in offline["runs"]:  # the offline run may hold reference rows the model plays no part in (bm25)
        n = run["rows"][0]["n"] if run["rows"] else 0
        out += ["", f"**{run['dataset']}** ({n} q, {run['max_steps']} steps)", "",
                "| method | engine | R@5 / R@15 | EM / F1 | tokens/q | s/q (median) "
                "| replies the offline engine played |",
                "|---|---|---|---|---|---|---|"]
        for r in run["rows"]:
            name = _method(r["label"])
            pairs = (("offline", r), (played_by, model_rows.get((run["dataset"], name))))
            for label, row in pairs:
                if row is None:
                    continue
                rec = row["recall"]
                qa = f"{row['EM']:.1f} / {row['F1']:.1f}" if "EM" in row else "—"
                tokens = f"{row['mean_tokens']:,.0f}" if row.get("mean_tokens") else "—"
                played = ", ".join(f"{role} {c['offline']} of {c['replies']}"
                                   for role, c in (row.get("fallbacks") or {}).items()) or "—"
                out.append(f"| {name} | {label} | {rec['5']:.1f} / {rec['15']:.1f} | {qa} | {tokens} "
                           f"| {row['median_ms'] / 1000:.2f} | {played} |")
    return "\n".join(out)


def fill(text: str, start: str, end: str, body: str) -> str:
    """``text`` with what lies between ``start`` and ``end`` replaced by ``body`` (markers appended if absent)."""
    if start not in text:
        text += f"\n{start}\n{end}\n"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body.rstrip()}\n{end}{tail}"


def main() -> None:
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--llm":
        llm_dir = Path(sys.argv[2])
        offline = json.loads((llm_dir / "offline" / "results.json").read_text())
        local = [json.loads(f.read_text()) for f in sorted(llm_dir.glob("local*/results.json"))]
        MD.write_text(fill(MD.read_text(), LLM_START, LLM_END, llm_tables(offline, *local)))
        print(f"wrote {MD}")
        return
    bench = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks" / "out" / "bench"
    sire = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "benchmarks" / "out" / "sirerag" / "results.json"
    text = MD.read_text() if MD.exists() else "# Benchmarks\n"
    text = fill(text, START, END, main_costs((bench / "results.md").read_text(encoding="utf-8")))
    text = fill(text, SUMMARY_START, SUMMARY_END, summary(json.loads((bench / "results.json").read_text())))
    if sire.exists():
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from sirerag_pools import report as sirerag_tables

        text = fill(text, SIRE_START, SIRE_END, sirerag_tables(json.loads(sire.read_text(encoding="utf-8"))))
    MD.write_text(text)
    print(f"wrote {MD}")
    for name in FIGURES:
        if (bench / name).exists():
            shutil.copy(bench / name, ROOT / "benchmarks" / name)
            print(f"wrote benchmarks/{name}")
        elif (ROOT / "benchmarks" / name).exists():  # this run drew no such figure: the old one is stale
            (ROOT / "benchmarks" / name).unlink()
            print(f"removed benchmarks/{name}")


if __name__ == "__main__":
    main()
