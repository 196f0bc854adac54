"""Scale benchmark: build cost, memory, disk, query latency and recall versus corpus size.

    python benchmarks/scale.py --sizes 10000,100000 --source-index IDX [--out benchmarks/out/scale]
    python benchmarks/scale.py --report-only          # tables + plots from the results already there

For each size N: ``gearag synth`` grows 2Wiki (``../shared/data``) to N passages
(renamed copies, planted questions, the source index's spaCy triples renamed
into ``triples.json``); ``gearag index --extractor openie:triples.json``
builds it in a child process (wall time, peak RSS from ``wait4``, the
manifest's ``build_seconds`` per stage); then one child process loads the
index and runs bm25, syncge and gear (offline engine, defaults) over the same
sample of planted questions one after another (median / p99 latency, R@5 /
R@15, the query process's peak RSS). Extraction is not in those builds (the
triples are read from the file); ``--spacy-size`` builds one size with the
spaCy extractor to measure extraction's rate.

Pluggable steps, run only when the command exists (detected from the CLI, not
assumed): ``gearag add`` of ``--add`` passages (fresh copies, disjoint from
the index) onto the size-N index, and ``gearag export`` of the index to a
local LanceDB directory + the same queries through it.

Each size's result is written to ``OUT/results/<name>.json`` when it finishes;
a rerun skips finished sizes (and a finished build of an unfinished size).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out" / "scale"
DATA = ROOT.parent / "shared" / "data" / "2wikimultihopqa"
CORPUS, QUESTIONS = DATA / "2wikimultihopqa_corpus.json", DATA / "2wikimultihopqa.json"
METHODS = ("bm25", "syncge", "gear")
GEARAG = "import sys; from gearag.cli import main; sys.exit(main())"

#: Run in the query child: load the index, run every method over the sample, print one JSON line.
_QUERY_CHILD = """
import json, statistics, sys, time
from gearag.api import Gearag
from gearag.bench.evaluate import timed_run, warm_up
from gearag.bench.memory import peak_mb
from gearag.data import load_questions
from gearag.evaluation import evaluate_run
index, qfile, methods = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
qs = load_questions(qfile)
t = time.perf_counter()
app = Gearag.open(index)
out = {"load_seconds": round(time.perf_counter() - t, 2), "load_peak_rss_mb": round(peak_mb(), 1), "methods": {}}
for name in methods:
    method = app.method(name)
    warm_up(method, 15)
    lat, rows = timed_run(app, method, qs, 15)
    report = evaluate_run(qs, rows, (5, 15))
    lat.sort()
    out["methods"][name] = {
        "median_ms": round(1000 * statistics.median(lat), 2),
        "p99_ms": round(1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))], 2),
        "R@5": round(100 * report.recall[5], 1), "R@15": round(100 * report.recall[15], 1), "n": len(qs)}
out["peak_rss_mb"] = round(peak_mb(), 1)
print(json.dumps(out))
"""

#: Run in the profile child: where a method's time goes on the first 20 sample questions (share of all time by
#: function, own time), measured apart from the timed run so profiling does not inflate the latencies above.
_PROFILE_CHILD = """
import cProfile, json, pstats, sys
from gearag.api import Gearag
from gearag.data import load_questions
index, qfile, methods = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
qs = load_questions(qfile)[:20]
app = Gearag.open(index)
out = {}
for name in methods:
    method = app.method(name)
    method("warm-up question", 15)
    prof = cProfile.Profile()
    prof.enable()
    for q in qs:
        method(q.question, 15)
    prof.disable()
    stats = pstats.Stats(prof).stats
    total = sum(v[2] for v in stats.values()) or 1.0
    top = sorted(stats.items(), key=lambda kv: -kv[1][2])[:6]
    out[name] = [{"function": f"{k[0].split('site-packages/')[-1].split('/src/')[-1]}:{k[1]}({k[2]})",
                  "share": round(v[2] / total, 3)} for k, v in top]
