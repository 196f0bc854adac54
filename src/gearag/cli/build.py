"""Commands that make and change indices and corpora: index, info, export, add, delete, compact, synth."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gearag.cli.common import (
    LLMBaseUrlOpt,
    LLMGgufOpt,
    LLMModelOpt,
    _delta_specs,
    _export_specs,
    _index_specs,
    _lance_specs,
    _print_json,
    _ray_specs,
    _stored_specs,
    _unlisted_by_add,
    app,
    err,
    lance_settings,
    with_config_options,
)
from gearag.data.corpus import MAX_PASSAGE_CHARS
from gearag.errors import ConfigError, IndexFormatError
from gearag.options import OptionSpec, option_specs

if TYPE_CHECKING:
    from gearag.engine import EngineConfig
    from gearag.indexing.duplicates import NewDocuments

#: The LLM reply options of the commands that build (index, add) and of bench: retrieve's and ask's.
REPLY_OPTIONS = ("llm_fallback", "llm_max_tokens")
#: Their ``--help`` panel there (retrieve and ask show them with the engine's other options); ``add``'s LLM
#: is only its extractor's (it refuses SiReRAG), so there they are extraction options.
REPLY_PANELS = dict.fromkeys(REPLY_OPTIONS, "LLM replies")


def reply_specs(*names: str) -> dict[str, OptionSpec]:
    """``--llm-fallback`` and ``--llm-max-tokens`` (or those of ``names``) as :class:`~gearag.engine.EngineConfig`
    declares them for retrieve, ask and serve: one help text and one default for every command."""
    from gearag.engine import EngineConfig

    specs = option_specs(EngineConfig)
    return {name: specs[name] for name in names or REPLY_OPTIONS}


def reply_config(given: dict | None, what: str) -> EngineConfig:
    """The reply options given (:func:`reply_specs`) as an :class:`~gearag.engine.EngineConfig`; a bad
    ``--llm-max-tokens`` is a one-line error before any work."""
    from gearag.engine import EngineConfig
    from gearag.llm.bounds import parse_overrides
    from gearag.options import build_config

    config = build_config(EngineConfig, given, what=what)
    parse_overrides(config.llm_max_tokens)
    return config


@app.command()
@with_config_options(_index_specs(), panels=REPLY_PANELS, llm=reply_specs())
def index(
    corpus: Annotated[
        Path, typer.Argument(help="Corpus: JSON list / JSONL of {title, text[, id]}, or {title: [sentences]}.")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Index directory to create.")],
    overwrite: Annotated[bool, typer.Option(help="Replace an existing index at --out.")] = False,
    resume: Annotated[bool, typer.Option(help="Reuse the checkpoint of an interrupted build.")] = True,
    llm_base_url: LLMBaseUrlOpt = None,
    llm_model: LLMModelOpt = None,
    llm_gguf: LLMGgufOpt = None,
    max_passage_chars: Annotated[int, typer.Option(
        min=1000, help="Split passages longer than this into chunks (with a warning).")] = MAX_PASSAGE_CHARS,
    ray: Annotated[str | None, typer.Option(
        "--ray", metavar="[ADDRESS]",
        help="Run extraction and embedding as Ray Data batches (extra `ray`): no ADDRESS starts a local "
             "Ray instance, `auto` or `ray://HOST:PORT` joins a cluster (default: no Ray, all in this "
             "process).")] = None,
    options: dict | None = None,
    llm: dict | None = None,
) -> None:
    """Index a corpus into passages, triples, a triple graph, BM25 and dense indices (and SiReRAG pools).

    With an LLM (--extractor llm, --engine for SiReRAG), a reply with nothing usable is replaced, for that
    passage or cluster, by the offline engine's (spaCy triples, sentence propositions, an extractive
    summary) and counted; --no-llm-fallback keeps the raw model's.
    """
    from dataclasses import replace

    from gearag.config import IndexConfig
    from gearag.data import load_corpus
    from gearag.display import safe
    from gearag.extract import make_extractor
    from gearag.indexing import write_index
    from gearag.llm.fallback import describe
    from gearag.llm.usage import usage_scope
    from gearag.options import build_config
    from gearag.outputs import check_output_dir
    from gearag.store.writer import check_replaceable, check_unlocked

    reply = reply_config(llm, "gearag index")
    options = dict(options or {})
    ray_options = {name: options.pop(name) for name in _ray_specs() if name in options}
    config = build_config(IndexConfig, options, what="gearag index")
    executor = None
    if ray is not None:
        from gearag.distributed import RayConfig, RayExecutor, require_ray

        executor = RayExecutor(build_config(RayConfig, {"ray": ray, **ray_options}, what="--ray"))
        require_ray()  # before the corpus is read: a missing extra is a one-line error
    elif ray_options:
        flags = ", ".join("--" + name.replace("_", "-") for name in ray_options)
        raise ConfigError(f"{flags} apply only with --ray")
    trees = config.trees
    if not trees.enabled and (trees.engine != "offline" or trees.ablations or trees.cross_tree
                              or trees.pool_aggregates != "all" or trees.aggregate_text != "titled"):
        raise ConfigError("--engine, --sirerag-ablations, --sirerag-cross-tree, --sirerag-pool-aggregates and"
                          " --sirerag-aggregate-text apply only with --sirerag (or --raptor)")
    check_output_dir(out_dir)
    # Another build of it: fail before the corpus is read, and before looking inside (its work files are not
    # files the user put there).
    check_unlocked(out_dir)
    if overwrite:
        check_replaceable(out_dir)
    elif out_dir.exists():
        raise IndexFormatError(f"{out_dir}: already exists (pass --overwrite to replace it)")

    def warn(message: str) -> None:
        err.print(f"[yellow]warning:[/] {safe(message)}", soft_wrap=True)

    passages = load_corpus(corpus, max_passage_chars=max_passage_chars, on_warning=warn)
    err.print(f"[bold]{len(passages):,}[/] passages from {safe(corpus)}")
    roles = None
    if trees.enabled and trees.engine != "offline":
        from gearag.engine import llm_settings
        from gearag.llm import LLMRoles, make_llm

        roles = LLMRoles(make_llm(**llm_settings(replace(reply, engine=trees.engine, llm_base_url=llm_base_url,
                                                         llm_model=llm_model, llm_gguf=llm_gguf))))
        roles.llm_fallback = reply.llm_fallback
    ex = make_extractor(config.extract.extractor, llm_base_url=llm_base_url, llm_model=llm_model,
                        llm_gguf=llm_gguf, llm_fallback=reply.llm_fallback, llm_max_tokens=reply.llm_max_tokens)
    started = time.perf_counter()
    with usage_scope() as scope:  # the SiReRAG roles' fallbacks (the extractor counts its own, Ray workers' too)
        try:
            if executor is not None:
                executor.start()
                err.print(f"extraction and embedding on Ray ({safe(executor.config.address)}, "
                          f"{executor.workers()} workers)")
            # The manifest only: loading the index back is not needed.
            unchanged = "the index there is unchanged" if out_dir.exists() else "no index was written"
            with _when_full(out_dir, unchanged, "rerun the same command: it resumes where this one stopped"
                            if resume else "rerun it without --no-resume to resume where this one stopped"):
                manifest = write_index(
                    passages,
                    out_dir,
                    config,
                    extractor=ex,
                    llm_roles=roles,
                    overwrite=overwrite,
                    resume=resume,
                    on_stage=lambda name, secs: err.print(f"  {name:<8} {secs:8.1f} s"),
                    executor=executor,
                )
        finally:
            if executor is not None:
                executor.close()
            if hasattr(ex, "summary"):
                err.print(ex.summary(), highlight=False)  # tokens used, also when the endpoint failed mid-way
            if hasattr(ex, "close"):
                ex.close()
            if roles is not None:
                total = roles.llm.ledger.snapshot()
                err.print(f"SiReRAG LLM ({roles.llm.model}): {total.requests:,} requests, "
                          f"{total.cache_hits:,} cached; tokens used {total.paid_tokens:,}")
                for line in describe(_sirerag_fallbacks(scope.fallbacks())):  # "propositions: 2 of 9 replies ..."
                    err.print(line, highlight=False)
                if hasattr(roles.llm, "close"):
                    roles.llm.close()
    counts = manifest["counts"]
    err.print(
        f"indexed {counts['passages']:,} passages, {counts['triples']:,} triples, "
        f"{counts['entities']:,} entities into {safe(out_dir)} in {time.perf_counter() - started:.1f} s"
    )
    for name, pool in (manifest.get("trees") or {}).get("pools", {}).items():
        parts = ", ".join(f"{v:,} {k}" for k, v in pool.items() if k != "nodes")
        err.print(f"  pool {name}: {pool['nodes']:,} nodes ({parts})")


def _sirerag_fallbacks(counts: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The fallback counts of SiReRAG's LLM roles among a build's (propositions, summaries)."""
    from gearag.llm.roles.sirerag import PROPOSITIONS, SUMMARIZE

    return {role: c for role, c in counts.items() if role in (PROPOSITIONS.name, SUMMARIZE.name)}


