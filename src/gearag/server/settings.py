"""The service's settings: one frozen dataclass, every default documented once (``gearag serve`` options).

They include the index's Lance query-time settings (:class:`~gearag.store.lance.collection.LanceSearchConfig`,
options ``--lance-*``), with which ``gearag serve`` opens a Lance index.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gearag.errors import ConfigError
from gearag.options import setting
from gearag.store.lance.collection import LanceSearchConfig

#: Environment variable holding the API key (never a command-line flag, which other users can read in ``ps``).
API_KEY_ENV = "GEARAG_API_KEY"


@dataclass(frozen=True)
class ServerSettings:
    """How ``gearag serve`` listens and what it accepts. Safe by default: loopback only, bounded everything."""

    host: str = setting("127.0.0.1", "Serve: address to bind (a non-loopback address needs $GEARAG_API_KEY).")
    port: int = setting(8750, "Serve: TCP port.", min=0)
    #: Largest request body; larger ones get 413 before they are read whole.
    max_body_bytes: int = setting(65_536, "Serve: largest request body in bytes (413 above).", min=1)
    #: Longest question (characters); longer ones get 422.
    max_question_chars: int = setting(2_000, "Serve: longest question in characters.", min=1)
    #: Largest ``top_k`` a request may ask for.
    max_top_k: int = setting(100, "Serve: largest top_k a request may ask for.", min=1)
    #: Deepest ``/v1/graph`` neighbourhood (hops from the entity).
    max_depth: int = setting(3, "Serve: deepest /v1/graph neighbourhood (hops).", min=1)
    #: Most nodes one ``/v1/graph`` answer may hold.
    max_nodes: int = setting(300, "Serve: most nodes in one /v1/graph answer.", min=1)
    #: Seconds a retrieve/ask call may take before it gets 504 (the agent stops at its next step).
    request_timeout: float = setting(60.0, "Serve: seconds a retrieve/ask call may take (504 after).", positive=True)
    #: Method calls running or queued at once; more get 503 at once (with Retry-After).
    max_concurrency: int = setting(4, "Serve: method calls at once; more get 503.", min=1)
    #: Threads running method calls (at most ``max_concurrency`` are ever busy).
    workers: int = setting(2, "Serve: threads running method calls.", min=1)
    #: Comma-separated origins allowed by CORS; empty = CORS off (same-origin only).
    cors_origins: str = setting("", "Serve: comma-separated CORS origins (empty: CORS off).")
    #: One JSON access-log line per request on stderr.
    access_log: bool = setting(True, "Serve: one JSON access-log line per request (--no-access-log: off).")
    #: ``gearag add``/``delete``/``compact`` commit a new manifest; the service looks for one this often.
    reload_seconds: float = setting(2.0, "Serve: seconds between looks for an update of the index (gearag add/"
                                         "delete/compact of a directory, export --update of a Lance location), "
                                         "which is then served; 0: never.", min=0)
    #: A method's first call loads what it reads (at 1M passages GEAR's first question took 3.5 s, the next 0.2–0.5 s).
    warm_methods: str = setting("bm25,syncge,gear", "Serve: comma-separated methods run once, with their defaults, "
                                                    "on a fixed question whenever an index is opened (at start and "
                                                    "after each update, before it is served), so that no request "
                                                    "pays their first-call loads ('': none).")
    #: How a Lance index is opened (its options are ``--lance-*``; an index directory takes none).
    lance: LanceSearchConfig = field(default_factory=LanceSearchConfig)
    #: Required on every endpoint but /health, the page and the API docs when set; read from $GEARAG_API_KEY.
    api_key: str | None = None
    #: The operator's method options (``gearag serve --engine openai --llm-model M --word-lists F ...``): every
    #: option a request may not set (:func:`gearag.options.check_request`), applied to every method that takes
    #: it. Requests set question-time options only.
    method_options: Mapping[str, Any] = field(default_factory=dict)
    #: Seconds a client may take to send a request's headers, and then its body; slower ones are disconnected.
    header_timeout: float = setting(10.0, "Serve: seconds a client may take to send its request headers, and "
                                          "then its body, before it is disconnected.", positive=True)

    def __post_init__(self) -> None:
        if self.api_key is not None and not self.api_key.strip():
            object.__setattr__(self, "api_key", None)
        if self.port > 65535:
            raise ConfigError(f"--port must be at most 65535, got {self.port}")
        from gearag.registry import REGISTRY

        known = REGISTRY.names("method")
        for name in self.warm:
            if name not in known:
                raise ConfigError(f"--warm-methods: unknown method {name!r} (choose from {', '.join(known)})")

    @classmethod
    def from_env(cls, method_options: Mapping[str, Any] | None = None, **options: object) -> ServerSettings:
        """Settings from CLI options plus the API key from :data:`API_KEY_ENV`; ``method_options`` are the
        operator's method options (checked here, before the index is opened)."""
        from dataclasses import replace

        from gearag.options import build_config
        from gearag.server.requests import check_operator_options

        settings = build_config(cls, options, what="gearag serve")
        given = dict(method_options or {})
        check_operator_options(given)
        return replace(settings, api_key=os.environ.get(API_KEY_ENV) or None, method_options=given)

    @property
    def warm(self) -> list[str]:
        """The methods to warm (:attr:`warm_methods` as a list)."""
        return [m.strip() for m in self.warm_methods.split(",") if m.strip()]

    @property
    def cors(self) -> list[str]:
        return [o.strip() for o in self.cors_origins.split(",") if o.strip()]

    def check_exposure(self) -> None:
        """Refuse to listen beyond this machine without an API key."""
        if self.api_key is None and not is_loopback(self.host):
            raise ConfigError(
                f"refusing to serve on {self.host} without an API key: set {API_KEY_ENV}, or bind 127.0.0.1"
            )


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; every other name or address counts as exposed."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
