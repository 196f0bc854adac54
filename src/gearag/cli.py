"""The ``gearag`` command line.

Exit codes: 0 success, 2 bad input (one-line error, no traceback),
130 interrupted (rerun the same command to resume).
"""

from __future__ import annotations

import functools
import inspect
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from gearag.data.corpus import MAX_PASSAGE_CHARS
from gearag.errors import ConfigError, GearagError, IndexFormatError
from gearag.options import OptionSpec, option_specs

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Multi-hop retrieval: index a corpus, retrieve with BM25/dense/hybrid, graph expansion and the GEAR agent.",
)
# emoji=False: ":smile:" in a passage or path is data, not an emoji code.
out = Console(emoji=False)
err = Console(stderr=True, emoji=False)


def _print_json(value: object) -> None:
    """Print ``value`` as indented JSON; C1 controls are written as escapes, nothing is re-parsed."""
    from gearag.display import json_for_terminal

    text = json_for_terminal(json.dumps(value, indent=2, ensure_ascii=False))
    out.print(text, markup=False, highlight=out.is_terminal, soft_wrap=True)


def _method_names() -> list[str]:
    from gearag.registry import REGISTRY

    return REGISTRY.names("method")


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--k expects comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise ConfigError(f"--k expects positive integers, got {text!r}")
    return values


LLMBaseUrlOpt = Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL).")]
LLMModelOpt = Annotated[str | None, typer.Option(help="Model name (default $GEARAG_LLM_MODEL).")]


def _typer_option(spec: OptionSpec) -> tuple[object, object]:
    """A typer annotation for a config option; its default is None (= the config's default)."""
    default = spec.default
    shown = "" if default is None else f" \\[default: {str(default).lower() if isinstance(default, bool) else default}]"
    allowed = spec.allowed()
    choices = f" ({' | '.join(allowed)})" if allowed and not spec.help.count("|") else ""
    flags = (f"{spec.flag}/--no-{spec.flag[2:]}",) if spec.type is bool else (spec.flag,)
    annotation = Annotated[spec.type | None, typer.Option(*flags, help=spec.help + choices + shown, show_default=False)]  # type: ignore[name-defined]
    return annotation, None


