"""Two indexes' passage graphs side by side: PPR rankings from the questions' entities, equal or not, and time.

    PYTHONPATH=src python benchmarks/rank_pair.py --a IDX_A --b IDX_B --questions Q.json [--n 200]

Each index's stored prepared graph is memory-mapped (as a query process reads it). The questions are
ranked on both, alternating which goes first; the first five are run again at the end and only those
runs counted, so every question is timed warm. Prints how many rankings are equal, where unequal
ones part, and each graph's median and p90 time per ranking.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from gearag.graph.passage_graph import PassageGraph
from gearag.graph.prepared import stored_prepared
from gearag.graph.scaled import Scaled
from gearag.store.index import Index


def compare(graphs: dict[str, PassageGraph], questions: list[str]) -> None:
    """Rank ``questions`` on each graph, alternating; print equality and times (module docstring)."""
    times: dict[str, list[float]] = {k: [] for k in graphs}
    rankings: dict[str, list[list[int]]] = {k: [] for k in graphs}
    for i, q in enumerate(questions + questions[:5]):
        order = list(graphs) if i % 2 else list(reversed(graphs))
        for name in order:
            t = time.perf_counter()
            r = graphs[name].rank(q, k=10)
            if i >= 5:
                times[name].append(time.perf_counter() - t)
                rankings[name].append(r)
    a, b = list(graphs)
    pairs = list(zip(rankings[a], rankings[b], strict=True))
    print(f"rankings equal: {sum(x == y for x, y in pairs)} of {len(pairs)}")
    for x, y in pairs:
        if x != y:
            at = next((i for i, (u, v) in enumerate(zip(x, y, strict=False)) if u != v), min(len(x), len(y)))
            print(f"  differ from rank {at + 1}: {a} {x[at:]} {b} {y[at:]} (same set: {set(x) == set(y)})")
    for name, ts in times.items():
        print(f"{name}: median {statistics.median(ts) * 1e3:.2f} ms, p90 {np.quantile(ts, 0.9) * 1e3:.2f} ms")


def pair_args(doc: str, first: str, second: str, extra: tuple[tuple[str, int], ...] = (),
              names: tuple[str, ...] = ()) -> argparse.Namespace:
    """The command line of a script that reads two indexes (``--first``, ``--second``) and ``--questions``;
    ``extra``: more whole-number options, with their defaults; ``names``: text options (default none)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name in (first, second, "questions"):
        ap.add_argument(f"--{name}", type=Path, required=True)
    ap.add_argument("--n", type=int, default=200)
    for option, default in extra:
        ap.add_argument(option, type=int, default=default)
    for option in names:
        ap.add_argument(option, default=None)
    return ap.parse_args()


def questions_of(args: argparse.Namespace) -> list[str]:
    return [q["question"] for q in json.loads(args.questions.read_text(encoding="utf-8"))][: args.n]


def main() -> None:
    args = pair_args(__doc__, "a", "b")
    graphs = {}
    for name, path in (("a", args.a), ("b", args.b)):
        prepared = stored_prepared(Index.load(path))
        assert prepared is not None, f"{path}: no prepared graph"
        graphs[name] = PassageGraph(prepared)
        columns = prepared.columns
        kept = f"{len(columns.sources)} sources" if isinstance(columns, Scaled) else "normalised columns"
        print(f"{name}: {path} (prepared: {kept})")
    compare(graphs, questions_of(args))


if __name__ == "__main__":
    main()
