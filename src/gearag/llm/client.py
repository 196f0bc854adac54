"""The OpenAI-compatible chat-completions client: :class:`LLMClient`.

Any server that speaks ``POST {base_url}/chat/completions`` works: OpenAI,
Azure-style gateways, vLLM, Ollama, llama.cpp's ``llama-server``, LiteLLM...
The client adds what long runs need:

* a SQLite response cache (:mod:`gearag.llm.cache`): a rerun sends nothing;
* bounds on every request, the same for every role (extraction, reader,
  agent): a deadline for connecting and reading the whole reply
  (``timeout``; a trickling server is cut off), a reply-size cap
  (``max_reply_bytes``; the body is streamed and abandoned past it) and a
  time budget over all attempts (``retry_budget``);
* retries with exponential backoff and jitter on 408/409/425/429/5xx,
  timeouts and dropped connections, honouring ``Retry-After`` (and
  ``retry-after-ms``); a 200 whose body is not a completion is retried once;
  refused connections, other 4xx and oversized replies are not retried.
  Giving up raises an :class:`~gearag.errors.LLMError` naming the endpoint
  and the reason;
* a concurrency limit shared by all threads (sync) or tasks (async);
* usage accounting in a :class:`~gearag.llm.usage.UsageLedger`.

("Engine" in gearag means a bundle of agent roles, :class:`gearag.engine.Engine`;
this is the HTTP client those roles talk through.)
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import random
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Self, cast

import httpx

from gearag import deadline as call_deadline
from gearag.errors import LLMError, LLMTimeoutError
from gearag.llm.base import (
    Completion,
    Messages,
    as_messages,
    estimate_tokens,
    ordered_map,
    pair_question_ids,
    prompt_text,
)
from gearag.llm.cache import CachedReply, ResponseCache, cache_key
from gearag.llm.config import LLMConfig
from gearag.llm.usage import Usage, UsageLedger
from gearag.version import __version__

log = logging.getLogger("gearag.llm")


#: HTTP statuses worth retrying: timeouts, conflicts, rate limits and server errors.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})

class LLMClient:
    """An :class:`LLM` over any OpenAI-compatible chat-completions endpoint (httpx).

    ``cache`` defaults to a :class:`ResponseCache` at ``config.cache_path``
    (pass ``cache=None`` explicitly, or set ``config.cache_path=None``, for
    none). ``transport``/``async_transport`` let tests inject httpx
    transports. Per call, ``cache=False`` bypasses the cache; every other
    keyword (``stop``, ``top_p``, ``response_format``, ``max_tokens``...) goes
    into the request body and into the cache key.
    """

    _DEFAULT = object()

    def __init__(
        self,
        config: LLMConfig,
        *,
        ledger: UsageLedger | None = None,
        cache: ResponseCache | object | None = _DEFAULT,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = config
        self.model = config.model
        self.concurrency = config.concurrency
        self.endpoint = config.endpoint
        self.ledger = ledger if ledger is not None else UsageLedger.from_env()
        self.cache: ResponseCache | None
        if cache is LLMClient._DEFAULT:
            self.cache = ResponseCache(config.cache_path) if config.cache_path is not None else None
        else:
            self.cache = cast("ResponseCache | None", cache)
        if config.gguf is not None and transport is None:
            from gearag.llm.local import LlamaTransport  # llama.cpp in this process (the ``local`` engine)

            transport = LlamaTransport(config.gguf, context=config.gguf_context)
            async_transport = transport
        self._transport = transport
        self._async_transport = async_transport
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._astate: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient, asyncio.Semaphore] | None = None
        self._rng = random.Random()

    # -- identity ------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """What, besides the prompt, determines replies: model and sampling settings."""
        return f"{self.model}|t={self.config.temperature}|max={self.config.max_tokens}"

    def __repr__(self) -> str:
        return f"LLMClient({self.config.describe()})"

    # -- request building ----------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "User-Agent": f"gearag/{__version__}"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        headers.update(self.config.extra_headers)
        return headers

    def _prepare(self, messages: Messages, params: dict[str, Any],
                 role: str = "") -> tuple[dict[str, Any], str | None, bool]:
        use_cache = bool(params.pop("cache", True)) and self.cache is not None
        msgs = as_messages(messages)
        body: dict[str, Any] = {"model": self.model, "messages": msgs, "temperature": self.config.temperature}
        if self.config.max_tokens is not None:
            body["max_tokens"] = self.config.max_tokens
        body.update(params)
        # The operator's per-role bound replaces the role's table bound; max_tokens caps both (gearag.llm.bounds).
        if role in self.config.role_max_tokens:
            body["max_tokens"] = self.config.role_max_tokens[role]
        if self.config.max_tokens is not None:
            body["max_tokens"] = min(int(body["max_tokens"]), self.config.max_tokens)
        body.pop("stream", None)  # replies are read whole
        extra = {k: v for k, v in body.items() if k not in ("model", "messages")}
        key = cache_key(self.endpoint, self.model, msgs, extra) if use_cache else None
        return body, key, use_cache

    def _from_cache(self, key: str | None, role: str, question_id: str | None) -> Completion | None:
        if key is None or self.cache is None:
            return None
        hit = self.cache.get(key)
        if hit is None:
            return None
        self.ledger.record(role, hit.usage, model=hit.model, question_id=question_id, cached=True)
        return Completion(hit.text, hit.usage, cached=True, model=hit.model, finish_reason=hit.finish_reason)

    def _outcome(self, result: httpx.Response | httpx.TransportError, deadline: float) -> _Reply | _Failure:
        """A reply, or a failure to retry or report, from a response or a transport error."""
        if isinstance(result, httpx.TimeoutException) or (
                isinstance(result, httpx.TransportError) and time.monotonic() >= deadline):
            return _Failure.timeout(result, self.config.timeout)
        if isinstance(result, httpx.TransportError):
            return _Failure.transport(result)
        return _interpret(result, self.model)

    def _request_timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.config.timeout)

    def _retry_delay(
        self, failure: _Failure, attempt: int, role: str, question_id: str | None, started: float, bad_bodies: int,
        timeouts: int = 0,
    ) -> float:
        """Seconds to wait before retrying ``failure``; raises LLMError when it must not be retried.

        A call that timed out twice at temperature 0 is not sent a third time: the same prompt, decoded greedily,
        asks for the same long reply (and a single-slot server may still be busy with the last one).
        """
        if failure.status == 200 and bad_bodies > 1:
            failure = replace(failure, retryable=False, what=failure.what + " (twice)")
        if failure.timed_out and timeouts > 1 and self.config.temperature == 0:
            failure = replace(failure, retryable=False,
                              what=failure.what + " (twice, at temperature 0: the same prompt would time out again)")
        if not failure.retryable or attempt >= self.config.max_retries:
            raise self._give_up(failure, attempt + 1, role, question_id)
        delay = self._delay(attempt, failure.retry_after)
        spent = time.perf_counter() - started
        if spent + delay > self.config.retry_budget:
            failure = replace(failure, what=f"{failure.what}; retry budget of {self.config.retry_budget:g} s spent")
            raise self._give_up(failure, attempt + 1, role, question_id)
        log.warning("LLM %s: %s; retry %d/%d in %.2f s", role, failure.describe(), attempt + 1,
                    self.config.max_retries, delay)
        return delay

    def _finish(
        self, reply: _Reply, body: dict[str, Any], key: str | None, role: str, question_id: str | None,
        started: float, retries: int,
    ) -> Completion:
        usage = reply.usage
        if usage is None:
            usage = Usage(estimate_tokens(prompt_text(body["messages"])), estimate_tokens(reply.text), True)
        if key is not None and self.cache is not None:
            self.cache.put(key, CachedReply(reply.text, usage, reply.model, reply.finish_reason))
        latency = time.perf_counter() - started
        self.ledger.record(role, usage, model=reply.model, question_id=question_id, latency=latency, retries=retries)
        return Completion(reply.text, usage, cached=False, latency=latency, model=reply.model,
                          finish_reason=reply.finish_reason, retries=retries)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.config.retry_after_cap)
        ceiling = min(self.config.backoff_cap, self.config.backoff_base * (2**attempt))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def _give_up(self, failure: _Failure, attempts: int, role: str, question_id: str | None) -> LLMError:
        self.ledger.record_failure(role, model=self.model, question_id=question_id, retries=attempts - 1)
        tries = f"after {attempts} attempts" if attempts > 1 else "(not retried)"
        error = LLMTimeoutError if failure.timed_out else LLMError
        return error(f"LLM request to {self.endpoint} failed {tries}: {failure.describe()}{failure.hint(self)}")

    # -- sync ------------------------------------------------------------------

    def _sync_client(self) -> httpx.Client:
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = httpx.Client(
                        timeout=self._request_timeout(),
                        limits=httpx.Limits(max_connections=self.config.concurrency + 4,
                                            max_keepalive_connections=self.config.concurrency + 4),
                        transport=self._transport,
                        headers=self._headers(),
                    )
        return self._client

    def complete(
        self, messages: Messages, *, role: str, question_id: str | None = None, **params: Any
    ) -> Completion:
        body, key, _ = self._prepare(messages, params, role)
        cached = self._from_cache(key, role, question_id)
        if cached is not None:
            return cached
        client = self._sync_client()
        started = time.perf_counter()
        attempt = bad_bodies = timeouts = 0
        while True:
            call_deadline.check()  # a service request past its limit makes no further call
            with self._slots:
                outcome = self._attempt(client, body)
            if isinstance(outcome, _Reply):
                return self._finish(outcome, body, key, role, question_id, started, attempt)
            bad_bodies += outcome.status == 200
            timeouts += outcome.timed_out
            call_deadline.check()  # cut at the service request's deadline: that is the request's time-out
            time.sleep(min(self._retry_delay(outcome, attempt, role, question_id, started, bad_bodies, timeouts),
                           call_deadline.remaining()))
            attempt += 1

    def _attempt(self, client: httpx.Client, body: dict[str, Any]) -> _Reply | _Failure:
        """One request under the deadline (cut to what a service request has left): a watchdog shuts the socket
        down when it passes."""
        deadline = time.monotonic() + min(self.config.timeout, call_deadline.remaining())
        watchdog = _Watchdog(deadline)

        def trace(event: str, info: Mapping[str, Any]) -> None:
            if event == "connection.connect_tcp.complete":
                watchdog.arm(info.get("return_value"))

        try:
            with client.stream("POST", self.endpoint, json=body, extensions={"trace": trace}) as response:
                watchdog.arm(response.extensions.get("network_stream"))
                capped = _read_capped(response, response.iter_bytes(), self.config.max_reply_bytes, deadline)
                if isinstance(capped, _Failure):
                    return capped
                return self._outcome(capped, deadline)
        except httpx.TransportError as exc:
            return self._outcome(exc, deadline)
        finally:
            watchdog.cancel()

    def complete_many(
        self,
        batch: Sequence[Messages],
        *,
        role: str,
        question_ids: Sequence[str | None] | None = None,
        **params: Any,
    ) -> list[Completion]:
        jobs = pair_question_ids(batch, question_ids)
        return list(
            ordered_map(lambda job: self.complete(job[0], role=role, question_id=job[1], **params),
                        jobs, self.concurrency)
        )

    def close(self) -> None:
        """Close HTTP connections and the cache."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- async -----------------------------------------------------------------

    def _async_parts(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._astate is None or self._astate[0] is not loop:
            client = httpx.AsyncClient(
                timeout=self._request_timeout(),
                limits=httpx.Limits(max_connections=self.config.concurrency + 4,
                                    max_keepalive_connections=self.config.concurrency + 4),
                transport=self._async_transport,
                headers=self._headers(),
            )
            self._astate = (loop, client, asyncio.Semaphore(self.config.concurrency))
        return self._astate[1], self._astate[2]

    async def acomplete(
        self, messages: Messages, *, role: str, question_id: str | None = None, **params: Any
    ) -> Completion:
        body, key, _ = self._prepare(messages, params, role)
        cached = self._from_cache(key, role, question_id)
        if cached is not None:
            return cached
        client, slots = self._async_parts()
        started = time.perf_counter()
        attempt = bad_bodies = timeouts = 0
        while True:
            async with slots:
                outcome = await self._aattempt(client, body)
            if isinstance(outcome, _Reply):
                return self._finish(outcome, body, key, role, question_id, started, attempt)
            bad_bodies += outcome.status == 200
            timeouts += outcome.timed_out
            await asyncio.sleep(self._retry_delay(outcome, attempt, role, question_id, started, bad_bodies, timeouts))
            attempt += 1

    async def _aattempt(self, client: httpx.AsyncClient, body: dict[str, Any]) -> _Reply | _Failure:
        """One request under the deadline (``asyncio.timeout`` covers connect and the whole reply)."""
        deadline = time.monotonic() + self.config.timeout
        try:
            async with asyncio.timeout(self.config.timeout):
                async with client.stream("POST", self.endpoint, json=body) as response:
                    capped = await _aread_capped(response, self.config.max_reply_bytes, deadline)
        except TimeoutError as exc:
            return _Failure.timeout(exc, self.config.timeout)
        except httpx.TransportError as exc:
            return self._outcome(exc, deadline)
        if isinstance(capped, _Failure):
            return capped
        return self._outcome(capped, deadline)

    async def acomplete_many(
        self,
        batch: Sequence[Messages],
        *,
        role: str,
        question_ids: Sequence[str | None] | None = None,
        **params: Any,
    ) -> list[Completion]:
        """Async :meth:`complete_many`; the first failure cancels the rest."""
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(self.acomplete(m, role=role, question_id=q, **params))
                     for m, q in pair_question_ids(batch, question_ids)]
        return [t.result() for t in tasks]

    async def aclose(self) -> None:
        """Close the async client of the running loop (and everything :meth:`close` closes)."""
        if self._astate is not None:
            await self._astate[1].aclose()
            self._astate = None
        self.close()


