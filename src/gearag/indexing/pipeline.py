"""Offline index construction (GEAR §3) as a pipeline of stages with one atomic commit.

The default stages are extract → ner (only with NER mentions) → graph (with the entity resolution) → trees →
bm25 → embed
(:data:`DEFAULT_STAGES`); ``trees`` (SiReRAG/RAPTOR pools) does nothing
unless ``config.trees`` asks for them. Each writes into the temporary directory of an
:class:`~gearag.store.writer.IndexWriter`; the manifest (config, counts, the
collections and every file's checksum) is written last and the directory is
renamed into place, so a crash never leaves a loadable half-index. A caller
may pass its own stage list to add a stage (e.g. SiReRAG trees) or skip one.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gearag.config import IndexConfig
from gearag.errors import ConfigError, DataError
from gearag.extract import TripleExtractor
from gearag.indexing.bm25 import BM25Stage
from gearag.indexing.embed import EmbedStage
from gearag.indexing.executor import LOCAL, BatchExecutor
from gearag.indexing.extract import ExtractStage
from gearag.indexing.graph import GraphStage
from gearag.indexing.ner import NerStage
from gearag.indexing.stage import Build, Stage
from gearag.indexing.trees import TreesStage
from gearag.model import Passage
from gearag.store.index import Index, read_manifest
from gearag.store.writer import IndexWriter, index_location

DEFAULT_STAGES: tuple[Stage, ...] = (
    ExtractStage(), NerStage(), GraphStage(), TreesStage(), BM25Stage(), EmbedStage()
)


def work_dir_for(out: Path) -> Path:
    """Where a build keeps resumable state (extraction checkpoint, embeddings) until it succeeds."""
    return out.parent / f".{out.name}.work"


def build_index(
    passages: Sequence[Passage],
    out: str | Path,
    config: IndexConfig | None = None,
    *,
    extractor: TripleExtractor | None = None,
    llm_roles: object | None = None,
    overwrite: bool = False,
    resume: bool = True,
    on_stage: Callable[[str, float], None] | None = None,
    stages: Sequence[Stage] = DEFAULT_STAGES,
    executor: BatchExecutor | None = None,
) -> Index:
    """Build an index of ``passages`` at ``out`` and return it loaded.

    Takes the arguments of :func:`write_index`, which builds without loading
    (a caller that needs only the manifest, like ``gearag index``, saves the
    load's row offsets and graph arrays).

    ``extractor`` overrides ``config.extract.extractor`` (for example an LLM
    extractor with a configured client); ``llm_roles`` (an
    :class:`~gearag.llm.roles.LLMRoles`) serves the trees stage with
    ``config.trees.engine == "openai"`` (default: made from the environment). With ``resume`` (default) the
    work directory (:func:`work_dir_for`) is reused after an interruption
    and deleted after success. ``on_stage(name, seconds)`` is called after
    each stage (the CLI prints these). ``executor`` runs the extract and
    embed stages' per-row work (default: here; :class:`gearag.distributed.RayExecutor`
    spreads it over a Ray cluster) and gives the same index either way.
    """
    write_index(passages, out, config, extractor=extractor, llm_roles=llm_roles, overwrite=overwrite, resume=resume,
                on_stage=on_stage, stages=stages, executor=executor)
    # Loaded only now: the build's state (triple columns, texts, graph) is gone, not held beside the index.
    return Index.load(out)


def write_index(
    passages: Sequence[Passage],
    out: str | Path,
    config: IndexConfig | None = None,
    *,
    extractor: TripleExtractor | None = None,
    llm_roles: object | None = None,
    overwrite: bool = False,
    resume: bool = True,
    on_stage: Callable[[str, float], None] | None = None,
    stages: Sequence[Stage] = DEFAULT_STAGES,
    executor: BatchExecutor | None = None,
) -> dict[str, Any]:
    """Build an index of ``passages`` at ``out`` (as :func:`build_index`) and return its manifest, not loading it."""
    config = config or IndexConfig()
    out = index_location(out)  # through a symlink: the target is built (its work directory beside it), the link kept
    if not passages:
        raise DataError("cannot index an empty corpus")
    res = config.resolve
    if res.ner_mentions and not (res.entity_graph and res.prepared_graph):
        raise ConfigError("--index-ner-mentions: NER mentions are kept in the stored passage graph, which "
                          "--no-prepared-graph and --no-entity-graph leave out; drop one or the other")
    # Fails fast, before the expensive work: bad --out, a directory --overwrite must not
    # delete, or another build of the same directory (the writer holds its lock until the end).
    writer = IndexWriter(out, overwrite=overwrite)
    with writer:
        _run_stages(passages, config, writer, work_dir_for(out), stages, extractor=extractor, llm_roles=llm_roles,
                    resume=resume, on_stage=on_stage, executor=executor or LOCAL)
    return read_manifest(out)


def _run_stages(
    passages: Sequence[Passage], config: IndexConfig, writer: IndexWriter, work: Path, stages: Sequence[Stage], *,
    extractor: TripleExtractor | None, llm_roles: object | None, resume: bool,
    on_stage: Callable[[str, float], None] | None, executor: BatchExecutor,
) -> None:
    """Run ``stages`` over one :class:`Build` and commit ``writer``; the build is dropped on return."""
    if not resume and work.exists():
        shutil.rmtree(work)
    build = Build(passages, config, writer, work, extractor, llm_roles=llm_roles, executor=executor)
    for stage in stages:
        started = time.perf_counter()
        stage.run(build)
        build.timings[stage.name] = round(time.perf_counter() - started, 3)
        if on_stage:
            on_stage(stage.name, build.timings[stage.name])
    started = time.perf_counter()
    manifest = {
        "config": config.to_dict(),
        **build.manifest,
        "collections": {name: c.spec.to_dict() for name, c in build.collections.items()},
        "build_seconds": build.timings,
        "build_executor": build.executor.describe(),
    }
    writer.commit(manifest)
    build.timings["write"] = round(time.perf_counter() - started, 3)
    if on_stage:
        on_stage("write", build.timings["write"])
    if work.exists():  # under the lock: no other build of ``out`` is using it
        shutil.rmtree(work, ignore_errors=True)