def _generation_summary(root: Path, manifest: dict) -> dict[str, object] | None:
    """A sharded index's current generation: full (where an add wrote it, why), or a delta over how many of its
    shards (``gearag add``, docs/delta.md); None where it cannot be read (``info`` reported the files already)."""
    from gearag.errors import GearagError
    from gearag.indexing.generation import WHOLE_BECAUSE
    from gearag.store.index import read_manifest
    from gearag.store.shards import DELTA, GENERATIONS_DIR, generation_ref

    try:
        name, _ = generation_ref(root, manifest)
        gman = read_manifest(root / GENERATIONS_DIR / name)
    except (GearagError, OSError, ValueError, KeyError, TypeError):  # a Lance export lists no generation dir
        return None
    delta = gman.get(DELTA)
    if not isinstance(delta, dict):
        why = gman.get(WHOLE_BECAUSE)
        full: dict[str, object] = {"name": name, "kind": "full"}
        return full | ({"because": why} if isinstance(why, str) else {})
    base_shards = delta.get("shards") or []
    return {"name": name, "kind": "delta", "shards_since_base": len(gman.get("shards") or []) - len(base_shards)}


@app.command()
@with_config_options(_lance_specs())
def info(
    index_dir: Annotated[str, typer.Argument(help="Index directory, or a Lance location (dir or s3://...).")],
    verify: Annotated[bool, typer.Option(help="Checksum every file in full (default: small files in full, "
                                         "large arrays by sampled blocks).")] = False,
    options: dict | None = None,
) -> None:
    """Show an index's manifest summary after checking its files (fully with --verify)."""
    from gearag.store.backend import backend_of, index_summary

    manifest = index_summary(index_dir, verify=verify, lance=lance_settings(index_dir, options))
    keys = ("format_version", "gearag_version", "created", "config", "counts")
    summary: dict[str, object] = {k: manifest[k] for k in keys if k in manifest}
    summary["collections"] = {name: spec.get("rows") for name, spec in (manifest.get("collections") or {}).items()}
    if isinstance(manifest.get("shards"), list):  # grown by add/delete/compact: its shards and its last change
        summary["shards"] = len(manifest["shards"])
        summary["last_update"] = manifest.get("last_update")
        summary["generation"] = _generation_summary(Path(index_dir), manifest)
    else:
        summary["build_seconds"] = manifest.get("build_seconds")
    summary["backend"] = backend_of(index_dir)
    if verify:
        summary["verified"] = True
    _print_json(summary)


