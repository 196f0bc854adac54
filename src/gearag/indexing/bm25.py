"""Stage 3 — BM25 over every collection (bm25s, Lucene variant)."""

from __future__ import annotations

from dataclasses import replace

from gearag.indexing.stage import Build
from gearag.retrieve.bm25 import build_bm25, save_bm25


class BM25Stage:
    name = "bm25"

    def run(self, build: Build) -> None:
        cfg = build.config.bm25
        for name, coll in build.collections.items():
            rel = f"bm25/{name}"
            # bm25s needs at least one document; an empty collection gets a placeholder.
            save_bm25(build_bm25(coll.texts if len(coll.texts) else [""], cfg.k1, cfg.b), build.writer.path(rel))
            coll.spec = replace(coll.spec, bm25=rel)
