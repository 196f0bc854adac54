"""A real HTTP server on 127.0.0.1 that speaks OpenAI chat completions with scripted replies.

Tests start it on an ephemeral port and queue actions::

    with ScriptedServer() as server:
        server.push(Status(429, headers={"Retry-After": "1"}), Reply("Paris"))
        client = LLMClient(LLMConfig(model="m", base_url=server.base_url, ...))

Actions: :class:`Reply` (a valid completion, optionally slow or without
usage), :class:`Status` (an HTTP error such as 429 or 500, with headers),
:class:`Drop` (close the connection without answering), :class:`Hang`
(hold the request open until released), :class:`Raw` (any body, e.g. HTML or
broken JSON), :class:`Trickle` (a valid reply sent one byte at a time, slowly)
and :class:`Huge` (a body of any size, declared or streamed; the bytes the
server managed to send are recorded in ``Recorded.sent``). A ``responder(body) -> action | None`` decides per request;
otherwise queued actions are used in order, then ``default``.
Every request is recorded (:attr:`ScriptedServer.requests`), with whether a
complete reply was sent back (``answered``).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    delay: float = 0.0
    finish_reason: str = "stop"
    usage: bool = True
    model: str | None = None


@dataclass
class Status:
    code: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Drop:
    delay: float = 0.0


@dataclass
class Hang:
    """Hold the request until :meth:`ScriptedServer.release` (or stop), then close without answering."""


@dataclass
class Raw:
    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass
class Trickle:
    """A valid completion whose body is written ``chunk`` bytes every ``interval`` seconds."""

    text: str = "x" * 200
    interval: float = 0.2
    chunk: int = 1


@dataclass
class Huge:
    """A 200 reply of ``size`` bytes; ``declare`` sends its Content-Length, else it is streamed until close."""

    size: int
    declare: bool = True


Action = Reply | Status | Drop | Hang | Raw | Trickle | Huge


@dataclass
class Recorded:
    index: int
    path: str
    headers: dict[str, str]
    body: Any
    received: float
    action: str = ""
    answered: bool = False
    usage: dict[str, int] | None = None
    sent: int = 0

    @property
    def prompt(self) -> str:
        if not isinstance(self.body, dict):
            return ""
        return "\n".join(str(m.get("content", "")) for m in self.body.get("messages", []))


class ScriptedServer:
    def __init__(
        self,
        script: Iterable[Action] = (),
        *,
        responder: Callable[[Any], Action | None] | None = None,
        default: Action | None = None,
    ) -> None:
        self.script: deque[Action] = deque(script)
        self.responder = responder
        self.default = default if default is not None else Reply("OK")
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self._released = threading.Event()
        self._stopped = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control -------------------------------------------------------------

    def push(self, *actions: Action) -> None:
        with self.lock:
            self.script.extend(actions)

    def release(self) -> None:
        """Let every held (:class:`Hang`) request end without an answer."""
        self._released.set()

    def rearm(self) -> None:
        """Make future :class:`Hang` actions hold again after a :meth:`release`."""
        self._released = threading.Event()

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answered(self) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.answered]

    def start(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                server._handle(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._released.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling -------------------------------------------------------

    def _next_action(self, body: Any) -> Action:
        if self.responder is not None:
            action = self.responder(body)
            if action is not None:
                return action
        with self.lock:
            if self.script:
                return self.script.popleft()
        return self.default

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with self.lock:
            rec = Recorded(len(self.requests), handler.path, {k.lower(): v for k, v in handler.headers.items()},
                           body, time.monotonic())
            self.requests.append(rec)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if not handler.path.split("?")[0].endswith("/chat/completions"):
                self._send_json(handler, 404, {"error": {"message": f"no route {handler.path}"}})
                rec.action = "404"
                return
            action = self._next_action(body)
            rec.action = type(action).__name__
            self._perform(handler, action, rec, body)
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True
        finally:
            with self.lock:
                self.in_flight -= 1

    def _perform(self, handler: BaseHTTPRequestHandler, action: Action, rec: Recorded, body: Any) -> None:
        if isinstance(action, Reply):
            if action.delay:
                self._stopped.wait(action.delay)
            prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", [])) \
                if isinstance(body, dict) else 0
            usage = {
                "prompt_tokens": action.prompt_tokens if action.prompt_tokens is not None else 7 + prompt_chars // 5,
                "completion_tokens": action.completion_tokens if action.completion_tokens is not None
                else 1 + len(action.text) // 5,
            }
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            payload: dict[str, Any] = {
                "id": f"chatcmpl-{rec.index}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": action.model or (body.get("model") if isinstance(body, dict) else "?"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": action.text},
                             "finish_reason": action.finish_reason}],
            }
            if action.usage:
                payload["usage"] = usage
            self._send_json(handler, 200, payload)
            rec.usage = usage if action.usage else None
            rec.answered = True
        elif isinstance(action, Status):
            error = {"error": {"message": action.message, "type": "scripted", "code": action.code}}
            self._send_json(handler, action.code, error, action.headers)
        elif isinstance(action, Raw):
            self._send(handler, action.status, action.body, action.content_type)
        elif isinstance(action, Drop):
            if action.delay:
                self._stopped.wait(action.delay)
            handler.close_connection = True  # nothing written: the client sees a dropped connection
        elif isinstance(action, Hang):
            released = self._released
            while not released.wait(0.05) and not self._stopped.is_set():
                pass
            handler.close_connection = True
        elif isinstance(action, Trickle):
            payload = json.dumps({"id": f"chatcmpl-{rec.index}", "object": "chat.completion", "model": "m",
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": action.text},
                                               "finish_reason": "stop"}]}).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.flush()
            for start in range(0, len(payload), action.chunk):
                if self._stopped.wait(action.interval):
                    break
                handler.wfile.write(payload[start:start + action.chunk])
                handler.wfile.flush()
                rec.sent += action.chunk
            handler.close_connection = True
        elif isinstance(action, Huge):
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            if action.declare:
                handler.send_header("Content-Length", str(action.size))
            else:
                handler.send_header("Connection", "close")
            handler.end_headers()
            block = b'{"pad": "' + b"x" * (64 * 1024) + b'"}'
            try:
                while rec.sent < action.size and not self._stopped.is_set():
                    handler.wfile.write(block)
                    rec.sent += len(block)
            finally:
                handler.close_connection = True
        else:  # pragma: no cover
            raise TypeError(action)

    @staticmethod
    def _send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any,
                   headers: dict[str, str] | None = None) -> None:
        ScriptedServer._send(handler, status, json.dumps(payload).encode(), "application/json", headers)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()
