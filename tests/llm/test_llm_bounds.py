"""Bounded LLM calls: deadline, reply-size cap, retry budget, no hopeless retries.

Against the scripted server on 127.0.0.1. Tests assert behaviour, not timing:
calls run in a thread joined with a generous safety timeout only so that a
regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from gearag.errors import ConfigError, LLMError
from gearag.llm import LLMClient, LLMConfig, LLMRoles
from gearag.model import Passage
from llm_server import Hang, Huge, Reply, ScriptedServer, Status, Trickle

SAFETY = 60.0


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv


def make_client(server: ScriptedServer, **overrides: Any) -> LLMClient:
    settings: dict[str, Any] = dict(model="m", base_url=server.base_url, api_key="k", timeout=2.0, max_retries=0,
                                    backoff_base=0.01, backoff_cap=0.05, cache_path=None)
    settings.update(overrides)
    return LLMClient(LLMConfig(**settings))


def call(fn: Callable[[], Any]) -> BaseException | Any:
    """Run ``fn`` in a thread; its result or exception (a hang fails the test after SAFETY seconds)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["value"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(SAFETY)
    assert not thread.is_alive(), "the LLM call did not return: no deadline"
    return box["value"]


def test_a_trickling_server_fails_at_the_deadline(server: ScriptedServer) -> None:
    server.push(Trickle(interval=0.1))  # ~250 bytes at 10 bytes/s: 25 s to finish
    with make_client(server) as llm:
        outcome = call(lambda: llm.complete("hi", role="read"))
    assert isinstance(outcome, LLMError), outcome
    assert "deadline" in str(outcome) and "2 s" in str(outcome)
    assert 0 < server.requests[0].sent < 250  # it was cut off mid-reply


def test_a_trickling_server_fails_at_the_deadline_async(server: ScriptedServer) -> None:
    server.push(Trickle(interval=0.1))

    async def go() -> Any:
        llm = make_client(server)
        try:
            return await llm.acomplete("hi", role="read")
        finally:
            await llm.aclose()

    outcome = call(lambda: asyncio.run(go()))
    assert isinstance(outcome, LLMError) and "deadline" in str(outcome), outcome


def test_deadline_applies_to_every_role(server: ScriptedServer) -> None:
    server.default = Trickle(interval=0.1)
    with make_client(server, timeout=1.0) as llm:
        roles = LLMRoles(llm)
        passages = [Passage("p", "Title", "Text.")]
        for run in (lambda: roles.read(passages, "Q?"), lambda: roles.answer(passages, "Q?"),
                    lambda: roles.reason([], "Q?")):
            outcome = call(run)
            assert isinstance(outcome, LLMError) and "deadline" in str(outcome), outcome


@pytest.mark.parametrize("declare", [True, False])
def test_a_huge_reply_is_rejected_without_reading_it(server: ScriptedServer, declare: bool) -> None:
    size = 64 << 20
    server.push(Huge(size, declare=declare))
    with make_client(server, max_reply_bytes=1 << 20, max_retries=3) as llm:
        outcome = call(lambda: llm.complete("hi", role="read"))
    assert isinstance(outcome, LLMError) and "reply too large" in str(outcome), outcome
    assert "(not retried)" in str(outcome) and len(server.requests) == 1
    assert server.requests[0].sent < size // 4


def test_the_retry_budget_bounds_a_hanging_server(server: ScriptedServer) -> None:
    server.default = Hang()  # sampled (temperature > 0): a retry may get a shorter reply, so time-outs are retried
    with make_client(server, timeout=0.5, max_retries=50, retry_budget=1.6, temperature=0.7) as llm:
        outcome = call(lambda: llm.complete("hi", role="read"))
    assert isinstance(outcome, LLMError) and "retry budget of 1.6 s spent" in str(outcome), outcome
    assert 2 <= len(server.requests) < 50


def test_a_call_at_temperature_zero_that_times_out_twice_is_not_sent_again(server: ScriptedServer) -> None:
    """Greedy decoding of the same prompt asks for the same too-long reply: one verbatim repeat, no more."""
    server.default = Hang()
    with make_client(server, timeout=0.3, max_retries=50, retry_budget=60) as llm:
        outcome = call(lambda: llm.complete("hi", role="read"))
    assert isinstance(outcome, LLMError) and "twice, at temperature 0" in str(outcome), outcome
    assert len(server.requests) == 2
    server.requests.clear()
    server.push(Hang(), Reply("ok"))  # one time-out, then a reply: the one repeat is allowed
    with make_client(server, timeout=0.3, max_retries=50, retry_budget=60) as llm:
        assert call(lambda: llm.complete("hi", role="read")).text == "ok"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_client_errors_other_than_408_409_429_are_not_retried(server: ScriptedServer, status: int) -> None:
    server.push(Status(status), Reply("never"))
    with make_client(server, max_retries=3) as llm, pytest.raises(LLMError, match="not retried"):
        llm.complete("hi", role="read")
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [408, 409, 429])
def test_retryable_client_errors_are_retried(server: ScriptedServer, status: int) -> None:
    server.push(Status(status), Reply("ok"))
    with make_client(server, max_retries=3) as llm:
        assert llm.complete("hi", role="read").text == "ok"


def test_bounds_come_from_the_environment() -> None:
    config = LLMConfig.from_env({"GEARAG_LLM_MODEL": "m", "GEARAG_LLM_BASE_URL": "http://127.0.0.1:1/v1",
                                 "GEARAG_LLM_TIMEOUT": "7.5", "GEARAG_LLM_RETRY_BUDGET": "30",
                                 "GEARAG_LLM_MAX_REPLY_BYTES": "2048"})
    assert (config.timeout, config.retry_budget, config.max_reply_bytes) == (7.5, 30.0, 2048)
    default = LLMConfig(model="m")
    assert default.timeout == 120.0 and default.max_reply_bytes == 8 << 20
    for bad in (dict(timeout=float("nan")), dict(timeout=float("inf")), dict(retry_budget=0), dict(max_reply_bytes=1)):
        with pytest.raises(ConfigError):
            LLMConfig(model="m", **bad)
