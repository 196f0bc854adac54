"""A timeline of one gearag command: when each step of a generation starts and ends, per thread, and RSS.

    PYTHONPATH=SRC python benchmarks/add_timeline.py -- add INDEX CORPUS [gearag options...]

Prints to stderr, one line per call of the wrapped functions (:data:`STEPS`): thread, start and end
(seconds since start) and duration; a line whenever the resident size moved by more than 0.25 GB
since the last one (sampled every 50 ms); and per thread the total time spent writing JSON and
arrays. Sort by the second column to read it in order. The wrapping and the sampler cost time: use it
to see where a generation's time and peak go, not to time it (BENCHMARKS.md, "Adds at 1M, and a
push workspace that does not grow").
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import time
from typing import Any

from gearag.bench.memory import rss_mb
from gearag.cli import main
from gearag.derive import delta_resolve, endpoints, triple_graph, union_files, union_resolve
from gearag.graph import delta_apply, flatten, prepared, resolve, trie
from gearag.indexing import generation
from gearag.indexing import graph as graph_stage
from gearag.store import writer

MODULES = (union_resolve, delta_resolve, triple_graph, endpoints, union_files, generation, graph_stage, prepared,
           delta_apply, flatten, resolve)
#: (module, function) pairs whose every call is logged.
STEPS = [(triple_graph, "triple_graph"), (delta_resolve, "resolve_delta"), (union_files, "union_delta"),
         (union_files, "write_from_nothing"), (union_files, "write_flat"), (union_files, "_vocab"),
         (endpoints, "union_ends"), (union_resolve, "endpoint_name_stats"), (delta_apply, "apply_delta"),
         (flatten, "flattened"), (generation, "write_generation"), (endpoints, "shard_table"),
         (generation, "_prior_resolution")]
#: (class, method) pairs whose calls are logged, and those only totalled per thread.
METHODS = [(writer.IndexWriter, "commit"), (trie.NameLookup, "__init__")]
TOTALLED = [(writer.IndexWriter, "write_json"), (writer.IndexWriter, "write_array")]

T0 = time.perf_counter()
_totals: dict[tuple[str, str], float] = {}
_lock = threading.Lock()


def _wrap(holder: Any, name: str, total: bool = False) -> None:
    f = getattr(holder, name)

    @functools.wraps(f)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            end = time.perf_counter()
            thread = threading.current_thread().name[:12]
            if total:
                with _lock:
                    _totals[(thread, name)] = _totals.get((thread, name), 0.0) + end - start
            else:
                print(f"{thread:12s} {start - T0:7.2f} {end - T0:7.2f} {end - start:6.2f} {name}", file=sys.stderr)

    setattr(holder, name, timed)
    for module in MODULES:  # names imported into other modules are replaced there too
        if getattr(module, name, None) is f:
            setattr(module, name, timed)


def _sample_rss() -> None:
    last = 0.0
    while True:
        rss = rss_mb() / 1024
        if abs(rss - last) > 0.25:
            print(f"{'rss':12s} {time.perf_counter() - T0:7.2f} {rss:.2f} GB", file=sys.stderr)
            last = rss
        time.sleep(0.05)


def run(argv: list[str]) -> None:
    for module, name in STEPS:
        _wrap(module, name)
    for cls, name in METHODS:
        _wrap(cls, name)
    for cls, name in TOTALLED:
        _wrap(cls, name, total=True)
    threading.Thread(target=_sample_rss, daemon=True).start()
    sys.argv = ["gearag", *argv]
    with contextlib.suppress(SystemExit):
        main()
    for (thread, name), seconds in sorted(_totals.items()):
        print(f"{thread:12s} total {seconds:6.2f} {name}", file=sys.stderr)


if __name__ == "__main__":
    run(sys.argv[2:] if sys.argv[1:2] == ["--"] else sys.argv[1:])
