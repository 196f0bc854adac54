"""The entities table of a Lance export, alone: seconds to make its batches and write it (issue 14).

    PYTHONPATH=SRC python benchmarks/lance_entities.py INDEX [RUNS]

Writes ``gearag.store.lance.export._entities`` of the index's triple graph to a fresh Lance table in a
temporary directory, RUNS times (default 2), and prints the seconds of each. Run it once per checkout
(``PYTHONPATH`` = that checkout's ``src``), alternating, to compare two versions (BENCHMARKS.md,
"Lance: the entities table in one pass over the names").
"""

from __future__ import annotations

import sys
import tempfile
import time

import pyarrow as pa

from gearag.store.index import Index
from gearag.store.lance import export
from gearag.store.lance.storage import connect, parse_location


def main() -> None:
    root, runs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2
    for _ in range(runs):
        index = Index.open(root)  # a fresh index each run: nothing parsed by the run before
        with tempfile.TemporaryDirectory() as out:
            db = connect(parse_location(out))
            started = time.perf_counter()
            schema, batches = export._entities(index, export.ExportConfig().batch, pa)
            db.create_table(export.ENTITIES_TABLE, pa.RecordBatchReader.from_batches(schema, batches))
            print(f"{index.graph.n_entities} entities: {time.perf_counter() - started:.2f} s", flush=True)
        index.close()


if __name__ == "__main__":
    main()
