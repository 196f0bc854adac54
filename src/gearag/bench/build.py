"""Index builds for the bench: one child process per index, so its wall time and peak RSS are its own.

:func:`check_index_dirs` runs before any build: every index folder the run
will use must be absent, a gearag index to reuse, or (to build or, with
``--force``, rebuild) one that :func:`~gearag.store.writer.check_replaceable`
lets gearag replace — a folder of the user's at one of those names is refused
at once, not after the indices before it were built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gearag import progress
from gearag.bench.datasets import Dataset
from gearag.bench.subset import Subset
from gearag.errors import ConfigError, GearagError, OutputError
from gearag.outputs import OutputFolder, write_text_atomic

#: Run in the child: build the index, print its figures as one JSON line on stdout (a user error: one ``error:``
#: line on stderr). Each stage's seconds, and the long stages' plain progress lines, go to stderr as
#: :data:`gearag.progress.PREFIX` lines, which :func:`build` passes on as they come.
_CHILD = """
import json, sys, time
from gearag import progress
from gearag.bench.memory import peak_mb
from gearag.config import IndexConfig
from gearag.data import load_corpus
from gearag.errors import GearagError
from gearag.indexing import build_index
corpus, out, extractor, embedder = sys.argv[1:5]
t = time.perf_counter()
def stage(name, seconds):
    if progress.progress_enabled():
        progress.say(f"stage {name} done in {seconds:.1f} s")
try:
    idx = build_index(load_corpus(corpus), out, IndexConfig.of(extractor=extractor, embedder=embedder),
                      overwrite=True, resume=False, on_stage=stage)
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


def index_tag(ds: Dataset, extractor: str, embedder: str, subset: Subset | None = None) -> str:
    """The index's folder name; an index over the first N questions' passages ends in ``-firstN``."""
    tag = f"{ds.name}-{extractor.split(':')[0]}-{embedder}"
    return f"{tag}-first{subset.questions}" if subset is not None else tag


def _reusable(out: Path, force: bool, key: str | None = None) -> bool:
    """An index at ``out`` to reuse: not with ``--force``; a subset index only over the same passages."""
    if force or not (out / "manifest.json").exists():
        return False
    if key is None:
        return True
    try:
        manifest = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and (manifest.get("bench") or {}).get("subset", {}).get("key") == key


def full_index_exists(index_dir: Path, tag: str, force: bool = False) -> bool:
    """Whether ``index_dir / tag`` is a built index this run would reuse (``--limit`` prefers one)."""
    return _reusable(index_dir / tag, force)


def check_index_dirs(index_dir: Path, tags: list[str], *, force: bool = False, what: str = "--index-dir",
                     keys: Mapping[str, str] | None = None) -> None:
    """A one-line error now unless every ``index_dir / tag`` may be reused or built (see the module);
    ``keys``: the :attr:`Subset.key` of each subset index's tag."""
    from gearag.store.index import read_manifest
    from gearag.store.writer import check_replaceable, check_unlocked

    keys = keys or {}
    reuse = {tag: _reusable(index_dir / tag, force, keys.get(tag)) for tag in tags}
    if not all(reuse.values()):  # reused ones only: it may be read-only
        OutputFolder.claim(index_dir, (), what=what)  # not a file, a device or unwritable
    for tag in tags:
        out = index_dir / tag
        try:
            if reuse[tag]:
                read_manifest(out)
            else:
                check_replaceable(out)
        except GearagError as exc:
            raise OutputError(f"{what} {index_dir}: {tag} is not an index gearag may reuse or replace ({exc}); "
                              f"choose another {what} or move it away") from None
        check_unlocked(out)


def build(ds: Dataset, extractor: str, embedder: str, index_dir: Path, *, force: bool = False,
          subset: Subset | None = None, log: Callable[[str], None] | None = None,
          llm_max_tokens: str | None = None) -> dict[str, Any]:
    """Build (or reuse) one index — over ``subset``'s passages where given, else the whole corpus; returns its
    path, tag and build figures (wall time, stages, peak RSS). ``log`` gets the build's progress lines. An LLM
    extractor takes its endpoint from the environment, and ``llm_max_tokens`` (bench ``--llm-max-tokens``)
    over ``GEARAG_LLM_MAX_TOKENS``."""
    tag = index_tag(ds, extractor, embedder, subset)
    out = index_dir / tag
    manifest_path = out / "manifest.json"
    extra = {"subset": subset.summary()} if subset is not None else {}
    if _reusable(out, force, subset.key if subset is not None else None):
        manifest = json.loads(manifest_path.read_text())
        return {"path": str(out), "tag": tag, "reused": True, "counts": manifest.get("counts", {}),
                **manifest.get("bench", {}), **extra}
    spec = extractor_spec(ds, extractor)
    if spec is None:
        raise ConfigError(f"dataset {ds.name!r} has no OpenIE file for --extractors openie")
    with tempfile.TemporaryDirectory(prefix="gearag-bench-") as tmp:
        corpus = subset.write(Path(tmp) / "corpus.jsonl") if subset is not None else ds.corpus
        env = {"GEARAG_LLM_MAX_TOKENS": llm_max_tokens} if llm_max_tokens else {}
        code, stdout, errors = _run_child([str(corpus), str(out), spec, embedder], log or (lambda _line: None), env)
    if code != 0:
        reason = errors[-1].removeprefix("error: ") if errors else f"exit code {code}"
        raise ConfigError(f"index build failed for {tag}: {reason}")
    stats = {**json.loads(stdout.strip().splitlines()[-1]), **extra}
    # Keep the build figures beside the index, so runs that reuse it still report them.
    manifest = json.loads(manifest_path.read_text())
    manifest["bench"] = stats
    write_text_atomic(manifest_path, json.dumps(manifest, indent=2))
    return {"path": str(out), "tag": tag, "reused": False, **stats}


def _run_child(argv: list[str], log: Callable[[str], None], extra_env: dict[str, str] | None = None,
               ) -> tuple[int, str, list[str]]:
    """:data:`_CHILD` with ``argv`` (and ``extra_env`` over this environment): its exit code, its stdout and
    its last stderr lines; each progress line it prints goes to ``log`` as it comes (the child prints them
    unless progress is off here)."""
    env = {**os.environ, **(extra_env or {}), "GEARAG_PROGRESS": "lines" if progress.progress_enabled() else "0"}
    errors: deque[str] = deque(maxlen=20)
    with tempfile.TemporaryFile() as stdout:
        with subprocess.Popen([sys.executable, "-c", _CHILD, *argv], stdout=stdout, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, env=env) as child:
            assert child.stderr is not None
            for line in child.stderr:
                line = line.rstrip()
                if line.startswith(progress.PREFIX):
                    log(line.removeprefix(progress.PREFIX))
                elif line.strip():
                    errors.append(line.strip())
        stdout.seek(0)
        return child.returncode, stdout.read().decode("utf-8", "replace"), list(errors)
