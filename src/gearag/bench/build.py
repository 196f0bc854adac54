"""Index builds for the bench: one child process per index, so its wall time and peak RSS are its own.

:func:`check_index_dirs` runs before any build: every index folder the run
will use must be absent, a gearag index to reuse, or (to build or, with
``--force``, rebuild) one that :func:`~gearag.store.writer.check_replaceable`
lets gearag replace — a folder of the user's at one of those names is refused
at once, not after the indices before it were built.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from gearag.bench.datasets import Dataset
from gearag.errors import ConfigError, GearagError, OutputError
from gearag.outputs import OutputFolder, write_text_atomic

#: Run in the child: build the index, print its figures as one JSON line (a user error: one ``error:`` line).
_CHILD = """
import json, sys, time
from gearag.bench.memory import peak_mb
from gearag.config import IndexConfig
from gearag.data import load_corpus
from gearag.errors import GearagError
from gearag.indexing import build_index
corpus, out, extractor, embedder = sys.argv[1:5]
t = time.perf_counter()
try:
    idx = build_index(load_corpus(corpus), out, IndexConfig.of(extractor=extractor, embedder=embedder),
                      overwrite=True, resume=False)
except GearagError as exc:
    print("error: " + " ".join(str(exc).split()), file=sys.stderr)
    sys.exit(2)
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


def _reusable(out: Path, force: bool) -> bool:
    return (out / "manifest.json").exists() and not force


def check_index_dirs(index_dir: Path, tags: list[str], *, force: bool = False, what: str = "--index-dir") -> None:
    """A one-line error now unless every ``index_dir / tag`` may be reused or built (see the module)."""
    from gearag.store.index import read_manifest
    from gearag.store.writer import check_replaceable, check_unlocked

    if not all(_reusable(index_dir / tag, force) for tag in tags):  # reused ones only: it may be read-only
        OutputFolder.claim(index_dir, (), what=what)  # not a file, a device or unwritable
    for tag in tags:
        out = index_dir / tag
        try:
            if _reusable(out, force):
                read_manifest(out)
            else:
                check_replaceable(out)
        except GearagError as exc:
            raise OutputError(f"{what} {index_dir}: {tag} is not an index gearag may reuse or replace ({exc}); "
                              f"choose another {what} or move it away") from None
        check_unlocked(out)


def build(ds: Dataset, extractor: str, embedder: str, index_dir: Path, *, force: bool = False) -> dict[str, Any]:
    """Build (or reuse) one index; returns its path, tag and build figures (wall time, stages, peak RSS)."""
    tag = index_tag(ds, extractor, embedder)
    out = index_dir / tag
    manifest_path = out / "manifest.json"
    if _reusable(out, force):
        manifest = json.loads(manifest_path.read_text())
        return {"path": str(out), "tag": tag, "reused": True, "counts": manifest.get("counts", {}),
                **manifest.get("bench", {})}
    spec = extractor_spec(ds, extractor)
    if spec is None:
        raise ConfigError(f"dataset {ds.name!r} has no OpenIE file for --extractors openie")
    done = subprocess.run([sys.executable, "-c", _CHILD, str(ds.corpus), str(out), spec, embedder],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        reason = lines[-1].removeprefix("error: ") if lines else f"exit code {done.returncode}"
        raise ConfigError(f"index build failed for {tag}: {reason}")
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    # Keep the build figures beside the index, so runs that reuse it still report them.
    manifest = json.loads(manifest_path.read_text())
    manifest["bench"] = stats
    write_text_atomic(manifest_path, json.dumps(manifest, indent=2))
    return {"path": str(out), "tag": tag, "reused": False, **stats}
