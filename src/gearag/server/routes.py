"""The ``/v1`` endpoints: index summary, retrieve, ask (plain and streamed step by step), passages, entities, graph."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from gearag.api import Gearag
from gearag.options import option_specs
from gearag.registry import REGISTRY
from gearag.results import Result
from gearag.server import graph as graphs
from gearag.server.errors import APIError, client_error, error_body
from gearag.server.models import (
    AskRequest,
    EntitySearch,
    ErrorBody,
    GraphOut,
    Health,
    IndexInfo,
    MethodInfo,
    PassageDetail,
    RetrieveRequest,
    RetrieveResponse,
    StreamEvent,
)
from gearag.server.runner import Runner
from gearag.server.settings import ServerSettings
from gearag.trace import AgentTrace, ExpansionTrace, QATrace
from gearag.version import __version__

#: Documented error responses of every /v1 route (the OpenAPI page shows the body shape).
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in [(400, "Unknown method or bad option"), (401, "Missing or wrong API key"),
                       (413, "Body too large"), (422, "Invalid request body or parameter"),
                       (503, "Too many calls in flight"), (504, "Time limit exceeded")]
}

router = APIRouter()


def app_state(request: Request) -> tuple[Gearag, Runner, ServerSettings]:
    """The index to answer from (:mod:`gearag.server.live`), the runner and the settings of the request's app."""
    state = request.app.state
    return state.live.get(), state.runner, state.settings


def index_name(location: str) -> str:
    """The index's name as clients see it: the last part of its location, not the operator's file path."""
    return location.rstrip("/").rsplit("/", 1)[-1] or location


def check_question(question: str, settings: ServerSettings) -> str:
    """The stripped question; 422 when empty or over ``max_question_chars``."""
    text = question.strip()
    if not text:
        raise APIError(422, "question: the question is empty")
    if len(text) > settings.max_question_chars:
        raise APIError(422, f"question: too long ({len(text)} characters; limit {settings.max_question_chars})")
    return text


def check_top_k(top_k: int, settings: ServerSettings) -> int:
    if top_k > settings.max_top_k:
        raise APIError(422, f"top_k: {top_k} is over the limit of {settings.max_top_k}")
    return top_k


def result_graph(gearag: Gearag, result: Result) -> dict[str, Any] | None:
    """The final beams (and gist memory or proximal triples) with the evidence chain highlighted (None for
    methods without a graph)."""
    trace = result.trace
    if isinstance(trace, AgentTrace):
        return graphs.beams_graph(gearag.index, trace.paths, graphs.evidence_triples(trace.evidence),
                                  also=trace.gist_memory)
    if isinstance(trace, ExpansionTrace):
        return graphs.beams_graph(gearag.index, trace.paths, also=trace.proximal or [])
    return None


def respond(gearag: Gearag, result: Result, question: str, method: str, seconds: float) -> dict[str, Any]:
    """The response body: the one run-file row (:meth:`Gearag.row`) plus what the page shows."""
    row = gearag.row(result, question=question)
    trace = result.trace
    evidence = list(trace.evidence) if isinstance(trace, (AgentTrace, QATrace)) else []
    label = result.answer_label if result.answer is not None else None
    return {"answer": None, "trace": None, **row, "method": method, "answer_label": label,
            "evidence": evidence, "graph": result_graph(gearag, result), "seconds": round(seconds, 4)}


async def _run(request: Request, body: RetrieveRequest) -> dict[str, Any]:
    gearag, runner, settings = app_state(request)
    question = check_question(body.question, settings)
    top_k = check_top_k(body.top_k, settings)
    started = time.perf_counter()
    result = await runner.run(gearag, body.method, body.options, question, top_k)
    return await run_in_threadpool(respond, gearag, result, question, body.method, time.perf_counter() - started)


@router.get("/health", response_model=Health, tags=["service"])
def health() -> dict[str, Any]:
    """Liveness: always public, even with an API key set."""
    return {"status": "ok", "version": __version__}


@router.head("/health", include_in_schema=False)
def health_head() -> Response:
    """``HEAD /health`` for probes that send HEAD (load balancers, ``curl -I``): 200, no body."""
    return Response(status_code=200)


@router.get("/v1/index", response_model=IndexInfo, responses=ERRORS, tags=["index"])
def index_info(request: Request) -> dict[str, Any]:
    """The index's manifest summary (counts, extractor, embedder, build date), the methods with their options, and
    how the service follows the index (``served``: which one it serves, its last look for an update)."""
    gearag, _, _ = app_state(request)
    manifest = gearag.index.manifest
    config = manifest.get("config", {})
    methods = []
    for name in REGISTRY.names("method"):
        entry = REGISTRY.entry("method", name)
        cls = entry.config_class()
        specs = option_specs(cls) if cls is not None else {}
        methods.append(MethodInfo(name=name, help=entry.help, options={  # what a request may set, and how far
            k: {"type": s.type.__name__, "default": s.default, "help": s.help, "max": s.request.max}
            for k, s in specs.items() if s.request is not None}))
    return {
        "path": index_name(gearag.index.location), "counts": manifest.get("counts", {}),
        "extractor": config.get("extract", {}).get("extractor"), "embedder": config.get("embed", {}).get("embedder"),
        "created": manifest.get("created"), "format_version": manifest.get("format_version"),
        "gearag_version": manifest.get("gearag_version"), "methods": methods,
        "served": request.app.state.live.status(),
    }


