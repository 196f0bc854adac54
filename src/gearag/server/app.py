"""The app factory: one :class:`~gearag.api.Gearag` (its index opened again after an update) behind the service's
routes and limits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles

from gearag.api import Gearag
from gearag.server import docs, errors
from gearag.server.auth import AuthMiddleware
from gearag.server.limits import BodyLimitMiddleware
from gearag.server.live import LiveGearag, warm_methods
from gearag.server.metrics import Metrics, MetricsMiddleware, setup_access_log
from gearag.server.runner import Runner
from gearag.server.settings import ServerSettings
from gearag.version import __version__

STATIC = Path(__file__).parent / "static"

DESCRIPTION = """Multi-hop retrieval over one gearag index: BM25/dense/hybrid, graph expansion and the GEAR agent.

**Authorising.** When the server was started with `GEARAG_API_KEY` set, every endpoint but `/health`, the
page at `/` and these docs needs that key: send `Authorization: Bearer KEY` or `X-API-Key: KEY`. Here,
press **Authorize** and enter the key once; the calls made from this page then carry it.

**What a request may set.** The method and its question-time options (`GET /v1/index` lists them),
each within the server's limits. The engine, the LLM endpoint, model and key, files, and the options that
shape the index's graphs are the operator's (`gearag serve` flags): a request naming one gets a 400.
Errors are `{"error": {"message", "type"}}`.
"""


def create_app(gearag: Gearag, settings: ServerSettings | None = None,
               announce: Callable[[str], None] | None = None) -> FastAPI:
    """The service over ``gearag`` with ``settings`` (default: :class:`ServerSettings` defaults, no key); an
    index directory updated meanwhile is opened again (:mod:`gearag.server.live`; ``announce`` says so)."""
    from gearag.server import openai_compat, routes

    settings = settings or ServerSettings()
    runner = Runner(settings)
    live = _live(gearag, settings, announce, runner)
    metrics = Metrics()
    metrics.in_flight.set_function(lambda: runner.active)
    metrics.follow(live)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await asyncio.to_thread(live.warm_up)  # the first requests do not pay the methods' first-call loads
        live.watch()  # look for updates of the index on a thread of its own
        yield
        live.close()  # no more looks for an update
        runner.shutdown()  # uvicorn has drained in-flight requests; let any stray calls finish too

    app = FastAPI(title="gearag", version=__version__, description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    docs.install(app)
    app.state.live = live
    app.state.runner = runner
    app.state.settings = settings
    app.state.metrics = metrics
    errors.install(app)
    app.include_router(routes.router)
    app.include_router(openai_compat.router)

    @app.get("/metrics", include_in_schema=False)
    def _metrics() -> Response:
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    @app.get("/favicon.ico", include_in_schema=False)
    def _favicon() -> Response:
        return Response(status_code=204)

    @app.get("/", include_in_schema=False)
    def _page(request: Request) -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    # Middleware: the last added runs first. Metrics see everything (401/413 included).
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes, timeout=settings.header_timeout)
    app.add_middleware(AuthMiddleware, api_key=settings.api_key)
    if settings.cors:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=settings.cors, allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "X-API-Key", "Content-Type"])
    if settings.access_log:
        setup_access_log()
    app.add_middleware(MetricsMiddleware, metrics=metrics, log=settings.access_log)
    return app


def _live(gearag: Gearag, settings: ServerSettings, announce: Callable[[str], None] | None,
          runner: Runner) -> LiveGearag:
    from gearag.store.backend import backend_of

    index = gearag.index
    methods = settings.warm
    # Warmed with the config requests get (the operator's options): the methods a request uses are the ones loaded.
    warm = (lambda opened: warm_methods(opened, methods, lambda name: runner.config(name, {}))) if methods else None
    if backend_of(index.location) == "lance":  # a new export commits a new version of its meta table
        from gearag.store.lance.versions import meta_version

        db, where = index.db.db, index.opened_as  # type: ignore[attr-defined]  # the connection the pinned one wraps
        return LiveGearag(gearag, lambda: Gearag.open(where, lance=settings.lance), settings.reload_seconds,
                          index.location, announce, stamp=lambda: meta_version(db),
                          served=lambda opened: opened.index.meta_version, warm=warm)  # type: ignore[attr-defined]
    if not isinstance(getattr(index, "path", None), Path):
        return LiveGearag(gearag, warm=warm)
    root = index.path
    return LiveGearag(gearag, lambda: Gearag.open(root, lance=settings.lance), settings.reload_seconds, root,
                      announce, warm=warm)
