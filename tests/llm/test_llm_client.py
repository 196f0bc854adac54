"""The OpenAI-compatible LLM client against a real scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from pathlib import Path

import pytest

from gearag.errors import LLMError
from gearag.llm import LLMClient, LLMConfig, LLMRoles, UsageLedger
from gearag.model import Passage
from llm_server import Drop, Raw, Reply, ScriptedServer, Status


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv


def make_client(server: ScriptedServer, cache: Path | None = None, **overrides) -> LLMClient:
    settings = dict(model="test-model", base_url=server.base_url, api_key="sk-test", timeout=5.0, max_retries=3,
                    backoff_base=0.01, backoff_cap=0.05, concurrency=4, cache_path=cache)
    settings.update(overrides)
    return LLMClient(LLMConfig(**settings))


def test_valid_reply_text_usage_and_request_shape(server: ScriptedServer) -> None:
    server.push(Reply("Paris", prompt_tokens=12, completion_tokens=3))
    with make_client(server) as llm:
        out = llm.complete("Capital of France?", role="answer", question_id="q1", stop=["\n"])
    assert out.text == "Paris" and not out.cached and out.retries == 0
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (12, 3)
    assert out.latency > 0 and out.model == "test-model" and out.finish_reason == "stop"
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.body["model"] == "test-model"
    assert req.body["temperature"] == 0.0
    assert req.body["stop"] == ["\n"]
    assert req.body["messages"] == [{"role": "user", "content": "Capital of France?"}]
    assert "cache" not in req.body and "stream" not in req.body


def test_retries_5xx_then_succeeds(server: ScriptedServer) -> None:
    server.push(Status(500), Status(502), Status(503), Reply("ok"))
    with make_client(server) as llm:
        out = llm.complete("hi", role="read")
    assert out.text == "ok" and out.retries == 3
    assert [r.action for r in server.requests] == ["Status", "Status", "Status", "Reply"]
    assert llm.ledger.total.retries == 3 and llm.ledger.total.requests == 1


def test_429_retry_after_is_honoured(server: ScriptedServer) -> None:
    server.push(Status(429, "rate limited", headers={"Retry-After": "1"}), Reply("after the wait"))
    with make_client(server) as llm:
        out = llm.complete("hi", role="read")
    assert out.text == "after the wait"
    first, second = server.requests
    assert second.received - first.received >= 1.0  # the server's Retry-After, not our 10 ms backoff


def test_retry_after_ms_header(server: ScriptedServer) -> None:
    server.push(Status(429, headers={"retry-after-ms": "300"}), Reply("ok"))
    with make_client(server) as llm:
        assert llm.complete("hi", role="read").text == "ok"
    assert server.requests[1].received - server.requests[0].received >= 0.3


def test_dropped_connection_is_retried(server: ScriptedServer) -> None:
    server.push(Drop(), Drop(), Reply("survived"))
    with make_client(server) as llm:
        out = llm.complete("hi", role="read")
    assert out.text == "survived" and out.retries == 2
    assert len(server.requests) == 3


def test_slow_reply_times_out_and_is_retried(server: ScriptedServer) -> None:
    server.push(Reply("too late", delay=3.0), Reply("in time"))
    with make_client(server, timeout=0.3) as llm:
        out = llm.complete("hi", role="read")
    assert out.text == "in time" and out.retries == 1
    assert len(server.requests) == 2


def test_an_unreadable_200_body_is_retried_once(server: ScriptedServer) -> None:
    server.push(Raw(b"<html><body>502 Bad Gateway</body></html>", content_type="text/html"), Reply("finally"))
    with make_client(server) as llm:
        assert llm.complete("hi", role="read").text == "finally"
    assert len(server.requests) == 2


def test_unreadable_200_bodies_are_retried_only_once(server: ScriptedServer) -> None:
    server.push(Raw(b'{"choices": [], "model": "x"}'), Raw(b'{"error": {"message": "overloaded"}}'), Reply("never"))
    with make_client(server, max_retries=5) as llm, pytest.raises(LLMError) as err:
        llm.complete("hi", role="read")
    assert "after 2 attempts" in str(err.value) and "HTTP 200" in str(err.value)
    assert len(server.requests) == 2


def test_exhausted_retries_raise_a_clear_error_after_backing_off(server: ScriptedServer) -> None:
    server.default = Status(500, "upstream exploded")
    with make_client(server, max_retries=2, backoff_base=0.1, backoff_cap=10.0) as llm, pytest.raises(LLMError) as err:
        llm.complete("hi", role="reason", question_id="q9")
    message = str(err.value)
    assert f"{server.base_url}/chat/completions" in message
    assert "HTTP 500" in message and "upstream exploded" in message and "after 3 attempts" in message
    assert len(server.requests) == 3
    gaps = [b.received - a.received for a, b in itertools.pairwise(server.requests)]
    # Exponential backoff with jitter: the n-th wait is at least half of base * 2**n.
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1
    assert llm.ledger.total.failures == 1
    assert llm.ledger.snapshot(question_id="q9").failures == 1


def test_backoff_grows_is_jittered_and_capped() -> None:
    client = LLMClient(LLMConfig(model="m", base_url="http://127.0.0.1:9/v1", backoff_base=1.0,
                                    backoff_cap=8.0, cache_path=None))  # no request is sent
    for attempt in range(6):
        ceiling = min(8.0, 2.0**attempt)
        delays = {client._delay(attempt, None) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jitter
    assert client._delay(0, 42.0) == 42.0  # Retry-After wins
    assert client._delay(0, 10_000.0) == client.config.retry_after_cap


@pytest.mark.parametrize(("status", "hint"), [(401, "OPENAI_API_KEY"), (404, "--llm-base-url"), (400, "")])
def test_client_errors_are_not_retried(server: ScriptedServer, status: int, hint: str) -> None:
    server.push(Status(status, "nope"))
    with make_client(server) as llm, pytest.raises(LLMError) as err:
        llm.complete("hi", role="read")
    assert f"HTTP {status}" in str(err.value) and "(not retried)" in str(err.value) and hint in str(err.value)
    assert len(server.requests) == 1


def test_nobody_listening_names_the_endpoint() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # A refused connection is not retried: with these settings a retry would wait 30 s or more.
    config = LLMConfig(model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=5, backoff_base=30.0,
                       cache_path=None)
    with LLMClient(config) as llm, pytest.raises(LLMError) as err:
        llm.complete("hi", role="read")
    message = str(err.value)
    assert f"127.0.0.1:{port}/v1/chat/completions" in message and "connection error" in message
    assert "(not retried)" in message and "is a server listening" in message


def test_rerun_hits_the_cache_with_zero_requests(server: ScriptedServer, tmp_path: Path) -> None:
    server.responder = lambda body: Reply("echo: " + body["messages"][-1]["content"])
    prompts = [f"question {i}" for i in range(6)]
    cache = tmp_path / "cache" / "llm.sqlite"
    with make_client(server, cache) as first:
        cold = first.complete_many(prompts, role="read", question_ids=[f"q{i}" for i in range(6)])
    assert len(server.requests) == 6 and not any(c.cached for c in cold)

    with make_client(server, cache) as second:  # a fresh client, as in a rerun
        warm = second.complete_many(prompts, role="read", question_ids=[f"q{i}" for i in range(6)])
    assert len(server.requests) == 6  # zero new requests
    assert [c.text for c in warm] == [c.text for c in cold] and all(c.cached for c in warm)
    assert [c.usage for c in warm] == [c.usage for c in cold]
    stats = second.ledger.total
    assert (stats.requests, stats.cache_hits, stats.paid_tokens) == (0, 6, 0)
    assert stats.total_tokens == first.ledger.total.total_tokens  # the method's footprint is unchanged

    with make_client(server, cache, temperature=0.7) as other:  # parameters are part of the key
        other.complete(prompts[0], role="read")
    with make_client(server, cache, model="other-model") as other:
        other.complete(prompts[0], role="read")
    with make_client(server, cache) as same:
        same.complete(prompts[0], role="read", cache=False)  # explicit bypass
    assert len(server.requests) == 9


def test_no_cache_means_every_call_is_sent(server: ScriptedServer) -> None:
    with make_client(server, None) as llm:
        llm.complete("same", role="read")
        llm.complete("same", role="read")
    assert len(server.requests) == 2


def test_concurrency_limit_holds(server: ScriptedServer) -> None:
    server.default = Reply("slowish", delay=0.15)
    with make_client(server, concurrency=3) as llm:
        out = llm.complete_many([f"p{i}" for i in range(12)], role="extract")
    assert len(out) == 12 and len(server.requests) == 12
    assert 2 <= server.max_in_flight <= 3


def test_complete_many_keeps_input_order(server: ScriptedServer) -> None:
    delays = {f"p{i}": (0.12 if i % 3 == 0 else 0.0) for i in range(10)}
    server.responder = lambda body: Reply(body["messages"][0]["content"].upper(),
                                          delay=delays[body["messages"][0]["content"]])
    with make_client(server, concurrency=4) as llm:
        out = llm.complete_many(list(delays), role="extract")
    assert [c.text for c in out] == [p.upper() for p in delays]


def test_async_batch_with_limit_and_retries(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(Status(503))
    server.default = Reply("async", delay=0.05)
    llm = make_client(server, tmp_path / "a.sqlite", concurrency=2)

    async def main() -> list:
        try:
            return await llm.acomplete_many([f"p{i}" for i in range(6)], role="read",
                                            question_ids=[f"q{i}" for i in range(6)])
        finally:
            await llm.aclose()

    out = asyncio.run(main())
    assert [c.text for c in out] == ["async"] * 6
    assert len(server.requests) == 7  # one 503 retried
    assert server.max_in_flight <= 2
    assert llm.ledger.total.retries == 1

    async def again() -> list:
        try:
            return [await llm.acomplete(f"p{i}", role="read") for i in range(6)]
        finally:
            await llm.aclose()

    assert all(c.cached for c in asyncio.run(again()))
    assert len(server.requests) == 7


def test_async_exhausted_retries_raise(server: ScriptedServer) -> None:
    server.default = Status(500, "still broken")
    llm = make_client(server, max_retries=1)

    async def main() -> None:
        try:
            await llm.acomplete("x", role="read")
        finally:
            await llm.aclose()

    with pytest.raises(LLMError, match="HTTP 500"):
        asyncio.run(main())
    assert len(server.requests) == 2


def test_missing_usage_is_estimated(server: ScriptedServer) -> None:
    server.push(Reply("some words here", usage=False))
    with make_client(server) as llm:
        out = llm.complete("a prompt of a few words", role="read")
    assert out.usage.estimated and out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0
    assert llm.ledger.total.estimated == 1


def test_azure_style_base_url_keeps_query(server: ScriptedServer) -> None:
    base = f"http://127.0.0.1:{server.port}/openai/deployments/gpt4o?api-version=2024-06-01"
    config = LLMConfig(model="gpt4o", base_url=base, cache_path=None, extra_headers={"api-key": "azure-key"})
    with LLMClient(config) as llm:
        llm.complete("hi", role="read")
    (req,) = server.requests
    assert req.path == "/openai/deployments/gpt4o/chat/completions?api-version=2024-06-01"
    assert req.headers["api-key"] == "azure-key" and "authorization" not in req.headers


def test_token_totals_add_up_per_role_and_question(server: ScriptedServer, tmp_path: Path) -> None:
    """Ledger totals equal the usage the server reported, and every breakdown sums to the total."""
    server.responder = lambda body: None
    server.push(
        Reply('("A", "r", "B")'), Reply("Answerable: No\nWhy: missing C"), Reply("Next Question: What is C?"),
        Reply('("B", "s", "C")'), Reply("Answerable: Yes\nAnswer: C"), Reply("C"),
        Reply('("X", "r", "Y")'), Reply("Answerable: Yes\nAnswer: Y"), Reply("Y"),
    )
    ledger = UsageLedger(prices={"test-model": {"prompt": 0.15, "completion": 0.60}})
    config = make_client(server).config.with_overrides(cache_path=tmp_path / "t.sqlite")
    llm = LLMClient(config, ledger=ledger)
    roles = LLMRoles(llm)
    docs = [Passage("1", "Doc", "A r B. B s C.")]
    for qid, question in (("q1", "What does A lead to?"), ("q2", "What does X lead to?")):
        memory = roles.read(docs, question, question_id=qid)
        reasoning = roles.reason(memory, question, question_id=qid)
        if not reasoning.answerable:
            roles.rewrite(memory, question, reasoning.text, question_id=qid)
            memory += roles.read(docs, question, memory, question_id=qid)
            assert roles.reason(memory, question, question_id=qid).answer == "C"
        roles.answer(docs, question, question_id=qid)
    llm.close()

    sent = [r.usage for r in server.requests if r.answered]
    assert len(sent) == 9
    total = ledger.total
    assert total.requests == 9 and total.calls == 9
    assert total.prompt_tokens == sum(u["prompt_tokens"] for u in sent)
    assert total.completion_tokens == sum(u["completion_tokens"] for u in sent)
    assert total.paid_tokens == total.total_tokens
    for breakdown in (ledger.by_role(), ledger.by_question(), ledger.by_model()):
        assert sum(s.total_tokens for s in breakdown.values()) == total.total_tokens
        assert sum(s.calls for s in breakdown.values()) == total.calls
    assert ledger.by_role()["read"].calls == 3 and ledger.by_role()["reason"].calls == 3
    q1 = ledger.question_roles("q1")
    assert sum(s.total_tokens for s in q1.values()) == ledger.snapshot(question_id="q1").total_tokens
    expected_cost = sum(u["prompt_tokens"] * 0.15 + u["completion_tokens"] * 0.60 for u in sent) / 1e6
    assert total.cost == pytest.approx(expected_cost)
    data = json.loads(ledger.to_json())
    assert data["total"]["total_tokens"] == total.total_tokens
    assert set(data["questions"]) == {"q1", "q2"}
    assert "read" in ledger.summary() and "cost" in ledger.summary()