def check_export_location(index_dir: Path, uri: str) -> None:
    """A local export location is checked like every output, before the index is opened: not a file, a device,
    a FIFO or under /dev (an export writes a directory of tables), not unwritable, not the index or inside it.
    What is already in the directory is the export's own check (only gearag's Lance tables are replaced)."""
    from gearag.errors import OutputError
    from gearag.outputs import OutputFolder
    from gearag.store.lance.storage import parse_location

    location = parse_location(uri)
    if location.remote:
        return
    path = Path(location.uri)
    OutputFolder.claim(path, (), what="export location")
    source = index_dir.resolve()
    if path.resolve() == source or source in path.resolve().parents:
        raise OutputError(f"export location {uri}: is inside the index being exported ({index_dir}); "
                          "choose a location outside it")


@app.command()
@with_config_options(_export_specs())
def export(
    index_dir: Annotated[Path, typer.Argument(help="A built index directory.")],
    uri: Annotated[str, typer.Argument(help="Where to write Lance tables: a directory or s3://BUCKET/PREFIX "
                                            "(endpoint: AWS_ENDPOINT_URL or ?endpoint=URL).")],
    options: dict | None = None,
) -> None:
    """Write a built index to Lance tables (extra `lance`), or bring such an export up to date (--update); every
    command that takes an index then reads the URI, and `gearag serve` replicas serve an update once committed."""
    from gearag.indexing.export import export_index
    from gearag.options import build_config
    from gearag.store.lance.export import ExportConfig

    config = build_config(ExportConfig, options, what="gearag export")
    check_export_location(index_dir, uri)
    started = time.perf_counter()
    summary = export_index(index_dir, uri, config,  # each step with the seconds since the start
                           progress=lambda msg: err.print(f"{time.perf_counter() - started:8.1f} s  {msg}"))
    _print_json(summary)


#: What each step of an update does, shown while it runs.
_STEP_TEXT = {
    "convert": "converting the plain index into shards",
    "shard": "extracting, tokenising and embedding the new documents",
    "generation": "deriving the union: triple graph, entity resolution, passage graph",
    "compact": "merging the shards and deriving their union",
}


