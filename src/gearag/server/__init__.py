"""``gearag serve``: an HTTP service over one index, an OpenAI-compatible chat endpoint and a browser view.

One concept per module:

* :mod:`.settings` — :class:`ServerSettings`, every limit with its documented default;
* :mod:`.app` — :func:`create_app`, wiring the parts together;
* :mod:`.errors` — every error as ``{"error": {"message", "type"}}`` with its status;
* :mod:`.auth` — the API key (``GEARAG_API_KEY``);
* :mod:`.limits` — body size, concurrency and per-request time limits;
* :mod:`.runner` — runs method calls in a bounded thread pool, with step callbacks;
* :mod:`.models` — the request and response bodies (pydantic, shown on ``/docs``);
* :mod:`.routes` — the ``/v1`` endpoints and the NDJSON step stream;
* :mod:`.graph` — entity neighbourhoods and per-step beam graphs for the page;
* :mod:`.openai_compat` — ``POST /v1/chat/completions``;
* :mod:`.metrics` — Prometheus counters and structured access logs.

FastAPI is imported only here, so ``import gearag`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gearag.server.settings import ServerSettings

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["ServerSettings", "create_app"]


def create_app(*args: Any, **kwargs: Any) -> FastAPI:
    """See :func:`gearag.server.app.create_app` (imported lazily)."""
    from gearag.server.app import create_app as _create

    return _create(*args, **kwargs)