# -- bounded reading --------------------------------------------------------------


class _Watchdog:
    """Shuts a request's socket down at its deadline, so a blocked read returns at once."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def arm(self, stream: Any) -> None:
        sock = stream.get_extra_info("socket") if stream is not None and hasattr(stream, "get_extra_info") else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(max(self.deadline - time.monotonic(), 0.0), _shutdown, (sock,))
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed: nothing left to interrupt
        sock.shutdown(socket.SHUT_RDWR)


def _too_big(length: int | None, cap: int) -> _Failure:
    size = f"{length:,} bytes" if length is not None else "more"
    return _Failure(False, f"reply too large ({size}; the limit is {cap:,} bytes, GEARAG_LLM_MAX_REPLY_BYTES)")


def _declared_length(response: httpx.Response) -> int | None:
    try:
        return int(response.headers.get("content-length", ""))
    except ValueError:
        return None


def _buffered(response: httpx.Response, data: bytes) -> httpx.Response:
    """The streamed ``response`` with its (already decoded) body in memory."""
    headers = [(k, v) for k, v in response.headers.multi_items()
               if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
    return httpx.Response(response.status_code, headers=headers, content=data, request=response.request,
                          extensions={k: v for k, v in response.extensions.items() if k == "reason_phrase"})


def _read_capped(
    response: httpx.Response, chunks: Iterator[bytes], cap: int, deadline: float,
) -> httpx.Response | _Failure:
    declared = _declared_length(response)
    if declared is not None and declared > cap:
        return _too_big(declared, cap)
    parts: list[bytes] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > cap:
            return _too_big(None, cap)
        parts.append(chunk)
        if time.monotonic() > deadline:
            raise httpx.ReadTimeout("deadline passed while reading the reply")
    return _buffered(response, b"".join(parts))


async def _aread_capped(response: httpx.Response, cap: int, deadline: float) -> httpx.Response | _Failure:
    declared = _declared_length(response)
    if declared is not None and declared > cap:
        return _too_big(declared, cap)
    parts: list[bytes] = []
    total = 0
    chunks: AsyncIterator[bytes] = response.aiter_bytes()
    async for chunk in chunks:
        total += len(chunk)
        if total > cap:
            return _too_big(None, cap)
        parts.append(chunk)
    return _buffered(response, b"".join(parts))


# -- reply interpretation -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Reply:
    text: str
    usage: Usage | None
    model: str
    finish_reason: str | None


@dataclass(frozen=True, slots=True)
class _Failure:
    retryable: bool
    what: str
    status: int | None = None
    retry_after: float | None = None
    timed_out: bool = False

    @staticmethod
    def timeout(exc: Exception, seconds: float) -> _Failure:
        return _Failure(True, f"timed out: no complete reply within the {seconds:g} s deadline "
                              f"({type(exc).__name__}; GEARAG_LLM_TIMEOUT)", timed_out=True)

    @staticmethod
    def transport(exc: Exception) -> _Failure:
        detail = str(exc) or type(exc).__name__
        # Nobody listening (or no such host): retrying in a few seconds will not change that.
        return _Failure(not isinstance(exc, httpx.ConnectError),
                        f"connection error ({type(exc).__name__}: {detail})")

    def describe(self) -> str:
        return self.what

    def hint(self, client: LLMClient) -> str:
        if self.status in (401, 403):
            return " — check the API key (OPENAI_API_KEY)"
        if self.status == 404:
            return (f" — check --llm-base-url (usually ends in /v1; requests go to {client.endpoint}) "
                    f"and that the server serves model {client.model!r}")
        if self.status is None and self.what.startswith("connection error"):
            return f" — is a server listening at {client.config.base_url}?"
        return ""


def _retry_after(response: httpx.Response) -> float | None:
    ms = response.headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        text = response.text.strip().replace("\n", " ")
        return text[:300]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err)[:300]
        return str(err)[:300]
    return str(data)[:300]


def _interpret(response: httpx.Response, model: str) -> _Reply | _Failure:
    status = response.status_code
    if status != 200:
        reason = response.reason_phrase or ""
        what = f"HTTP {status}{' ' + reason if reason else ''}"
        detail = _error_message(response)
        if detail:
            what += f": {detail}"
        retryable = status in RETRY_STATUSES or status >= 500
        return _Failure(retryable, what, status, _retry_after(response) if retryable else None)
    try:
        data = response.json()
    except ValueError:
        snippet = response.text[:120].replace("\n", " ")
        return _Failure(True, f"HTTP 200 with a body that is not JSON: {snippet!r}", 200)
    if not isinstance(data, dict):
        return _Failure(True, "HTTP 200 with an unexpected JSON body", 200)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        if "error" in data:
            return _Failure(True, f"HTTP 200 carrying an error: {_error_message(response)}", 200)
        return _Failure(True, "HTTP 200 without choices", 200)
    choice = choices[0]
    message = choice.get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    if content is None and isinstance(choice.get("text"), str):  # legacy completions shape
        content = choice["text"]
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    text = content if isinstance(content, str) else ""
    usage = None
    raw_usage = data.get("usage")
    if isinstance(raw_usage, dict):
        try:
            prompt = int(raw_usage.get("prompt_tokens") or 0)
            completion = int(raw_usage.get("completion_tokens") or 0)
            if prompt or completion:
                usage = Usage(prompt, completion)
        except (TypeError, ValueError):
            usage = None
    return _Reply(text, usage, str(data.get("model") or model), choice.get("finish_reason"))
