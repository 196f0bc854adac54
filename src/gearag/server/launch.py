"""``gearag serve``: open the index and run the app under uvicorn (SIGTERM drains in-flight requests); an update
of the index directory is opened again (:mod:`gearag.server.live`)."""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path

from gearag.errors import ConfigError
from gearag.server.settings import API_KEY_ENV, ServerSettings


def serve(index_dir: str | Path, settings: ServerSettings) -> None:
    """Serve ``index_dir`` until interrupted; user errors raise GearagError (one line, exit 2)."""
    from gearag.store.backend import check_lance_settings

    settings.check_exposure()
    check_lance_settings(index_dir, settings.lance)
    check_port(settings.host, settings.port)  # before the index is opened (seconds at a million passages)
    try:
        import uvicorn

        from gearag.server.app import create_app
        from gearag.server.protocol import protocol_class
    except ImportError as exc:  # pragma: no cover - fastapi and uvicorn are core dependencies
        raise ConfigError(f"gearag serve needs fastapi and uvicorn ({exc}); reinstall gearag") from None
    from gearag.api import Gearag

    gearag = Gearag.open(index_dir, lance=settings.lance)
    app = create_app(gearag, settings, announce=lambda message: print(f"gearag: {message}", file=sys.stderr,
                                                                      flush=True))
    counts = gearag.index.manifest.get("counts", {})
    del gearag  # only the app holds it: once an update is served, the old index (and its read lease) can go
    key = "API key required" if settings.api_key else f"no API key (set {API_KEY_ENV} to require one)"
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    print(f"gearag: serving {index_dir} ({counts.get('passages', '?')} passages) on http://{host}:{settings.port}/"
          f" — {key}; API docs at /docs", file=sys.stderr, flush=True)
    # uvicorn handles SIGTERM itself (graceful drain), then re-raises it; make that re-raise a clean exit 0.
    signal.signal(signal.SIGTERM, _stopped)
    uvicorn.run(
        app, host=settings.host, port=settings.port, log_level="warning", access_log=False,
        http=protocol_class(settings.header_timeout),  # a client slower than that with its headers is cut off
        # After SIGTERM/Ctrl-C: stop accepting, let in-flight requests finish, but not forever.
        timeout_graceful_shutdown=int(settings.request_timeout) + 5,
    )


def check_port(host: str, port: int) -> None:
    """A one-line ConfigError when ``host:port`` cannot be listened on (in use, not an address of this
    machine), instead of uvicorn's error after the banner. Port 0 (any free port) is not checked."""
    if port == 0:
        return
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host}: not an address to listen on ({exc.strerror})") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no conflict
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(f"--port {port}: cannot listen on {host}:{port} ({exc.strerror}); stop what "
                              "listens there or choose another --port") from None


def _stopped(signum: int, frame: object) -> None:
    """uvicorn's re-raised SIGTERM after its drain: exit 0. The interpreter then waits for its threads; a
    further SIGTERM (a supervisor's second one) ends the process at once, instead of raising SystemExit
    wherever the wait is and printing a traceback."""
    signal.signal(signal.SIGTERM, _exit_now)
    print("gearag: stopped", file=sys.stderr, flush=True)
    sys.exit(0)


def _exit_now(signum: int, frame: object) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