@contextmanager
def _steps(manifest: dict, *planned: str) -> Iterator[Callable[[str, float], None]]:
    """The ``on_step`` of an update: each step is printed with its seconds when done; on a terminal a spinner
    names the step under way (a plain index is converted first)."""
    from gearag.progress import status
    from gearag.store.shards import is_sharded

    queue = list(planned) if is_sharded(manifest) or "compact" in planned else ["convert", *planned]
    with status(err, _STEP_TEXT[queue[0]]) as show:

        def done(name: str, seconds: float) -> None:
            err.print(f"  {name:<10} {seconds:8.1f} s")
            if name in queue:
                del queue[: queue.index(name) + 1]
            show(_STEP_TEXT[queue[0]] if queue else "")

        yield done


@contextmanager
def _when_full(target: Path, unchanged: str, rerun: str) -> Iterator[None]:
    """A write inside a build or update that finds no room (a full disk, a quota, ``ulimit -f``) as one line
    saying what is left (``unchanged``: every build and update commits by one rename at its end) and what a
    rerun does (``rerun``)."""
    from gearag.errors import OutputError
    from gearag.store.writer import storage_full

    try:
        yield
    except OSError as exc:
        if not storage_full(exc):
            raise
        reason = exc.strerror or "a write was cut short (no space left?)"
        raise OutputError(f"{target}: {reason}; {unchanged}; free some space, then {rerun}") from None


_UPDATE_UNCHANGED = "the index is unchanged"
_UPDATE_RERUN = "rerun the same command"


def _print_update(what: str, shown: Path, built: object, started: float) -> None:
    """The summary of an update of the index the user named ``shown`` (through a symlink: the link's name); an
    add's full generation says why it is not a delta."""
    from gearag.display import safe

    counts = built.manifest["counts"]  # type: ignore[attr-defined]
    shards = len(built.manifest.get("shards", [None]))  # type: ignore[attr-defined]
    gen = _generation_summary(built.path, built.manifest)  # type: ignore[attr-defined]
    kind = "" if gen is None else (
        f"; its generation is a delta over the last full one ({gen['shards_since_base']} shard(s) since it)"
        if gen["kind"] == "delta" else "; its generation is a full one" + (
            f", because {safe(str(gen['because']))}" if "because" in gen else ""))
    err.print(f"{what}: {safe(shown)} now has {counts['passages']:,} passages, "
              f"{counts['triples']:,} triples, {counts['entities']:,} entities in {shards} shard(s){kind} "
              f"({time.perf_counter() - started:.1f} s)")


@app.command()
@with_config_options(_stored_specs(), hidden=_unlisted_by_add(), panels=dict.fromkeys(REPLY_OPTIONS, "Extract"),
                     delta=_delta_specs(), llm=reply_specs())