print(json.dumps(out))
"""
PROFILED = ("syncge", "gear")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_child(argv: list[str], *, what: str, stderr_lines: list[str] | None = None) -> tuple[float, float, str]:
    """Run a child process; its wall seconds, peak RSS in MB (``wait4``: this child only) and stdout (its stderr's
    lines are appended to ``stderr_lines`` when given)."""
    import tempfile

    t = time.perf_counter()
    with tempfile.TemporaryFile("w+") as fout, tempfile.TemporaryFile("w+") as ferr:
        proc = subprocess.Popen(argv, stdout=fout, stderr=ferr, stdin=subprocess.DEVNULL,
                                env={**os.environ, "GEARAG_PROGRESS": "0"})
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here; Popen must not wait again
        seconds = time.perf_counter() - t
        fout.seek(0)
        ferr.seek(0)
        stdout, stderr = fout.read(), ferr.read()
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed (exit {proc.returncode}): {stderr.strip()[-2000:]}")
    if stderr_lines is not None:
        stderr_lines.extend(stderr.splitlines())
    return seconds, usage.ru_maxrss / 1024, stdout


def gearag_cmd(*args: object) -> list[str]:
    return [sys.executable, "-c", GEARAG, *(str(a) for a in args)]


def has_command(name: str) -> bool:
    """Whether this gearag has the subcommand ``name`` (``gearag NAME --help`` succeeds)."""
    done = subprocess.run(gearag_cmd(name, "--help"), capture_output=True, text=True, check=False)
    return done.returncode == 0


def has_option(command: str, flag: str) -> bool:
    """Whether ``gearag COMMAND`` takes ``flag`` (read from its ``--help``)."""
    done = subprocess.run(gearag_cmd(command, "--help"), capture_output=True, text=True, check=False,
                          env={**os.environ, "COLUMNS": "400"})
    return done.returncode == 0 and flag in done.stdout


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=2) + "\n")
    os.replace(tmp, path)


def synth(n: int, out: Path, source_index: Path, *, first_copy: int = 0, seed: int = 0) -> dict[str, Any]:
    manifest = out / "synth.json"
    if manifest.exists():
        done = json.loads(manifest.read_text())
        if done["counts"]["passages"] == n and done["copies"]["first"] == first_copy and done["seed"] == seed:
            return done
    seconds, peak, _ = run_child(gearag_cmd("synth", CORPUS, QUESTIONS, "--passages", n, "--out", out,
                                            "--triples", source_index, "--seed", seed, "--first-copy", first_copy,
                                            "--overwrite"), what=f"synth {n}")
    done = json.loads(manifest.read_text())
    done["bench"] = {"seconds": round(seconds, 1), "peak_rss_mb": round(peak, 1)}
    write_json(manifest, done)
    return done


def build(corpus: Path, index: Path, extractor: str, record: Path, *extra: str) -> dict[str, Any]:
    """Build ``index`` in a child (or reuse a finished build's record)."""
    if record.exists() and (index / "manifest.json").exists():
        return json.loads(record.read_text())
    log(f"building {index.name} ({extractor.split(':')[0]})")
    seconds, peak, _ = run_child(gearag_cmd("index", corpus, "--out", index, "--extractor", extractor,
                                            "--overwrite", *extra), what=f"index {index.name}")
    manifest = json.loads((index / "manifest.json").read_text())
    result = {"wall_seconds": round(seconds, 1), "peak_rss_mb": round(peak, 1),
              "stages": manifest.get("build_seconds", {}), "counts": manifest.get("counts", {}),
              "disk_bytes": dir_bytes(index)}
    write_json(record, result)
    return result


def sample_questions(qfile: Path, out: Path, n: int, seed: int = 0) -> int:
    """The same ``n`` source questions at every size, each planted in one of the size's full copies."""
    planted = json.loads(qfile.read_text())
    by_source: dict[str, dict[int, dict[str, Any]]] = {}
    for q in planted:
        by_source.setdefault(q["source_id"], {})[q["copy"]] = q
    source_ids = sorted(json.loads(QUESTIONS.read_text()), key=lambda q: str(q["id"]))
    chosen = random.Random(seed).sample([str(q["id"]) for q in source_ids], min(n, len(source_ids)))
    rows = []
    for sid in chosen:
        copies = sorted(by_source.get(sid, {}))
        if copies:
            rows.append(by_source[sid][random.Random(f"{seed}/{sid}").choice(copies)])
    write_json(out, rows)
    return len(rows)


def queries(index: Path, qfile: Path) -> dict[str, Any]:
    log(f"queries on {index.name}: {', '.join(METHODS)}")
    seconds, _, stdout = run_child([sys.executable, "-c", _QUERY_CHILD, str(index), str(qfile), ",".join(METHODS)],
                                   what=f"queries on {index.name}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["wall_seconds"] = round(seconds, 1)
    return result


def profile(index: Path, qfile: Path) -> dict[str, Any]:
    log(f"profiling {', '.join(PROFILED)} on {index.name}")
    _, _, stdout = run_child([sys.executable, "-c", _PROFILE_CHILD, str(index), str(qfile), ",".join(PROFILED)],
                             what=f"profile on {index.name}")
    return json.loads(stdout.strip().splitlines()[-1])


def run_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    out: Path = args.out
    name = f"size-{n}"
    data, index = out / "data" / name, out / "indices" / name
    made = synth(n, data, args.source_index)
    triples = f"openie:{data / 'triples.json'}"
    result: dict[str, Any] = {"passages": n, "synth": made, "extractor": "openie-file (source spaCy triples)"}
    result["build"] = build(data / "corpus.jsonl", index, triples, out / "results" / f"{name}.build.json")
    qfile = out / "data" / f"{name}-sample.json"
    result["sample_questions"] = sample_questions(data / "questions.json", qfile, args.sample)
    result["query"] = queries(index, qfile)
    result["profile"] = profile(index, qfile)
    optional_steps(n, args, result)
    return result


def _pending(result: dict[str, Any], key: str) -> bool:
    """An optional step that has not run (absent, or skipped because the command did not exist then)."""
    return key not in result or (isinstance(result[key], str) and result[key].startswith("skipped"))


def optional_steps(n: int, args: argparse.Namespace, result: dict[str, Any]) -> None:
    """The Lance export + queries, then ``gearag add``, where they have not run for this size yet."""
    out: Path = args.out
    name = f"size-{n}"
    index, qfile = out / "indices" / name, out / "data" / f"{name}-sample.json"
    if "lance" not in args.optional:
        pass
    elif _pending(result, "lance") and has_command("export"):
        try:
            lance = out / "indices" / f"{name}-lance"
            record = out / "results" / f"{name}-lance.export.json"
            if not record.exists():
                log(f"gearag export {name} to Lance")
                seconds, peak, _ = run_child(gearag_cmd("export", index, lance, "--overwrite"), what=f"export {name}")
                write_json(record, {"wall_seconds": round(seconds, 1), "peak_rss_mb": round(peak, 1),
                                    "disk_bytes": dir_bytes(lance)})
            result["lance"] = {"build": json.loads(record.read_text())}
            result["lance"]["query"] = queries(lance, qfile)
        except SystemExit as exc:  # an optional step: record its failure, keep the size's numbers
            result["lance"] = f"failed: {exc}"
    elif _pending(result, "lance"):
        result["lance"] = "skipped: this gearag has no `export` (LanceDB backend)"
    if "add" not in args.optional:
        pass
    elif _pending(result, "add") and has_command("add"):  # last: it changes the index
        try:
            made = result["synth"]
            extra = out / "data" / f"{name}-add"
            synth(args.add, extra, args.source_index, first_copy=made["copies"]["first"] + made["copies"]["count"])
            log(f"gearag add {args.add} passages onto {name}")
            opts = ["--extractor", f"openie:{extra / 'triples.json'}"] if has_option("add", "--extractor") else []
            seconds, peak, _ = run_child(gearag_cmd("add", index, extra / "corpus.jsonl", *opts),
                                         what=f"add to {name}")
            result["add"] = {"passages": args.add, "wall_seconds": round(seconds, 1), "peak_rss_mb": round(peak, 1),
                             "extractor": "openie-file" if opts else "the index's own"}
        except SystemExit as exc:
            result["add"] = f"failed: {exc}"
    elif _pending(result, "add"):
        result["add"] = "skipped: this gearag has no `add` command"


def spacy_rate(n: int, args: argparse.Namespace) -> dict[str, Any]:
    name = f"size-{n}"
    data = args.out / "data" / name
    synth(n, data, args.source_index)
    b = build(data / "corpus.jsonl", args.out / "indices" / f"{name}-spacy", "spacy",
              args.out / "results" / f"spacy-{n}.build.json")
    return {"passages": n, "build": b, "extract_passages_per_s": round(n / b["stages"]["extract"], 1)}


# -- report -------------------------------------------------------------------------------------------------------


def fit_exponent(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y on log x (cost ∝ size^slope); None with fewer than two points."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx, my = statistics.mean(p[0] for p in pts), statistics.mean(p[1] for p in pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def series(results: list[dict[str, Any]]) -> dict[str, tuple[str, list[float]]]:
    """Every cost of the embedded index plotted against size: label → (unit, values per size)."""
    out: dict[str, tuple[str, list[float]]] = {
        "build (all stages)": ("s", [sum(r["build"]["stages"].values()) for r in results]),
        "build wall (process)": ("s", [r["build"]["wall_seconds"] for r in results]),
        "build peak RSS": ("MB", [r["build"]["peak_rss_mb"] for r in results]),
        "index on disk": ("MB", [r["build"]["disk_bytes"] / 1e6 for r in results]),
        "query process peak RSS": ("MB", [r["query"]["peak_rss_mb"] for r in results]),
        "index load": ("s", [r["query"]["load_seconds"] for r in results]),
    }
    stages = [s for s in dict.fromkeys(s for r in results for s in r["build"]["stages"])
              if any(r["build"]["stages"].get(s) for r in results)]
    for s in stages:
        out[f"stage {s}"] = ("s", [r["build"]["stages"].get(s, 0.0) for r in results])
    out.update(_latencies([r["query"] for r in results], ""))
    if all(isinstance(r.get("add"), dict) for r in results):
        out[f"first gearag add ({results[0]['add']['passages']:,} passages) wall"] = (
            "s", [r["add"]["wall_seconds"] for r in results])
        out["first gearag add peak RSS"] = ("MB", [r["add"]["peak_rss_mb"] for r in results])
    return out


def lance_series(results: list[dict[str, Any]]) -> dict[str, tuple[str, list[float]]]:
    """The same costs through the Lance export (``gearag export``), for the sizes that have one."""
    lance = [r["lance"] for r in results]
    out: dict[str, tuple[str, list[float]]] = {
        "lance export wall": ("s", [x["build"]["wall_seconds"] for x in lance]),
        "lance export peak RSS": ("MB", [x["build"]["peak_rss_mb"] for x in lance]),
        "lance on disk": ("MB", [x["build"]["disk_bytes"] / 1e6 for x in lance]),
        "lance query process peak RSS": ("MB", [x["query"]["peak_rss_mb"] for x in lance]),
        "lance index load": ("s", [x["query"]["load_seconds"] for x in lance]),
    }
    out.update(_latencies([x["query"] for x in lance], "lance "))
    return out


def _latencies(queries: list[dict[str, Any]], prefix: str) -> dict[str, tuple[str, list[float]]]:
    out: dict[str, tuple[str, list[float]]] = {}
    for m in METHODS:
        out[f"{prefix}{m} median"] = ("ms", [q["methods"][m]["median_ms"] for q in queries])
        out[f"{prefix}{m} p99"] = ("ms", [q["methods"][m]["p99_ms"] for q in queries])
    return out


def with_lance(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sizes whose Lance export and queries finished."""
    return [r for r in results if isinstance(r.get("lance"), dict) and "query" in r["lance"]]


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = [([r["passages"] for r in results], series(results), "-")]
    lance = with_lance(results)
    if len(lance) > 1:
        curves.append(([r["passages"] for r in lance], lance_series(lance), "--"))
    panels = [("Build time (s)", ["build wall (process)", "stage extract", "stage graph", "stage resolve",
                                  "stage bm25", "stage embed", "stage write", "lance export wall",
                                  "first gearag add"]),
              ("Memory and disk (MB)", ["build peak RSS", "query process peak RSS", "index on disk",
                                        "lance query process peak RSS", "lance on disk"]),
              ("Query latency (ms), embedded (solid) and Lance (dashed)",
               [f"{p}{m} {q}" for p in ("", "lance ") for m in METHODS for q in ("median", "p99")])]
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    palette = [plt.get_cmap("tab10")(i) for i in range(10)]
    for ax, (title, wanted) in zip(axes, panels, strict=True):
        colour: dict[str, Any] = {}  # one colour per quantity: the embedded (solid) and Lance (dashed) curves share it
        for sizes, data, style in curves:
            for label in [x for w in wanted for x in data if x == w or (w == "first gearag add" and
                                                                        x.startswith(w) and x.endswith("wall"))]:
                ys = data[label][1]
                if not all(y > 0 for y in ys):
                    continue
                k = fit_exponent([float(s) for s in sizes], ys)
                c = colour.setdefault(label.removeprefix("lance "), palette[len(colour) % len(palette)])
                ax.plot(sizes, ys, style, marker="o", color=c,
                        label=f"{label} (∝ N^{k:.2f})" if k is not None else label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("passages")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6.5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cost_table(sizes: list[int], data: dict[str, tuple[str, list[float]]]) -> list[str]:
    """Measured costs per size, the fitted growth exponent and the costs it extrapolates to 1M and 100M
    (from the largest measured size; estimates, in italics)."""
    head = ("| | " + " | ".join(f"{n:,}" for n in sizes)
            + " | growth exponent k | 1M (extrapolated) | 100M (extrapolated) |")
    lines = [head, "|---" * (len(sizes) + 4) + "|"]
    for label, (unit, ys) in data.items():
        k = fit_exponent([float(s) for s in sizes], ys)
        fmt = (lambda y: f"{y:,.0f}") if unit == "MB" or max(ys) >= 100 else (lambda y: f"{y:,.2f}")
        ext = ["", ""] if k is None or ys[-1] <= 0 else [
            "(measured)" if target <= sizes[-1] else f"*{fmt(ys[-1] * (target / sizes[-1]) ** k)}*"
            for target in (1_000_000, 100_000_000)]
        lines.append(f"| {label} ({unit}) | " + " | ".join(fmt(y) for y in ys)
                     + f" | {'' if k is None else f'{k:.2f}'} | {ext[0]} | {ext[1]} |")
    return lines


def report(out: Path, png: Path) -> str:
    results = sorted((json.loads(p.read_text()) for p in (out / "results").glob("size-*.json")
                      if p.name.count(".") == 1), key=lambda r: r["passages"])
    if not results:
        return "no finished sizes\n"
    sizes = [r["passages"] for r in results]
    lines = ["Embedded index (the default backend):", "", *cost_table(sizes, series(results))]
    lines.append("| planted questions (sample / written) | "
                 + " | ".join(f"{r['sample_questions']} / {r['synth']['counts']['questions']:,}" for r in results)
                 + " | | | |")
    lines.append("| triples | " + " | ".join(f"{r['build']['counts'].get('triples', 0):,}" for r in results)
                 + " | | | |")
    lines.append("| entities | " + " | ".join(f"{r['build']['counts'].get('entities', 0):,}" for r in results)
                 + " | | | |")
    lance = with_lance(results)
    if lance:
        lines += ["", "The same index exported to LanceDB (`gearag export`), queried through it:", "",
                  *cost_table([r["passages"] for r in lance], lance_series(lance))]
    rec = ["", "| recall on the planted sample (R@5 / R@15) | " + " | ".join(f"{n:,}" for n in sizes) + " |",
           "|---" * (len(sizes) + 1) + "|"]
    for m in METHODS:
        rec.append(f"| {m} | " + " | ".join(f"{r['query']['methods'][m]['R@5']} / {r['query']['methods'][m]['R@15']}"
                                            for r in results) + " |")
        if lance:
            rec.append(f"| {m} (Lance) | " + " | ".join(
                f"{r['lance']['query']['methods'][m]['R@5']} / {r['lance']['query']['methods'][m]['R@15']}"
                if r in lance else "—" for r in results) + " |")
    optional = [f"* {r['passages']:,}: {key} {r[key]}" for r in results for key in ("add", "lance")
                if isinstance(r.get(key), str)]
    hot = ["", "Where a query's time goes (own time by function, 20 questions, profiled apart from the timed run):", ""]
    for r in results:
        for m, rows in (r.get("profile") or {}).items():
            hot.append(f"* {r['passages']:,} · {m}: " + "; ".join(
                f"`{x['function'].removeprefix('~:0(<').removesuffix('>)')}` {100 * x['share']:.0f}%"
                for x in rows[:4]))
    spacy = [json.loads(p.read_text()) for p in (out / "results").glob("spacy-*.json")
             if not p.name.endswith(".build.json")]
    extra = [f"* spaCy extraction on {s['passages']:,} synthetic passages: {s['build']['stages']['extract']:.0f} s "
             f"= {s['extract_passages_per_s']} passages/s (build wall {s['build']['wall_seconds']} s, peak "
             f"{s['build']['peak_rss_mb']:.0f} MB)" for s in spacy]
    plot(results, png)
    return "\n".join(lines + rec + [""] + extra + optional + hot) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated passage counts")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--source-index", type=Path, help="a gearag index of the 2Wiki corpus (spaCy triples)")
    ap.add_argument("--sample", type=int, default=200, help="planted questions per size")
    ap.add_argument("--add", type=int, default=1000, help="passages for the `gearag add` step")
    ap.add_argument("--spacy-size", type=int, default=10000, help="size built with spaCy for its rate (0: skip)")
    ap.add_argument("--png", type=Path, default=ROOT / "benchmarks" / "scale.png")
    ap.add_argument("--optional", default="lance,add", help="optional steps to run: lance, add (comma-separated)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if not args.report_only:
        if args.source_index is None:
            args.source_index = args.out / "indices" / "source-2wiki-spacy"
            if not (args.source_index / "manifest.json").exists():
                log("building the source index (2Wiki, spaCy)")
                run_child(gearag_cmd("index", CORPUS, "--out", args.source_index, "--overwrite"),
                          what="source index")
        for n in (int(x) for x in args.sizes.split(",") if x.strip()):
            path = args.out / "results" / f"size-{n}.json"
            if path.exists():
                done = json.loads(path.read_text())
                if "profile" not in done:  # results from before the profile step
                    done["profile"] = profile(args.out / "indices" / f"size-{n}",
                                              args.out / "data" / f"size-{n}-sample.json")
                    write_json(path, done)
                if _pending(done, "lance") or _pending(done, "add"):  # steps added since that size ran
                    optional_steps(n, args, done)
                    write_json(path, done)
                log(f"size {n:,}: done before (optional steps filled in where missing)")
                continue
            started = time.perf_counter()
            write_json(path, run_size(n, args))
            log(f"size {n:,}: finished in {time.perf_counter() - started:.0f} s")
        if args.spacy_size:
            path = args.out / "results" / f"spacy-{args.spacy_size}.json"
            if not path.exists():
                write_json(path, spacy_rate(args.spacy_size, args))
    text = report(args.out, args.png)
    (args.out / "scale.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