def with_config_options(specs: dict[str, OptionSpec]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add one CLI option per config option; they reach the command as one ``options`` dict (unset ones left out)."""

    def decorate(fn: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.name != "options"]
        taken = {p.name for p in own}
        extra = []
        for name, spec in specs.items():
            if name in taken:
                continue
            annotation, default = _typer_option(spec)
            extra.append(
                inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            )
        names = [p.name for p in extra]

        @functools.wraps(fn)
        def command(**kwargs: object) -> None:
            options = {name: kwargs.pop(name) for name in names}
            fn(**kwargs, options={k: v for k, v in options.items() if v is not None})

        command.__signature__ = inspect.Signature(own + extra)  # type: ignore[attr-defined]
        command.__annotations__ = {}
        return command

    return decorate


def _method_specs() -> dict[str, OptionSpec]:
    """Every option of every registered method, for ``retrieve`` and ``ask``."""
    from gearag.registry import REGISTRY

    specs: dict[str, OptionSpec] = {}
    for name in REGISTRY.names("method"):
        cls = REGISTRY.entry("method", name).config_class()
        if cls is not None:
            for key, spec in option_specs(cls).items():
                specs.setdefault(key, spec)
    return specs


def _index_specs() -> dict[str, OptionSpec]:
    from gearag.config import IndexConfig

    return option_specs(IndexConfig)


@app.command()
@with_config_options(_index_specs())
def index(
    corpus: Annotated[
        Path, typer.Argument(help="Corpus: JSON list / JSONL of {title, text[, id]}, or {title: [sentences]}.")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Index directory to create.")],
    overwrite: Annotated[bool, typer.Option(help="Replace an existing index at --out.")] = False,
    resume: Annotated[bool, typer.Option(help="Reuse the checkpoint of an interrupted build.")] = True,
    llm_base_url: LLMBaseUrlOpt = None,
    llm_model: LLMModelOpt = None,
    max_passage_chars: Annotated[int, typer.Option(
        min=1000, help="Split passages longer than this into chunks (with a warning).")] = MAX_PASSAGE_CHARS,
    options: dict | None = None,
) -> None:
    """Index a corpus into passages, triples, a triple graph, BM25 and dense indices (and SiReRAG pools)."""
    from gearag.config import IndexConfig
    from gearag.data import load_corpus
    from gearag.display import safe
    from gearag.extract import make_extractor
    from gearag.indexing import build_index
    from gearag.options import build_config
    from gearag.outputs import check_output_dir
    from gearag.store.writer import check_replaceable

    config = build_config(IndexConfig, options, what="gearag index")
    trees = config.trees
    if not trees.enabled and (trees.engine != "offline" or trees.ablations or trees.cross_tree):
        raise ConfigError("--engine, --sirerag-ablations and --sirerag-cross-tree apply only with --sirerag"
                          " (or --raptor)")
    check_output_dir(out_dir)
    if overwrite:
        check_replaceable(out_dir)
    elif out_dir.exists():
        raise IndexFormatError(f"{out_dir}: already exists (pass --overwrite to replace it)")
    def warn(message: str) -> None:
        err.print(f"[yellow]warning:[/] {safe(message)}", soft_wrap=True)

    passages = load_corpus(corpus, max_passage_chars=max_passage_chars, on_warning=warn)
    err.print(f"[bold]{len(passages):,}[/] passages from {safe(corpus)}")
    roles = None
    if trees.enabled and trees.engine == "openai":
        from gearag.llm import LLMRoles, make_llm

        roles = LLMRoles(make_llm(base_url=llm_base_url, model=llm_model))
    ex = make_extractor(config.extract.extractor, llm_base_url=llm_base_url, llm_model=llm_model)
    started = time.perf_counter()
    try:
        built = build_index(
            passages,
            out_dir,
            config,
            extractor=ex,
            llm_roles=roles,
            overwrite=overwrite,
            resume=resume,
            on_stage=lambda name, secs: err.print(f"  {name:<8} {secs:8.1f} s"),
        )
    finally:
        if hasattr(ex, "summary"):
            err.print(ex.summary())  # tokens used, also when the endpoint failed mid-way
        if hasattr(ex, "close"):
            ex.close()
        if roles is not None:
            total = roles.llm.ledger.snapshot()
            err.print(f"SiReRAG LLM ({roles.llm.model}): {total.requests:,} requests, {total.cache_hits:,} cached;"
                      f" tokens used {total.paid_tokens:,}")
            if hasattr(roles.llm, "close"):
                roles.llm.close()
    counts = built.manifest["counts"]
    err.print(
        f"indexed {counts['passages']:,} passages, {counts['triples']:,} triples, "
        f"{counts['entities']:,} entities into {safe(out_dir)} in {time.perf_counter() - started:.1f} s"
    )
    for name, pool in (built.manifest.get("trees") or {}).get("pools", {}).items():
        parts = ", ".join(f"{v:,} {k}" for k, v in pool.items() if k != "nodes")
        err.print(f"  pool {name}: {pool['nodes']:,} nodes ({parts})")


@app.command()
def info(
    index_dir: Annotated[Path, typer.Argument(help="Index directory.")],
    verify: Annotated[bool, typer.Option(help="Checksum every file in full (default: small files in full, "
                                         "large arrays by sampled blocks).")] = False,
) -> None:
    """Show an index's manifest summary after checking its files (fully with --verify)."""
    from gearag.store.index import check_index

    manifest = check_index(index_dir, full=verify)
    keys = ("format_version", "gearag_version", "created", "config", "counts")
    summary: dict[str, object] = {k: manifest[k] for k in keys if k in manifest}
    summary["collections"] = {name: spec.get("rows") for name, spec in (manifest.get("collections") or {}).items()}
    summary["build_seconds"] = manifest.get("build_seconds")
    if verify:
        summary["verified"] = True
    _print_json(summary)


MethodOpt = Annotated[str, typer.Option(help="Method: " + " | ".join(_method_names()) + ".")]
TopKOpt = Annotated[int, typer.Option("--top-k", min=1, help="Passages to return per question.")]


@app.command()
@with_config_options(_method_specs())
def retrieve(
    index_dir: Annotated[Path, typer.Argument(help="Index directory.")],
    questions: Annotated[Path, typer.Argument(help="Questions: MuSiQue, HotpotQA, 2Wiki or JSONL {id, question}.")],
    out_file: Annotated[Path, typer.Option("--out", help="Run file to write (JSONL).")],
    method: MethodOpt = "bm25",
    top_k: TopKOpt = 15,
    resume: Annotated[bool, typer.Option(help="Skip questions already in an interrupted run's partial file.")] = True,
    options: dict | None = None,
) -> None:
    """Retrieve passages for every question into a run file, one JSON row per question."""
    from gearag.api import Gearag
    from gearag.data import load_questions
    from gearag.display import safe
    from gearag.methods import method_config
    from gearag.outputs import check_output_file
    from gearag.progress import track
    from gearag.runfile import RunWriter

    inputs = (questions, index_dir / "manifest.json", index_dir / "passages.jsonl")
    check_output_file(out_file, inputs=inputs)
    method_config(method, options)  # bad options fail before any loading
    qs = load_questions(questions)
    app_ = Gearag.open(index_dir)
    run_method = app_.method(method, **(options or {}))
    settings = {"index": str(Path(index_dir).resolve()), "questions": str(Path(questions).resolve()),
                "method": method, "top_k": top_k, "options": options or {},
                "index_identity": {"manifest_sha256": app_.index.identity,
                                   "created": app_.index.manifest.get("created")}}
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
        err.print(f"{report.skipped_no_gold} question(s) have no gold passages and were left out of recall")
    if report.answer_recall is not None:
        err.print(f"AR@k: answer recall over {report.n_answer_questions} question(s) (the normalised answer or an"
                  f" alias in the top-k texts); {report.skipped_yes_no} yes/no question(s) left out")
    if report.pool_rows:
        err.print("R@k of pool nodes: gold passages among the passages the top-k nodes cover (via sources)"
                  + ("" if by_id is not None else "; pass --corpus to match repeated titles by text"))
    payload = report.to_dict()
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
@with_config_options(_method_specs())
def ask(
    index_dir: Annotated[Path, typer.Argument(help="Index directory.")],
    question: Annotated[str, typer.Argument(help="The question.")],
    method: MethodOpt = "bm25",
    top_k: TopKOpt = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    options: dict | None = None,
) -> None:
    """Answer one question: show the top passages (and the method's trace)."""
    from gearag.api import Gearag
    from gearag.methods import method_config

    if not question.strip():
        raise ConfigError("the question is empty")
    method_config(method, options)  # bad options fail before any loading
    app_ = Gearag.open(index_dir)
    result = app_.retrieve(question, method, top_k, **(options or {}))
    if as_json:
        _print_json(app_.row(result, question=question))
        return
    from gearag.display import print_result

    print_result(out, app_.index, question, result)


@app.command()
def bench(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for results.md, results.json and the figures.")],
    datasets: Annotated[str | None, typer.Option(help="Comma-separated: musique, 2wiki, hotpotqa (default all).")]
    = None,
    methods: Annotated[str | None, typer.Option(help="Comma-separated method names or row labels (default all).")]
    = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions per dataset.")] = None,
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
    engine: Annotated[str | None, typer.Option(help="Engine for GEAR, IRCoT and HippoRAG rows: offline | openai.")]
    = None,
    llm_base_url: LLMBaseUrlOpt = None,
    llm_model: LLMModelOpt = None,
) -> None:
    """Every method side by side on the same indices: a Table-2 Markdown table, JSON numbers and two figures."""
    from gearag.bench.run import BenchConfig, run_bench
    from gearag.display import safe

    config = BenchConfig(out_dir, datasets, methods, limit, corpus, questions, index_dir, extractors, embedders,
                         ablations, force, max_steps, engine, llm_base_url, llm_model,
                         command=" ".join(["gearag", *sys.argv[1:]]) if sys.argv[1:2] == ["bench"]
                         else "gearag bench")
    run_bench(config, log=lambda line: err.print(safe(line), highlight=False, soft_wrap=True))


@app.command()
def synth(
    corpus: Annotated[Path, typer.Argument(help="Source corpus (any format `gearag index` reads).")],
    questions: Annotated[Path, typer.Argument(help="Source questions with gold passages.")],
    passages: Annotated[int, typer.Option(min=1, help="Passages to write (copies of the source, renamed).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for corpus.jsonl, questions.json, synth.json.")],
    seed: Annotated[int, typer.Option(help="Seed of the renaming (same inputs and seed, same output).")] = 0,
    triples: Annotated[Path | None, typer.Option(
        help="Index directory built from the source corpus, or its OpenIE file: also write triples.json "
             "(for --extractor openie:triples.json).")] = None,
    first_copy: Annotated[int, typer.Option(min=0, help="Number of the first copy (0 = the source as is); "
                                            "corpora with disjoint copy ranges never share a passage.")] = 0,
    overwrite: Annotated[bool, typer.Option(help="Replace a synthetic corpus at --out.")] = False,
) -> None:
    """Grow a corpus to N passages with renamed copies that keep its multi-hop links, plus planted questions."""
    from gearag.bench.synth import synthesise
    from gearag.display import safe

    started = time.perf_counter()
    result = synthesise(corpus, questions, out_dir, passages, seed=seed, triples=triples, first_copy=first_copy,
                        overwrite=overwrite, log=lambda line: err.print(safe(line), highlight=False))
    counts = result.manifest["counts"]
    extra = f", {counts['triples']:,} triples" if "triples" in counts else ""
    err.print(f"wrote {counts['passages']:,} passages, {counts['questions']:,} planted questions{extra} "
              f"to {safe(out_dir)} in {time.perf_counter() - started:.1f} s")


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


@app.command()
@with_config_options(_serve_specs())
def serve(
    index_dir: Annotated[Path, typer.Argument(help="Index directory.")],
    options: dict | None = None,
) -> None:
    """Serve an index over HTTP: the /v1 API, an OpenAI-compatible chat endpoint and a browser page at /.

    Binds 127.0.0.1 by default. Set GEARAG_API_KEY to require a key (needed for any other address).
    """
    from gearag.server.launch import serve as run_server
    from gearag.server.settings import ServerSettings

    run_server(index_dir, ServerSettings.from_env(**(options or {})))


def _click_exceptions():
    """The click exception classes typer raises (recent typer vendors its own click)."""
    try:
        from typer._click import exceptions
    except ImportError:  # older typer on plain click
        from click import exceptions as click_exceptions

        return click_exceptions
    return exceptions


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app and maps errors to exit codes."""
    cx = _click_exceptions()
    command = typer.main.get_command(app)
    try:
        status = command.main(args=argv, prog_name="gearag", standalone_mode=False)
        if status == 130:  # typer turns Ctrl-C into a returned 130
            err.print("interrupted; rerun the same command to resume")
            return 130
        if isinstance(status, int):
            return status
    except GearagError as exc:
        from gearag.display import safe

        err.print(f"[red]error:[/] {safe(exc, one_line=True)}", highlight=False, soft_wrap=True)
        return 2
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted; rerun the same command to resume")
        return 130
    except cx.ClickException as exc:
        exc.show()
        return exc.exit_code
    except typer.Exit as exc:
        return int(getattr(exc, "exit_code", 0) or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