def add(
    index_dir: Annotated[Path, typer.Argument(help="Index directory to add to (a plain index is converted).")],
    corpus: Annotated[Path, typer.Argument(help="Documents to add, in any corpus format `gearag index` reads; "
                                           "an id the index holds for other content is an error (those "
                                           "without one get the next free p<n>).")],
    max_passage_chars: Annotated[int, typer.Option(
        min=1000, help="Split passages longer than this into chunks (with a warning).")] = MAX_PASSAGE_CHARS,
    keep_duplicates: Annotated[bool, typer.Option(
        "--keep-duplicates", help="Add documents whose title and text the index (or an earlier document of "
                                  "CORPUS) already has, instead of skipping them.")] = False,
    llm_base_url: LLMBaseUrlOpt = None,
    llm_model: LLMModelOpt = None,
    llm_gguf: LLMGgufOpt = None,
    options: dict | None = None,
    delta: dict | None = None,
    llm: dict | None = None,
) -> None:
    """Add documents to an index as a new shard, without re-extracting or re-embedding what it holds.

    A document the index already has (same title and text) is skipped with a count, and so is one that
    repeats an earlier document of CORPUS (--keep-duplicates adds them): rerunning an add that ran is a
    no-op that says so. The documents use the index's stored settings (an option that differs is an
    error). The new generation is written as a delta over the last full one while the passages added
    since it are few (docs/delta.md), else in full. Rerun the same command after an interruption to
    resume.
    """
    from gearag.config import IndexConfig
    from gearag.data import load_corpus
    from gearag.display import safe
    from gearag.extract.llm import ROLE
    from gearag.indexing.delta_generation import DeltaConfig
    from gearag.indexing.incremental import add_documents, check_index_dir, check_options, held_ids, next_auto_id
    from gearag.llm.fallback import describe
    from gearag.llm.usage import usage_scope
    from gearag.options import build_config

    policy = build_config(DeltaConfig, delta, what="gearag add")
    reply = reply_config(llm, "gearag add")
    manifest = check_index_dir(index_dir)
    # Options that conflict with the stored settings fail before the documents are read.
    check_options(index_dir, IndexConfig.from_dict(manifest.get("config", {})), options)

    def warn(message: str) -> None:
        err.print(f"[yellow]warning:[/] {safe(message)}", soft_wrap=True)

    # Documents without an id continue the index's p<n> numbering instead of starting again at p0, with ids
    # no passage of the index has.
    passages = load_corpus(corpus, max_passage_chars=max_passage_chars, on_warning=warn,
                           id_start=next_auto_id(index_dir), taken=lambda ids: held_ids(index_dir, ids))
    err.print(f"[bold]{len(passages):,}[/] passages from {safe(corpus)}")
    started = time.perf_counter()
    adding: list[NewDocuments] = []

    def on_new(new: NewDocuments) -> None:
        adding.append(new)
        line = _skipped_line(new, corpus, index_dir)
        if line:
            err.print(safe(line), highlight=False, soft_wrap=True)

    # What an add finished (extraction checkpoint, embeddings, the shard) stays beside the index for a rerun.
    with usage_scope() as scope, \
            _when_full(index_dir, _UPDATE_UNCHANGED, f"{_UPDATE_RERUN}: it resumes where this one stopped"), \
            _steps(manifest, "shard", "generation") as on_step:
        extractor_options = {"llm_base_url": llm_base_url, "llm_model": llm_model, "llm_gguf": llm_gguf,
                             "llm_fallback": reply.llm_fallback, "llm_max_tokens": reply.llm_max_tokens}
        built = add_documents(index_dir, passages, options=options, extractor_options=extractor_options,
                              on_step=on_step, delta=policy,
                              keep_duplicates=keep_duplicates, on_new=on_new)
    extracted = {role: c for role, c in scope.fallbacks().items() if role == ROLE}
    for line in describe(extracted, by="spaCy rules"):  # an LLM extractor's unusable replies
        err.print(line, highlight=False)
    if adding and not adding[0].passages:
        return  # nothing was added: the line above said so
    _print_update("added", index_dir, built, started)


def _skipped_line(new: NewDocuments, corpus: Path, index_dir: Path) -> str | None:
    """What an add skips, in one line (None: it skips nothing); with nothing left, that the add is a no-op."""
    if not new.skipped:
        return None
    if not new.passages:
        return f"nothing to add: all {new.total:,} passages of {corpus} are already in {index_dir}"
    parts = []
    if new.in_index:
        pid, held = new.in_index[0]
        example = f" ({pid!r} is {held!r})" if pid != held else ""
        parts.append(f"{len(new.in_index):,} already in {index_dir}{example}")
    if new.repeated:
        pid, first = new.repeated[0]
        parts.append(f"{len(new.repeated):,} repeating an earlier one of {corpus} ({pid!r} repeats {first!r})")
    return (f"skipping {new.skipped:,} of {new.total:,} passages with the same title and text: {'; '.join(parts)}"
            " (--keep-duplicates adds them)")


@app.command()
def delete(
    index_dir: Annotated[Path, typer.Argument(help="Index directory.")],
    ids_file: Annotated[Path, typer.Argument(help="Passage ids to delete, one per line.")],
) -> None:
    """Delete passages (and their triples) by id; unknown ids are an error and nothing is deleted."""
    from gearag.data.ids import read_ids
    from gearag.indexing.incremental import check_index_dir, delete_documents

    manifest = check_index_dir(index_dir)
    ids = read_ids(ids_file)
    started = time.perf_counter()
    with _when_full(index_dir, _UPDATE_UNCHANGED, _UPDATE_RERUN), _steps(manifest, "generation") as on_step:
        built = delete_documents(index_dir, ids, on_step=on_step)
    _print_update(f"deleted {len(set(ids)):,} passage(s)", index_dir, built, started)


@app.command()
def compact(index_dir: Annotated[Path, typer.Argument(help="Index directory.")]) -> None:
    """Merge an index's shards into one, dropping deleted passages (rankings do not change)."""
    from gearag.indexing.incremental import check_index_dir
    from gearag.indexing.incremental import compact as compact_index

    manifest = check_index_dir(index_dir)
    started = time.perf_counter()
    with _when_full(index_dir, _UPDATE_UNCHANGED, _UPDATE_RERUN), _steps(manifest, "compact") as on_step:
        built = compact_index(index_dir, on_step=on_step)
    _print_update("compacted", index_dir, built, started)


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
