"""The graph stage of a build alone, over a corpus and its triples: its wall time and the process's memory.

    PYTHONPATH=SRC python benchmarks/graph_stage.py CORPUS TRIPLES OUT [--growable/--no-growable]

``TRIPLES``: an OpenIE file for ``CORPUS`` (``gearag synth --triples`` writes one). The stage (passages,
triples, triple graph, entity resolution, prepared graph and, growable, the state an add extends) runs with
the code on ``PYTHONPATH``, into the index directory ``OUT`` (replaced). Prints one JSON line: the stage's
seconds, the process's peak RSS before the stage (the corpus and triples loaded) and after it (MB), and the
stage's manifest entries. Run it once per code version, one after the other, to compare two versions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

from gearag.bench.memory import peak_mb
from gearag.config import IndexConfig
from gearag.data.corpus import load_corpus
from gearag.extract.openie import OpenIEExtractor
from gearag.indexing.graph import GraphStage
from gearag.indexing.stage import Build
from gearag.store.writer import IndexWriter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("triples", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--growable", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    passages = load_corpus(args.corpus)
    extractor = OpenIEExtractor(args.triples)
    extracted = list(extractor.extract(passages))
    extractor.release()
    del extractor
    config = IndexConfig()
    config = replace(config, graph=replace(config.graph, growable=args.growable))
    loaded = peak_mb()
    shutil.rmtree(args.out, ignore_errors=True)
    with IndexWriter(args.out) as w:
        build = Build(passages, config, w, args.out.parent / f"{args.out.name}.work")
        build.extracted = extracted
        del extracted
        started = time.perf_counter()
        GraphStage().run(build)
        seconds = time.perf_counter() - started
        w.commit({"config": config.to_dict(), **build.manifest})
    print(json.dumps({"seconds": round(seconds, 1), "loaded_peak_mb": round(loaded), "peak_mb": round(peak_mb()),
                      "resolve": build.manifest.get("resolve"), "counts": build.manifest.get("counts")}))


if __name__ == "__main__":
    main()
