"""Token, request and cost accounting, per role, per question and per model.

Every completion an engine returns is recorded in a :class:`UsageLedger`.
Two token counts are kept apart:

* ``prompt_tokens`` / ``completion_tokens`` — what the work consumed, cache
  hits included (a cached reply keeps the usage of the request that produced
  it). This is the method's footprint, the number GEAR's Figure 4 plots, and
  it does not change between a cold and a warm run.
* ``paid_prompt_tokens`` / ``paid_completion_tokens`` — tokens of requests
  actually sent in this run; cost is computed from these.

Per-iteration counts (GEAR Figure 4) are differences of snapshots::

    before = ledger.snapshot(question_id=qid)
    ...  # one agent iteration
    spent = ledger.snapshot(question_id=qid) - before

Several questions may run at once (``gearag serve`` answers requests on
threads), so a method measures its own question's tokens inside a
:func:`usage_scope`: every completion recorded in that context (its thread,
the workers :func:`gearag.llm.base.ordered_map` starts for it, its asyncio
tasks) also counts in the scope, and :class:`TokenMeter` reads the scope
instead of the ledger's global counters.
"""

from __future__ import annotations

import json
import os
import threading
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Protocol

from gearag.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one completion. ``estimated`` when the server reported none (≈ 4 characters a token)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
        )


@dataclass(frozen=True, slots=True)
class Price:
    """Price of a model in currency units per million tokens."""

    prompt: float
    completion: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1_000_000


