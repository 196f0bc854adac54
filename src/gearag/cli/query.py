"""Commands that use indices: retrieve, eval, ask, bench, demo, serve."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from gearag.cli.build import REPLY_PANELS, reply_config, reply_specs
from gearag.cli.common import (
    LLMBaseUrlOpt,
    LLMGgufOpt,
    LLMModelOpt,
    _int_list,
    _lance_specs,
    _method_names,
    _method_panels,
    _method_specs,
    _print_json,
    app,
    err,
    lance_settings,
    out,
    with_config_options,
)
from gearag.errors import ConfigError
from gearag.options import OptionSpec, option_specs

if TYPE_CHECKING:
    from gearag.store.lance.collection import LanceSearchConfig

MethodOpt = Annotated[str, typer.Option(help="Method: " + " | ".join(_method_names()) + ".")]
TopKOpt = Annotated[int, typer.Option("--top-k", min=1, help="Passages to return per question.")]


@app.command()
@with_config_options(_method_specs(), panels=_method_panels(), lance=_lance_specs())
def retrieve(
    index_dir: Annotated[str, typer.Argument(help="Index directory, or a Lance location (dir or s3://...).")],
    questions: Annotated[Path, typer.Argument(help="Questions: MuSiQue, HotpotQA, 2Wiki or JSONL {id, question}.")],
    out_file: Annotated[Path, typer.Option("--out", help="Run file to write (JSONL).")],
    method: MethodOpt = "bm25",
    top_k: TopKOpt = 15,
    resume: Annotated[bool, typer.Option(help="Skip questions already in an interrupted run's partial file.")] = True,
    options: dict | None = None,
    lance: dict | None = None,
) -> None:
    """Retrieve passages for every question into a run file, one JSON row per question."""
    from gearag.api import Gearag
    from gearag.data import load_questions
    from gearag.display import safe
    from gearag.methods import method_config
    from gearag.outputs import check_output_file
    from gearag.progress import track
    from gearag.runfile import RunWriter
    from gearag.store.backend import backend_of

    embedded = backend_of(index_dir) == "embedded"
    files = (Path(index_dir) / "manifest.json", Path(index_dir) / "passages.jsonl") if embedded else ()
    inputs = (questions, *files)
    check_output_file(out_file, inputs=inputs)
    method_config(method, options)  # bad options fail before any loading
    lance_config = lance_settings(index_dir, lance)
    qs = load_questions(questions)
    app_ = Gearag.open(index_dir, lance=lance_config)
    run_method = app_.method(method, **(options or {}))
    location = str(Path(index_dir).resolve()) if embedded else app_.index.location
    settings = {"index": location, "questions": str(Path(questions).resolve()),
                "method": method, "top_k": top_k, "options": options or {},
                "index_identity": {"manifest_sha256": app_.index.identity,
                                   "created": app_.index.manifest.get("created")}}
    ranking = _lance_ranking(lance_config)
    if ranking:  # a resumed run with another dense search starts over (the caches' settings do not matter)
        settings["lance"] = ranking
    writer = RunWriter(out_file, resume=resume, settings=settings, inputs=inputs)
    if writer.discarded:
        err.print(f"restarting: discarded {writer.discarded} rows of an interrupted run because "
                  f"{safe(writer.restart_reason)}")
    todo = [q for q in qs if q.id not in writer.done]
    if len(todo) < len(qs):
        err.print(f"resuming: {len(qs) - len(todo)} of {len(qs)} questions already done")
    latencies = []
    try:
        for q in track(todo, total=len(todo), description=f"retrieving ({method})"):
            t0 = time.perf_counter()
            result = run_method(q.question, top_k)
            latencies.append(time.perf_counter() - t0)
            writer.write(app_.row(result, qid=q.id, question=q.question))
    finally:
        writer.close()
    writer.finish([q.id for q in qs])
    if latencies:
        import statistics

        err.print(f"wrote {safe(out_file)} ({len(qs)} questions; "
                  f"median {1000 * statistics.median(latencies):.1f} ms/question)")


def _lance_ranking(config: LanceSearchConfig) -> dict[str, object]:
    """The Lance settings that change what a dense search returns, where they differ from the defaults."""
    from gearag.options import changed_options

    return {k: v for k, v in changed_options(config).items()
            if k in ("lance_exact", "lance_nprobes", "lance_refine_factor")}


@app.command("eval")
def eval_(
    questions: Annotated[Path, typer.Argument(help="Questions with gold passages (and answers).")],
    run: Annotated[Path, typer.Argument(help="Run file from `gearag retrieve`.")],
    corpus: Annotated[Path | None, typer.Option(help="Corpus: check every gold passage resolves in it first.")] = None,
    k: Annotated[str, typer.Option("--k", help="Comma-separated recall cut-offs.")] = "2,5,10,15",
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the full report as JSON here.")] = None,
) -> None:
    """Recall@k, answer recall@k (and EM/F1 when the run has answers) of a run file."""
    from gearag.data import GoldMatcher, load_corpus, load_questions
    from gearag.display import safe
    from gearag.evaluation import evaluate_run
    from gearag.outputs import check_output_file, write_text_atomic
    from gearag.runfile import read_run

    ks = _int_list(k)
    if json_out is not None:
        check_output_file(json_out, inputs=(questions, run, corpus), what="--json")
    qs = load_questions(questions)
    corpus_passages = load_corpus(corpus) if corpus is not None else None
    if corpus_passages is not None:
        matcher = GoldMatcher(corpus_passages)
        for q in qs:
            matcher.resolve(q)
    rows = read_run(run)
    by_id = {p.id: (p.title, p.text) for p in corpus_passages} if corpus_passages is not None else None
    report = evaluate_run(qs, rows, ks, by_id)
    table = Table(title=f"{safe(run.name, one_line=True)}: {report.n_questions} questions")
    cells = report.row()
    for name in cells:
        table.add_column(name, justify="right")
    table.add_row(*cells.values())
    out.print(table)
    if report.skipped_no_gold:
        err.print(f"{report.skipped_no_gold} question(s) have no gold passages and were left out of recall"
                  + (f" (R@k over {report.n_recall_questions})" if report.n_recall_questions else
                     ": recall is n/a"))
    if report.skipped_no_answer:
        err.print(f"{report.skipped_no_answer} answered question(s) have no gold answer and were left out of EM/F1"
                  + (f" (over {report.n_em_questions})" if report.n_em_questions else ": EM/F1 are n/a"))
    if report.answer_recall is not None:
        err.print(f"AR@k: answer recall over {report.n_answer_questions} question(s) (the normalised answer or an"
                  f" alias in the top-k texts); {report.skipped_yes_no} yes/no question(s) left out")
    if report.pool_rows:
        err.print("R@k of pool nodes: gold passages among the passages the top-k nodes cover (via sources)"
                  + ("" if by_id is not None else "; pass --corpus to match repeated titles by text"))
    payload = report.to_dict()
    from gearag.llm.fallback import describe, totals

    fallbacks = totals(row.get("trace") for row in rows)
    if fallbacks:  # an LLM engine ran: how often its replies were unusable and the offline engine played the role
        payload["fallbacks"] = fallbacks
        for line in describe(fallbacks):
            err.print(line, highlight=False)
    if any("steps" in (row.get("trace") or {}) for row in rows):
        if corpus_passages is None:
            err.print("agent traces found: pass --corpus to also report recall by iteration")
        else:
            from gearag.evaluation import recall_by_iteration

            curve = recall_by_iteration(qs, rows, by_id or {}, [x for x in ks if x > 2] or ks)
            payload["by_iteration"] = curve
            it_table = Table(title=f"recall by iteration (mean {curve['mean_iterations']} iterations)")
            for name in curve["curve"][0]:
                it_table.add_column(name, justify="right")
            for point in curve["curve"]:
                it_table.add_row(*(str(v) for v in point.values()))
            out.print(it_table)
    if json_out:
        write_text_atomic(json_out, json.dumps(payload, indent=2))


@app.command()
@with_config_options(_method_specs(), panels=_method_panels(), lance=_lance_specs())
def ask(
    index_dir: Annotated[str, typer.Argument(help="Index directory, or a Lance location (dir or s3://...).")],
    question: Annotated[str, typer.Argument(help="The question.")],
    method: MethodOpt = "bm25",
    top_k: TopKOpt = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    options: dict | None = None,
    lance: dict | None = None,
) -> None:
    """Answer one question: show the top passages (and the method's trace)."""
    from gearag.api import Gearag
    from gearag.methods import method_config

    if not question.strip():
        raise ConfigError("the question is empty")
    method_config(method, options)  # bad options fail before any loading
    app_ = Gearag.open(index_dir, lance=lance_settings(index_dir, lance))
    result = app_.retrieve(question, method, top_k, **(options or {}))
    if as_json:
        _print_json(app_.row(result, question=question))
        return
    from gearag.display import print_result
    from gearag.llm.fallback import describe

    print_result(out, app_.index, question, result)
    fallbacks = getattr(result.trace, "fallbacks", None) or {}
    for line in describe(fallbacks):  # an LLM engine's unusable replies, played offline (gearag.llm.fallback)
        err.print(line, highlight=False)


@app.command()
@with_config_options(reply_specs("llm_max_tokens"), panels=REPLY_PANELS)
def bench(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for results.md, results.json and the figures.")],
    datasets: Annotated[str | None, typer.Option(help="Comma-separated: musique, 2wiki, hotpotqa (default all).")]
    = None,
    methods: Annotated[str | None, typer.Option(help=(
        "Comma-separated method names or row labels (default all); `llm`: the rows an LLM engine plays."))]
    = None,
    limit: Annotated[int | None, typer.Option(min=1, help=(
        "Only the first N questions per dataset: a quick check. An index not built yet holds only those "
        "questions' own passages (MuSiQue/HotpotQA: their paragraphs; otherwise their gold passages + BM25's "
        "top 8), built in seconds; results.md marks it, and its numbers are not comparable to a full run. "
        "A full index already in the index folder is reused instead."))] = None,
    full_corpus: Annotated[bool, typer.Option(
        "--full-corpus", help="With --limit: index the whole corpus anyway (numbers comparable to a full run).")]
    = False,
    corpus: Annotated[Path | None, typer.Option(help="Own corpus (with --questions) instead of the shared sets.")]
    = None,
    questions: Annotated[Path | None, typer.Option(help="Questions with gold passages for --corpus.")] = None,
    index_dir: Annotated[Path | None, typer.Option(help="Where indices are built or reused (default OUT/indices).")]
    = None,
    extractors: Annotated[str, typer.Option(help="Comma-separated extractors (openie: the shipped OpenIE file).")]
    = "spacy",
    embedders: Annotated[str, typer.Option(help="Comma-separated embedders.")] = "wordllama",
    ablations: Annotated[bool, typer.Option(help="Also run the ablation rows.")] = True,
    force: Annotated[bool, typer.Option(help="Rebuild indices that exist.")] = False,
    max_steps: Annotated[int | None, typer.Option(min=1, help="Step budget for GEAR/IRCoT (default per dataset).")]
    = None,
    engine: Annotated[str | None, typer.Option(
        help="Engine for GEAR, IRCoT and HippoRAG rows: offline | openai | local.")] = None,
    llm_base_url: LLMBaseUrlOpt = None,
    llm_model: LLMModelOpt = None,
    llm_gguf: LLMGgufOpt = None,
    options: dict | None = None,
) -> None:
    """Every method side by side on the same indices: a Table-2 Markdown table, JSON numbers and two figures.

    Index builds print a line per stage, and long stages a line every few seconds, on stderr even when it is
    a pipe or a file (GEARAG_PROGRESS=0 hides them).
    """
    from gearag.bench.run import BenchConfig, run_bench
    from gearag.display import safe

    reply = reply_config(options, "gearag bench")
    config = BenchConfig(out_dir, datasets, methods, limit, full_corpus, corpus, questions, index_dir, extractors,
                         embedders, ablations, force, max_steps, engine, llm_base_url, llm_model,
                         command=shlex.join(["gearag", *sys.argv[1:]]) if sys.argv[1:2] == ["bench"]
                         else "gearag bench", llm_gguf=llm_gguf, llm_max_tokens=reply.llm_max_tokens)
    run_bench(config, log=lambda line: err.print(safe(line), highlight=False, soft_wrap=True))


@app.command()
def demo(
    directory: Annotated[
        Path, typer.Option("--dir", help="Where to write the demo corpus and index.")
    ] = Path("demo_out"),
    method: MethodOpt = "gear",
) -> None:
    """Write a small multi-hop corpus, index it and answer its questions — offline, no key."""
    from gearag.demo import run_demo

    run_demo(directory, method=method, console=out)


def _serve_specs() -> dict[str, OptionSpec]:
    from gearag.server.settings import ServerSettings

    return option_specs(ServerSettings)


def _operator_specs() -> dict[str, OptionSpec]:
    from gearag.server.requests import operator_specs

    return operator_specs()


@app.command()
@with_config_options(_serve_specs(), panels=_method_panels(), methods=_operator_specs())
def serve(
    index_dir: Annotated[str, typer.Argument(help="Index directory, or a Lance location (dir or s3://...).")],
    options: dict | None = None,
    methods: dict | None = None,
) -> None:
    """Serve an index over HTTP: the /v1 API, an OpenAI-compatible chat endpoint and a browser page at /.

    Binds 127.0.0.1 by default. Set GEARAG_API_KEY to require a key (needed for any other address). The method
    options here (engine, LLM endpoint and model, word lists, graph weights) are the operator's: they apply to
    every request, and a request may not set them.
    """
    from gearag.server.launch import serve as run_server
    from gearag.server.settings import ServerSettings

    run_server(index_dir, ServerSettings.from_env(methods, **(options or {})))