@router.post("/v1/retrieve", response_model=RetrieveResponse, responses=ERRORS, tags=["retrieval"])
async def retrieve(request: Request, body: RetrieveRequest) -> dict[str, Any]:
    """Ranked passages and the method's typed trace."""
    return await _run(request, body)


@router.post("/v1/ask", response_model=RetrieveResponse, responses=ERRORS, tags=["retrieval"])
async def ask(request: Request, body: AskRequest) -> dict[str, Any]:
    """An answer (engine-labelled), its evidence chain, the passages and the trace; the GEAR agent by default."""
    return await _run(request, body)


def _line(event: dict[str, Any]) -> bytes:
    return (json.dumps(event, ensure_ascii=False) + "\n").encode("utf-8")


@router.post("/v1/ask/stream", responses={200: {"model": StreamEvent, "content": {"application/x-ndjson": {}},
                                                "description": "NDJSON: one StreamEvent per line"}, **ERRORS},
             tags=["retrieval"])
async def ask_stream(request: Request, body: AskRequest) -> StreamingResponse:
    """Like ``/v1/ask``, as NDJSON: a ``step`` event as each agent step finishes (with its beams as a graph), then
    the ``result`` — or an ``error`` event. Limits are checked before the stream starts (errors get their status)."""
    gearag, runner, settings = app_state(request)
    question = check_question(body.question, settings)
    top_k = check_top_k(body.top_k, settings)
    config = runner.config(body.method, body.options)
    call = runner.submit(gearag, body.method, config, question, top_k, stream=True)
    started = time.perf_counter()

    async def lines() -> AsyncIterator[bytes]:
        memory: list[list[str]] = []
        try:
            async for kind, value in runner.events(call):
                if kind == "step":
                    memory.extend(value.get("gist_added", []))
                    graph = await run_in_threadpool(graphs.beams_graph, gearag.index, value.get("paths", []), memory,
                                                    value.get("proximal", []))
                    yield _line({"event": "step", "step": value, "graph": graph})
                else:
                    out = await run_in_threadpool(respond, gearag, value, question, body.method,
                                                  time.perf_counter() - started)
                    yield _line({"event": "result", "result": out})
        except Exception as exc:  # the stream has started: an error is its last event, with no upstream details
            _, message, type_ = client_error(exc, settings.request_timeout)
            yield _line({"event": "error", **error_body(message, type_)})

    return StreamingResponse(lines(), media_type="application/x-ndjson",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


@router.get("/v1/passages/{passage_id:path}", response_model=PassageDetail, responses=ERRORS, tags=["index"])
def passage(request: Request, passage_id: str) -> dict[str, Any]:
    """One passage by id, with the triples extracted from it."""
    gearag, _, _ = app_state(request)
    row = gearag.index.passage_rows().get(passage_id)
    if row is None:
        raise APIError(404, f"no passage with id {passage_id!r}")
    p = gearag.index.passages[row]
    triples = [list(f.as_tuple()) for f in gearag.index.triples.facts(gearag.index.passage_triples(row))]
    return {"id": p.id, "title": p.title, "text": p.text, "row": row, "triples": triples}


@router.get("/v1/entities", response_model=EntitySearch, responses=ERRORS, tags=["index"])
def entities(request: Request, q: str = Query(..., min_length=1, max_length=200, description="Part of a name."),
             limit: int = Query(20, ge=1, le=100)) -> dict[str, Any]:
    """Entities of the triple graph whose (normalised) name contains ``q``: exact, prefix, then by degree."""
    gearag, _, _ = app_state(request)
    return {"query": q, "entities": graphs.search_entities(gearag.index, q, limit)}


@router.get("/v1/graph", response_model=GraphOut, responses=ERRORS, tags=["index"])
def graph(request: Request, entity: str = Query(..., min_length=1, max_length=500),
          depth: int = Query(1, ge=1, description="Triple hops from the entity (at most the server's max_depth)."),
          max_nodes: int = Query(60, ge=1, description="Node limit (at most the server's max_nodes).")
          ) -> dict[str, Any]:
    """A bounded neighbourhood of ``entity``: entities and passages as nodes, triples as labelled edges."""
    gearag, _, settings = app_state(request)
    if depth > settings.max_depth:
        raise APIError(422, f"depth: {depth} is over the limit of {settings.max_depth}")
    if max_nodes > settings.max_nodes:
        raise APIError(422, f"max_nodes: {max_nodes} is over the limit of {settings.max_nodes}")
    out = graphs.neighbourhood(gearag.index, entity, depth, max_nodes)
    if out is None:
        raise APIError(404, f"no entity {entity!r} in the index (search with /v1/entities?q=)")
    return {"entity": entity, "depth": depth, **out}