@dataclass(slots=True)
class Stats:
    """Counters for one slice of the work (a role, a question, a model or everything)."""

    #: Completions returned to callers: ``requests + cache_hits``.
    calls: int = 0
    #: HTTP requests answered successfully in this run (what was paid for).
    requests: int = 0
    #: Completions served from the response cache.
    cache_hits: int = 0
    #: Retried attempts (429, 5xx, timeouts, dropped connections).
    retries: int = 0
    #: Calls that failed for good (raised :class:`~gearag.errors.LLMError`).
    failures: int = 0
    #: Tokens of every completion, cache hits included.
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: Tokens of the requests sent in this run.
    paid_prompt_tokens: int = 0
    paid_completion_tokens: int = 0
    #: Calls whose usage the server did not report (estimated from text length).
    estimated: int = 0
    #: Seconds spent waiting for successful requests (summed; overlaps under concurrency).
    latency: float = 0.0
    #: Cost of the paid tokens under the ledger's price table (0 when unpriced).
    cost: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def paid_tokens(self) -> int:
        return self.paid_prompt_tokens + self.paid_completion_tokens

    def add(self, other: Stats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def copy(self) -> Stats:
        return Stats(**asdict(self))

    def __sub__(self, other: Stats) -> Stats:
        return Stats(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    def __add__(self, other: Stats) -> Stats:
        out = self.copy()
        out.add(other)
        return out

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["total_tokens"] = self.total_tokens
        out["latency"] = round(self.latency, 4)
        out["cost"] = round(self.cost, 6)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Stats:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class UsageLedger:
    """Thread-safe accumulator of :class:`Stats` per role, question and model."""

    def __init__(self, prices: Mapping[str, Price | Mapping[str, float]] | None = None) -> None:
        self.prices: dict[str, Price] = {name: _as_price(name, p) for name, p in (prices or {}).items()}
        self._lock = threading.Lock()
        self._total = Stats()
        self._roles: dict[str, Stats] = {}
        self._questions: dict[str, Stats] = {}
        self._question_roles: dict[tuple[str, str], Stats] = {}
        self._models: dict[str, Stats] = {}
        self._unpriced: set[str] = set()

    @classmethod
    def from_env(cls) -> UsageLedger:
        """A ledger with the price table named by ``GEARAG_LLM_PRICES`` (a JSON or TOML file), if set."""
        path = os.environ.get("GEARAG_LLM_PRICES")
        return cls(load_prices(path) if path else None)

    # -- recording ---------------------------------------------------------

    def price_for(self, model: str) -> Price | None:
        """Exact match, else the longest price-table name that prefixes ``model`` (dated snapshots)."""
        if model in self.prices:
            return self.prices[model]
        best = max((name for name in self.prices if model.startswith(name)), key=len, default=None)
        return self.prices[best] if best else None

    def record(
        self,
        role: str,
        usage: Usage,
        *,
        model: str = "",
        question_id: str | None = None,
        cached: bool = False,
        latency: float = 0.0,
        retries: int = 0,
    ) -> None:
        """Count one completion."""
        delta = Stats(calls=1, retries=retries, prompt_tokens=usage.prompt_tokens,
                      completion_tokens=usage.completion_tokens, estimated=int(usage.estimated))
        if cached:
            delta.cache_hits = 1
        else:
            delta.requests = 1
            delta.paid_prompt_tokens = usage.prompt_tokens
            delta.paid_completion_tokens = usage.completion_tokens
            delta.latency = latency
            price = self.price_for(model) if self.prices else None
            if price is not None:
                delta.cost = price.cost(usage.prompt_tokens, usage.completion_tokens)
            elif self.prices:
                self._unpriced.add(model)
        self._apply(role, question_id, model, delta)

    def record_failure(self, role: str, *, model: str = "", question_id: str | None = None, retries: int = 0) -> None:
        """Count a call that failed for good."""
        self._apply(role, question_id, model, Stats(failures=1, retries=retries))

    def _apply(self, role: str, question_id: str | None, model: str, delta: Stats) -> None:
        with self._lock:
            self._total.add(delta)
            self._roles.setdefault(role, Stats()).add(delta)
            self._models.setdefault(model or "?", Stats()).add(delta)
            if question_id is not None:
                qid = str(question_id)
                self._questions.setdefault(qid, Stats()).add(delta)
                self._question_roles.setdefault((qid, role), Stats()).add(delta)
        scope = _SCOPE.get()
        while scope is not None:
            scope.add(role, delta)
            scope = scope.parent

    def merge(self, other: UsageLedger) -> None:
        """Add another ledger's counts (e.g. from a worker process) into this one."""
        self.merge_dict(other.to_dict())

    def merge_dict(self, data: Mapping[str, Any]) -> None:
        """Add counts from :meth:`to_dict` output."""
        with self._lock:
            self._total.add(Stats.from_dict(data.get("total", {})))
            for role, st in data.get("roles", {}).items():
                self._roles.setdefault(role, Stats()).add(Stats.from_dict(st))
            for model, st in data.get("models", {}).items():
                self._models.setdefault(model, Stats()).add(Stats.from_dict(st))
            for qid, q in data.get("questions", {}).items():
                self._questions.setdefault(qid, Stats()).add(Stats.from_dict(q.get("total", {})))
                for role, st in q.get("roles", {}).items():
                    self._question_roles.setdefault((qid, role), Stats()).add(Stats.from_dict(st))

    def reset(self) -> None:
        with self._lock:
            self._total = Stats()
            self._roles.clear()
            self._questions.clear()
            self._question_roles.clear()
            self._models.clear()
            self._unpriced.clear()

    # -- reading -----------------------------------------------------------

    @property
    def total(self) -> Stats:
        """Everything recorded so far (a copy)."""
        with self._lock:
            return self._total.copy()

    def snapshot(self, *, role: str | None = None, question_id: str | None = None) -> Stats:
        """A copy of the counters for a role, a question, both, or everything; zeros if unseen."""
        with self._lock:
            if role is not None and question_id is not None:
                found = self._question_roles.get((str(question_id), role))
            elif role is not None:
                found = self._roles.get(role)
            elif question_id is not None:
                found = self._questions.get(str(question_id))
            else:
                found = self._total
            return found.copy() if found is not None else Stats()

    def by_role(self) -> dict[str, Stats]:
        with self._lock:
            return {k: v.copy() for k, v in sorted(self._roles.items())}

    def by_question(self) -> dict[str, Stats]:
        with self._lock:
            return {k: v.copy() for k, v in self._questions.items()}

    def by_model(self) -> dict[str, Stats]:
        with self._lock:
            return {k: v.copy() for k, v in sorted(self._models.items())}

    def question_roles(self, question_id: str) -> dict[str, Stats]:
        """Per-role counters of one question."""
        qid = str(question_id)
        with self._lock:
            return {role: st.copy() for (q, role), st in sorted(self._question_roles.items()) if q == qid}

    @property
    def unpriced_models(self) -> list[str]:
        """Models that made paid requests but have no entry in the price table."""
        with self._lock:
            return sorted(self._unpriced)

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain data (what :meth:`to_json` writes)."""
        with self._lock:
            questions: dict[str, Any] = {}
            for qid, st in self._questions.items():
                roles = {r: s.to_dict() for (q, r), s in sorted(self._question_roles.items()) if q == qid}
                questions[qid] = {"total": st.to_dict(), "roles": roles}
            return {
                "total": self._total.to_dict(),
                "roles": {k: v.to_dict() for k, v in sorted(self._roles.items())},
                "models": {k: v.to_dict() for k, v in sorted(self._models.items())},
                "questions": questions,
                "priced": bool(self.prices),
                "unpriced_models": sorted(self._unpriced),
            }

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 2) -> str:
        """The ledger as JSON; also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def summary(self) -> str:
        """A short human-readable report: one line per role and a total."""
        roles = self.by_role()
        total = self.total
        if total.calls == 0 and total.failures == 0:
            return "LLM usage: no calls"
        priced = bool(self.prices)
        header = f"{'role':<14}{'calls':>7}{'requests':>10}{'cached':>8}{'prompt tok':>12}{'compl. tok':>12}"
        header += f"{'paid tok':>11}" + (f"{'cost':>11}" if priced else "")
        lines = ["LLM usage", header]

        def row(name: str, st: Stats) -> str:
            text = (f"{name:<14}{st.calls:>7}{st.requests:>10}{st.cache_hits:>8}{st.prompt_tokens:>12,}"
                    f"{st.completion_tokens:>12,}{st.paid_tokens:>11,}")
            return text + (f"{st.cost:>11.4f}" if priced else "")

        lines.extend(row(name, st) for name, st in roles.items())
        if len(roles) > 1:
            lines.append(row("total", total))
        notes = []
        if total.retries:
            notes.append(f"{total.retries} retries")
        if total.failures:
            notes.append(f"{total.failures} failed calls")
        if total.estimated:
            notes.append(f"{total.estimated} calls without server-reported usage (tokens estimated)")
        if self.unpriced_models:
            notes.append("no price for " + ", ".join(self.unpriced_models))
        if notes:
            lines.append("(" + "; ".join(notes) + ")")
        return "\n".join(lines)


def _as_price(name: str, value: Price | Mapping[str, float]) -> Price:
    if isinstance(value, Price):
        return value
    try:
        return Price(prompt=float(value["prompt"]), completion=float(value["completion"]))
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"price for {name!r} must look like {{\"prompt\": <per 1M tokens>, \"completion\": <per 1M tokens>}}"
        ) from None


def load_prices(path: str | Path) -> dict[str, Price]:
    """Read a price table: ``{"model": {"prompt": 0.15, "completion": 0.60}}`` per million tokens (JSON or TOML)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode()) if path.suffix == ".toml" else json.loads(raw)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read LLM price table {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"LLM price table {path} must map model names to prices")
    return {name: _as_price(name, value) for name, value in data.items()}


class Metered(Protocol):
    """A trace that reports a question's LLM use (every method trace of :mod:`gearag.trace` with an LLM)."""

    tokens_by_role: dict[str, dict[str, int]] | None
    fallbacks: dict[str, dict[str, int]] | None


class UsageScope:
    """Per-role usage of the completions recorded inside one :func:`usage_scope` block, and how many of the
    replies the offline engine had to replay (:mod:`gearag.llm.fallback`)."""

    def __init__(self, parent: UsageScope | None) -> None:
        self.parent = parent
        self._lock = threading.Lock()
        self._roles: dict[str, Stats] = {}
        self._fallbacks: dict[str, list[int]] = {}

    def add(self, role: str, delta: Stats) -> None:
        with self._lock:
            self._roles.setdefault(role, Stats()).add(delta)

    def add_reply(self, role: str, offline: bool) -> None:
        with self._lock:
            counts = self._fallbacks.setdefault(role, [0, 0])
            counts[0] += 1
            counts[1] += int(offline)

    def by_role(self) -> dict[str, Stats]:
        with self._lock:
            return {k: v.copy() for k, v in sorted(self._roles.items())}

    def fallbacks(self) -> dict[str, dict[str, int]]:
        """``{role: {"replies", "offline"}}``: replies used in this scope and how many the offline engine played."""
        with self._lock:
            return {role: {"replies": n, "offline": m} for role, (n, m) in sorted(self._fallbacks.items())}

    def tokens(self) -> dict[str, dict[str, int]]:
        """``{role: {"prompt", "completion"}}`` used in this scope (roles that used none left out)."""
        return {role: {"prompt": st.prompt_tokens, "completion": st.completion_tokens}
                for role, st in self.by_role().items() if st.prompt_tokens or st.completion_tokens}

    def stamp(self, trace: Metered) -> None:
        """Write this scope's tokens by role and fallback counts into a method's trace: every method that
        runs a question inside one scope reports its LLM use through this one call."""
        trace.tokens_by_role = self.tokens()
        trace.fallbacks = self.fallbacks()


_SCOPE: ContextVar[UsageScope | None] = ContextVar("gearag_usage_scope", default=None)


def record_reply(role: str, offline: bool) -> None:
    """Count one reply of ``role`` in the enclosing usage scopes, and whether the offline engine played it."""
    scope = _SCOPE.get()
    while scope is not None:
        scope.add_reply(role, offline)
        scope = scope.parent


@contextmanager
def usage_scope() -> Iterator[UsageScope]:
    """Count the completions recorded in this context (and nested scopes') apart from concurrent work."""
    scope = UsageScope(_SCOPE.get())
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


class TokenMeter:
    """Tokens by role used between two points of a question's run.

    Inside a :func:`usage_scope` only that scope's completions count (other
    questions running at the same time never leak in); outside one, the
    ledger's totals.
    """

    def __init__(self, ledger: UsageLedger | None) -> None:
        self.ledger = ledger

    def snapshot(self) -> dict[str, tuple[int, int]]:
        if self.ledger is None:
            return {}
        scope = _SCOPE.get()
        stats = scope.by_role() if scope is not None else self.ledger.by_role()
        return {r: (st.prompt_tokens, st.completion_tokens) for r, st in stats.items()}

    def since(self, before: dict[str, tuple[int, int]]) -> dict[str, dict[str, int]]:
        """``{role: {"prompt", "completion"}}`` used since ``before`` (roles that used none left out)."""
        out = {}
        for role, (p, c) in self.snapshot().items():
            p0, c0 = before.get(role, (0, 0))
            if p - p0 or c - c0:
                out[role] = {"prompt": p - p0, "completion": c - c0}
        return out

    @staticmethod
    def totals(used: dict[str, dict[str, int]]) -> tuple[int, int]:
        return sum(u["prompt"] for u in used.values()), sum(u["completion"] for u in used.values())
