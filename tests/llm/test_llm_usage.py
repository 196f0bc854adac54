"""UsageLedger: per-role / per-question / per-model counts, cache hits, prices, JSON."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from gearag.errors import ConfigError
from gearag.llm.usage import Price, Stats, Usage, UsageLedger, load_prices


def test_paid_versus_footprint_tokens() -> None:
    ledger = UsageLedger()
    ledger.record("read", Usage(100, 20), model="m", question_id="q1", latency=0.5)
    ledger.record("read", Usage(100, 20), model="m", question_id="q1", cached=True)
    ledger.record("reason", Usage(50, 5), model="m", question_id="q2", latency=0.25, retries=2)
    total = ledger.total
    assert (total.calls, total.requests, total.cache_hits, total.retries) == (3, 2, 1, 2)
    assert (total.prompt_tokens, total.completion_tokens) == (250, 45)
    assert (total.paid_prompt_tokens, total.paid_completion_tokens) == (150, 25)
    assert total.latency == pytest.approx(0.75)
    assert ledger.snapshot(role="read").cache_hits == 1
    assert ledger.snapshot(question_id="q2").total_tokens == 55
    assert ledger.snapshot(role="reason", question_id="q2").retries == 2
    assert ledger.snapshot(role="nothing") == Stats()


def test_snapshot_differences_give_per_iteration_tokens() -> None:
    ledger = UsageLedger()
    ledger.record("read", Usage(10, 1), question_id="q")
    before = ledger.snapshot(question_id="q")
    ledger.record("reason", Usage(20, 2), question_id="q")
    ledger.record("rewrite", Usage(30, 3), question_id="q")
    spent = ledger.snapshot(question_id="q") - before
    assert (spent.calls, spent.total_tokens) == (2, 55)


def test_prices_with_prefix_match_and_unpriced_models() -> None:
    ledger = UsageLedger({"gpt-4o-mini": Price(0.15, 0.60), "gpt-4o": {"prompt": 2.5, "completion": 10}})
    ledger.record("read", Usage(1_000_000, 100_000), model="gpt-4o-mini-2024-07-18")
    ledger.record("read", Usage(1000, 0), model="gpt-4o")
    ledger.record("read", Usage(1000, 0), model="gpt-4o-mini", cached=True)  # cache hits cost nothing
    ledger.record("read", Usage(5, 5), model="llama")
    assert ledger.total.cost == pytest.approx(0.15 + 0.06 + 0.0025)
    assert ledger.unpriced_models == ["llama"]
    assert "no price for llama" in ledger.summary()


def test_price_files(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps({"m": {"prompt": 1, "completion": 2}}))
    (tmp_path / "p.toml").write_text('[m]\nprompt = 1.0\ncompletion = 2.0\n')
    assert load_prices(tmp_path / "p.json") == load_prices(tmp_path / "p.toml") == {"m": Price(1.0, 2.0)}
    (tmp_path / "bad.json").write_text(json.dumps({"m": {"prompt": 1}}))
    with pytest.raises(ConfigError):
        load_prices(tmp_path / "bad.json")


def test_failures_and_thread_safety() -> None:
    ledger = UsageLedger()

    def work() -> None:
        for _ in range(500):
            ledger.record("extract", Usage(3, 1), model="m")

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ledger.record_failure("extract", model="m", retries=3)
    total = ledger.total
    assert total.calls == 4000 and total.total_tokens == 16000 and total.failures == 1 and total.retries == 3


def test_json_roundtrip_and_merge(tmp_path: Path) -> None:
    a = UsageLedger()
    a.record("read", Usage(10, 2), model="m", question_id="q1")
    a.record("answer", Usage(5, 1), model="m", question_id="q1")
    data = json.loads(a.to_json(tmp_path / "usage.json"))
    assert json.loads((tmp_path / "usage.json").read_text()) == data
    assert data["questions"]["q1"]["roles"]["read"]["prompt_tokens"] == 10
    b = UsageLedger()
    b.record("read", Usage(1, 1), model="m", question_id="q2")
    b.merge(a)
    assert b.total.total_tokens == 20 and set(b.by_question()) == {"q1", "q2"}
    assert b.question_roles("q1")["answer"].calls == 1


def test_summary_mentions_roles_and_totals() -> None:
    ledger = UsageLedger()
    assert ledger.summary() == "LLM usage: no calls"
    ledger.record("read", Usage(1200, 30), model="m")
    ledger.record("reason", Usage(300, 10), model="m", cached=True)
    text = ledger.summary()
    assert "read" in text and "reason" in text and "total" in text and "1,200" in text


def test_usage_scope_counts_only_its_own_context_across_threads() -> None:
    import threading

    from gearag.llm.base import ordered_map
    from gearag.llm.usage import TokenMeter, Usage, UsageLedger, usage_scope

    ledger = UsageLedger()
    meter = TokenMeter(ledger)
    both_recorded = threading.Barrier(2, timeout=10)
    seen: dict[str, dict[str, dict[str, int]]] = {}

    def question(name: str, tokens: int) -> None:
        with usage_scope():
            before = meter.snapshot()
            # Two completions on worker threads (as a batch of LLM calls runs), then wait
            # until the other question has recorded its own before reading.
            list(ordered_map(lambda _: ledger.record("read", Usage(tokens, 1)), range(2), concurrency=2))
            both_recorded.wait()
            seen[name] = meter.since(before)

    threads = [threading.Thread(target=question, args=(n, t)) for n, t in (("a", 100), ("b", 7))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": {"read": {"prompt": 200, "completion": 2}}, "b": {"read": {"prompt": 14, "completion": 2}}}
    assert ledger.total.prompt_tokens == 214  # the ledger still counts everything
    with usage_scope() as outer:
        with usage_scope() as inner:
            ledger.record("answer", Usage(5, 5))
        assert inner.by_role()["answer"].prompt_tokens == outer.by_role()["answer"].prompt_tokens == 5
