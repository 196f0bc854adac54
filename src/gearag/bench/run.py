"""The ``gearag bench`` driver: datasets × extractors × embedders → indices → every row → report."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gearag import progress
from gearag.api import Gearag
from gearag.bench import report
from gearag.bench.build import build, check_index_dirs, extractor_spec, full_index_exists, index_tag
from gearag.bench.datasets import Dataset, pick_datasets
from gearag.bench.evaluate import evaluate_row
from gearag.bench.grid import Row, grid, select
from gearag.bench.memory import peak_mb, reset_peak
from gearag.bench.subset import Subset, question_subset
from gearag.data import load_questions
from gearag.model import Question
from gearag.options import option_specs
from gearag.registry import REGISTRY


@dataclass(frozen=True)
class BenchConfig:
    """What one ``gearag bench`` run covers."""

    out: Path
    datasets: str | None = None
    methods: str | None = None
    limit: int | None = None
    #: With ``limit``: index the whole corpus anyway (else the N questions' own passages, unless a full index
    #: is there to reuse: :mod:`gearag.bench.subset`).
    full_corpus: bool = False
    corpus: Path | None = None
    questions: Path | None = None
    index_dir: Path | None = None
    extractors: str = "spacy"
    embedders: str = "wordllama"
    ablations: bool = True
    force: bool = False
    max_steps: int | None = None
    engine: str | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    command: str = "gearag bench"
    llm_gguf: str | None = None
    #: Per-role reply bounds of the rows an LLM engine plays (``read=400,answer=16``; ``--llm-max-tokens``).
    llm_max_tokens: str | None = None


#: The peers whose retrieval an LLM engine changes (their labels do not say "-offline").
LLM_PEERS = ("ircot", "hipporag", "hipporag2", "hipporag-ircot")


def _with_engine(rows: list[Row], config: BenchConfig) -> list[Row]:
    """Give the engine options to every row whose method has them (GEAR, IRCoT, HippoRAG)."""
    engine = {k: v for k, v in (("engine", config.engine), ("llm_base_url", config.llm_base_url),
                                ("llm_model", config.llm_model), ("llm_gguf", config.llm_gguf),
                                ("llm_max_tokens", config.llm_max_tokens)) if v is not None}
    if not engine:
        return rows
    out = []
    for row in rows:
        cls = REGISTRY.entry("method", row.method).config_class()
        specs = option_specs(cls) if cls is not None else {}
        extra = {k: v for k, v in engine.items() if k in specs}
        label = row.label
        name = str(extra.get("engine", "offline"))
        if name != "offline" and "-offline" in label:  # the row's label says which engine played its roles
            label = label.replace("-offline", f"-{name}")
        elif name != "offline" and row.method in LLM_PEERS:
            label = f"{label} [{name}]"
        out.append(Row(label, row.method, {**row.options, **extra}, row.limit, row.ablation))
    return out


@dataclass(frozen=True)
class Planned:
    """One index of the run and the rows measured on it (``subset``: the index is over those passages only)."""

    ds: Dataset
    extractor: str
    embedder: str
    rows: list[Row]
    questions: list[Question]
    subset: Subset | None = None

    @property
    def tag(self) -> str:
        return index_tag(self.ds, self.extractor, self.embedder, self.subset)


def _plan(datasets: list[Dataset], config: BenchConfig, index_dir: Path, log: Callable[[str], None]) -> list[Planned]:
    """Every index of the run. With ``--limit N`` (fewer than the set's questions) an index that is not
    there already is built over the N questions' own passages (:mod:`gearag.bench.subset`), unless
    ``--full-corpus``; a full index that is there is reused."""
    plan: list[Planned] = []
    for ds in datasets:
        every = load_questions(ds.questions)
        questions = every[: config.limit]
        subset: Subset | None = None
        for extractor in config.extractors.split(","):
            if extractor_spec(ds, extractor) is None:
                log(f"{ds.name}: no OpenIE triples shipped; skipping extractor {extractor}")
                continue
            for embedder in config.embedders.split(","):
                rows = _with_engine(select(grid(ds, embedder, ablations=config.ablations), config.methods), config)
                if not rows:
                    continue
                small = (config.limit is not None and config.limit < len(every) and not config.full_corpus
                         and not full_index_exists(index_dir, index_tag(ds, extractor, embedder), config.force))
                if small and subset is None:
                    subset = question_subset(ds.corpus, ds.questions, questions)
                plan.append(Planned(ds, extractor, embedder, rows, questions, subset if small else None))
    return plan


def run_bench(config: BenchConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Build or reuse the indices, run the rows, write the report into ``config.out``; returns the results.

    Every output — the report's files in ``config.out`` and each index folder — is checked before the first
    build: a file gearag did not write is refused then, not after an hour of work. With stderr not a
    terminal, the long stages print plain progress lines (:func:`gearag.progress.lines_when_piped`).
    """
    with progress.lines_when_piped():
        return _run(config, log)


def _run(config: BenchConfig, log: Callable[[str], None]) -> dict[str, Any]:
    datasets = pick_datasets(config.datasets, config.corpus, config.questions, config.max_steps)
    inputs = [p for ds in datasets for p in (ds.corpus, ds.questions, ds.openie)]
    folder = report.claim(config.out, inputs=inputs)
    index_dir = config.index_dir or config.out / "indices"
    plan = _plan(datasets, config, index_dir, log)
    check_index_dirs(index_dir, [p.tag for p in plan], force=config.force,
                     what="--index-dir" if config.index_dir else "--out",
                     keys={p.tag: p.subset.key for p in plan if p.subset is not None})
    results: dict[str, Any] = {
        "command": config.command,
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "limit": config.limit,
        "runs": [],
    }
    for p in plan:
        log(f"{p.ds.name} · {p.extractor} · {p.embedder}: {len(p.questions)} questions, {len(p.rows)} rows")
        if p.subset is not None:
            log(f"  index {p.tag}: over {p.subset.describe()} (--limit {config.limit}; not comparable to a full run)")
        built = build(p.ds, p.extractor, p.embedder, index_dir, force=config.force, subset=p.subset,
                      llm_max_tokens=config.llm_max_tokens,
                      log=lambda line: log(f"    {line}"))
        log(f"  index {built['tag']}: " + ("reused" if built.get("reused") else
            f"built in {built.get('seconds', 0):.1f} s, peak {built.get('peak_rss_mb', 0):.0f} MB"))
        reset_peak()
        app = Gearag.open(built["path"])
        measured = []
        for row in p.rows:
            r = evaluate_row(app, row, p.questions)
            log(f"  {row.label:<44} " + " ".join(f"R@{k} {_pct(v)}" for k, v in r["recall"].items())
                + f"  {r['median_ms']:9.2f} ms/q")
            measured.append(r)
        results["runs"].append({"dataset": p.ds.name, "extractor": p.extractor, "embedder": p.embedder,
                                "max_steps": p.ds.max_steps, "index": built, "rows": measured,
                                "query_peak_rss_mb": peak_mb()})
        report.write(results, folder)  # after every index, so a long run leaves partial results
    written = report.write(results, folder)
    log("wrote " + ", ".join(str(p) for p in written))
    return results


def _pct(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:5.1f}"
