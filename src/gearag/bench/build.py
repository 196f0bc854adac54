"""Index builds for the bench: one child process per index, so its wall time and peak RSS are its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from gearag.bench.datasets import Dataset
from gearag.errors import ConfigError

#: Run in the child: build the index, print its figures as one JSON line.
_CHILD = """
import json, sys, time
from gearag.bench.memory import peak_mb
from gearag.config import IndexConfig
from gearag.data import load_corpus
from gearag.indexing import build_index
corpus, out, extractor, embedder = sys.argv[1:5]
t = time.perf_counter()
idx = build_index(load_corpus(corpus), out, IndexConfig.of(extractor=extractor, embedder=embedder),
                  overwrite=True, resume=False)
print(json.dumps({"seconds": time.perf_counter() - t, "stages": idx.manifest.get("build_seconds", {}),
                  "counts": idx.manifest["counts"], "peak_rss_mb": peak_mb()}))
"""


def extractor_spec(ds: Dataset, extractor: str) -> str | None:
    """The extractor spec for ``ds`` (``openie`` → ``openie:FILE`` where the set ships triples; None if not)."""
    if extractor == "openie":
        return f"openie:{ds.openie}" if ds.openie is not None and ds.openie.is_file() else None
    return extractor


def index_tag(ds: Dataset, extractor: str, embedder: str) -> str:
    return f"{ds.name}-{extractor.split(':')[0]}-{embedder}"


def build(ds: Dataset, extractor: str, embedder: str, index_dir: Path, *, force: bool = False) -> dict[str, Any]:
    """Build (or reuse) one index; returns its path, tag and build figures (wall time, stages, peak RSS)."""
    tag = index_tag(ds, extractor, embedder)
    out = index_dir / tag
    manifest_path = out / "manifest.json"
    if manifest_path.exists() and not force:
        manifest = json.loads(manifest_path.read_text())
        return {"path": str(out), "tag": tag, "reused": True, "counts": manifest.get("counts", {}),
                **manifest.get("bench", {})}
    spec = extractor_spec(ds, extractor)
    if spec is None:
        raise ConfigError(f"dataset {ds.name!r} has no OpenIE file for --extractors openie")
    done = subprocess.run([sys.executable, "-c", _CHILD, str(ds.corpus), str(out), spec, embedder],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ConfigError(f"index build failed for {tag}: {done.stderr.strip().splitlines()[-1:]}")
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    # Keep the build figures beside the index, so runs that reuse it still report them.
    manifest = json.loads(manifest_path.read_text())
    manifest["bench"] = stats
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return {"path": str(out), "tag": tag, "reused": False, **stats}
