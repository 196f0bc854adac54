"""Cost of ``gearag add`` against a full rebuild, on 2Wiki (issue 14, item 1).

    python benchmarks/incremental_add.py WORK_DIR [--base 5119] [--questions 200]

Writes 2Wiki's corpus (from ../shared/data) with ids ``w<row>`` into WORK_DIR
(never into the repository), then with the CLI, each command in its own
process: ``gearag index`` of the first ``--base`` passages, ``gearag add`` of
the rest (its stage times: shard = extract + embed + tokenise the new
passages; generation = graph, resolution and BM25 over the union), ``gearag
index`` of the whole corpus (the full rebuild), then ``gearag delete`` of 10
passages and ``gearag compact``. Reports wall times, the add's breakdown,
the on-disk sizes (``du``, hard links counted once) and whether the grown
index ranks like the rebuilt one (syncge and bm25 top-10 ids on
``--questions`` questions). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "2wikimultihopqa"


def gearag(*argv: object) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "from gearag.cli import main; import sys; sys.exit(main())",
                           *map(str, argv)], capture_output=True, text=True, env={"GEARAG_PROGRESS": "0",
                                                                                  **__import__("os").environ})
    seconds = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"gearag {' '.join(map(str, argv))} failed:\n{proc.stderr}")
    return seconds, proc.stderr


def du_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0]) / 1024


def stage_seconds(stderr: str) -> dict[str, float]:
    out = {}
    for line in stderr.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == "s":
            with contextlib.suppress(ValueError):
                out[parts[0]] = float(parts[1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("work", type=Path)
    ap.add_argument("--base", type=int, default=5119)
    ap.add_argument("--questions", type=int, default=200)
    args = ap.parse_args()
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    corpus = json.loads((DATA / "2wikimultihopqa_corpus.json").read_text(encoding="utf-8"))
    rows = [{"id": f"w{i}", "title": r["title"], "text": r["text"]} for i, r in enumerate(corpus)]

    def write(name: str, part: list[dict]) -> Path:
        path = work / name
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in part), encoding="utf-8")
        return path

    base_c, new_c, full_c = write("base.jsonl", rows[: args.base]), write("new.jsonl", rows[args.base :]), \
        write("full.jsonl", rows)
    grown, full = work / "grown", work / "full"
    for d in (grown, full):
        shutil.rmtree(d, ignore_errors=True)
    report: dict[str, object] = {"base_passages": args.base, "added_passages": len(rows) - args.base}
    secs, err = gearag("index", base_c, "--out", grown)
    report["base_build_s"] = round(secs, 1)
    report["base_mb"] = round(du_mb(grown), 1)
    secs, err = gearag("add", grown, new_c)
    report["add_s"] = round(secs, 1)
    report["add_stages_s"] = stage_seconds(err)
    report["grown_mb"] = round(du_mb(grown), 1)
    secs, err = gearag("index", full_c, "--out", full)
    report["full_build_s"] = round(secs, 1)
    report["full_stages_s"] = stage_seconds(err)
    report["full_mb"] = round(du_mb(full), 1)

    from gearag.api import Gearag
    from gearag.store.index import Index

    questions = json.loads((DATA / "2wikimultihopqa.json").read_text(encoding="utf-8"))[: args.questions]
    a, b = Gearag(Index.load(grown)), Gearag(Index.load(full))
    same = {}
    for method in ("bm25", "syncge"):
        same[method] = sum(
            [h.idx for h in a.retrieve(q["question"], method, 10).passages]
            == [h.idx for h in b.retrieve(q["question"], method, 10).passages] for q in questions)
    report["identical_top10"] = {m: f"{n}/{len(questions)}" for m, n in same.items()}
    report["same_entities"] = a.index.graph.entities == b.index.graph.entities
    ids = work / "delete.txt"
    ids.write_text("".join(f"w{i}\n" for i in range(0, 5000, 500)), encoding="utf-8")
    secs, err = gearag("delete", grown, ids)
    report["delete10_s"] = round(secs, 1)
    secs, err = gearag("compact", grown)
    report["compact_s"] = round(secs, 1)
    report["compacted_mb"] = round(du_mb(grown), 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
