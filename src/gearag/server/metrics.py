"""Operations: Prometheus metrics (``GET /metrics``) and one JSON access-log line per request.

Metrics live in a registry per app (several apps in one process — tests — do
not collide). Paths are recorded by route template (``/v1/passages/{passage_id}``),
never by raw URL, so label cardinality stays bounded.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

access_log = logging.getLogger("gearag.access")

#: Latency buckets (seconds): retrieval is milliseconds, an LLM agent tens of seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    """The service's counters: requests, latency, errors, method calls in flight."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("gearag_http_requests", "HTTP requests by method, route and status.",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram("gearag_http_request_seconds", "HTTP request latency by route.",
                                 ["method", "route"], buckets=BUCKETS, registry=self.registry)
        self.errors = Counter("gearag_http_errors", "HTTP responses with status >= 400, by route and status.",
                              ["route", "status"], registry=self.registry)
        self.in_flight = Gauge("gearag_method_calls_in_flight", "Method calls running or queued.",
                               registry=self.registry)
        self.index_reloads = Gauge("gearag_index_reloads", "Updates of the index served since the service started.",
                                   registry=self.registry)
        self.index_failures = Gauge("gearag_index_reload_failures", "Looks since the last update served that found "
                                    "an update that did not open.", registry=self.registry)
        self.index_age = Gauge("gearag_index_opened_seconds", "Seconds since the index served was opened.",
                               registry=self.registry)

    def follow(self, live: Any) -> None:
        """Report how ``live`` (a :class:`gearag.server.live.LiveGearag`) follows its index."""
        self.index_reloads.set_function(lambda: live.reloads)
        self.index_failures.set_function(lambda: live.failures)
        self.index_age.set_function(lambda: time.time() - live.opened_at)

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def _route(scope: dict[str, Any]) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    return "/static" if str(scope.get("path", "")).startswith("/static/") else "unmatched"


def setup_access_log() -> None:
    """Send access lines, as they are (already JSON), to stderr once."""
    access_log.setLevel(logging.INFO)
    access_log.propagate = False
    if not any(getattr(h, "_gearag_access", False) for h in access_log.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._gearag_access = True  # type: ignore[attr-defined]
        access_log.addHandler(handler)


class MetricsMiddleware:
    """Times every HTTP request to its last body byte (streams included), counts it and logs it."""

    def __init__(self, app: Any, metrics: Metrics, log: bool = True) -> None:
        self.app = app
        self.metrics = metrics
        self.log = log

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        done = False

        def finish() -> None:
            nonlocal done
            if done:
                return
            done = True
            seconds = time.perf_counter() - started
            route = _route(scope)
            m = self.metrics
            m.requests.labels(scope["method"], route, str(status)).inc()
            m.latency.labels(scope["method"], route).observe(seconds)
            if status >= 400:
                m.errors.labels(route, str(status)).inc()
            if self.log:
                access_log.info(json.dumps({
                    "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()), "method": scope["method"],
                    "path": scope["path"], "route": route, "status": status, "ms": round(1000 * seconds, 1),
                    "client": (scope.get("client") or ("", 0))[0],
                }))

        async def watch(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                finish()

        try:
            await self.app(scope, receive, watch)
        finally:
            finish()  # also when the client went away mid-stream
