"""Settings of the OpenAI-compatible LLM engine, with documented defaults.

Every field can be set in code; :meth:`LLMConfig.from_env` also reads the
environment (the standard OpenAI variables plus a few of gearag's own), and
keyword overrides (for example CLI options) win over the environment.

==============================  =====================================================
variable                        field
==============================  =====================================================
``GEARAG_LLM_BASE_URL``         ``base_url`` (wins over ``OPENAI_BASE_URL``)
``OPENAI_BASE_URL``             ``base_url``
``OPENAI_API_KEY``              ``api_key`` (``GEARAG_LLM_API_KEY`` wins if set)
``GEARAG_LLM_MODEL``            ``model``
``GEARAG_LLM_CONCURRENCY``      ``concurrency``
``GEARAG_LLM_TIMEOUT``          ``timeout`` (seconds, the deadline of one request)
``GEARAG_LLM_MAX_RETRIES``      ``max_retries``
``GEARAG_LLM_RETRY_BUDGET``     ``retry_budget`` (seconds over all attempts)
``GEARAG_LLM_MAX_REPLY_BYTES``  ``max_reply_bytes``
``GEARAG_LLM_HEADERS``          ``extra_headers`` as a JSON object (gateways)
``GEARAG_LLM_MAX_TOKENS``       ``role_max_tokens`` as ``read=400,answer=16``
``GEARAG_LLM_GGUF``             ``gguf`` (a GGUF file run in process: the ``local`` engine)
``GEARAG_LLM_CACHE``            ``0``/``off`` disables the response cache
``GEARAG_CACHE_DIR``            directory of the cache file ``llm.sqlite``
==============================  =====================================================
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gearag.errors import ConfigError, LLMError

#: The public OpenAI endpoint, used when no base URL is configured.
OPENAI_BASE_URL = "https://api.openai.com/v1"

_FALSE = {"0", "false", "no", "off", "none", ""}


def default_cache_path() -> Path:
    """``$GEARAG_CACHE_DIR/llm.sqlite``, else ``$XDG_CACHE_HOME/gearag/llm.sqlite``,
    else ``~/.cache/gearag/llm.sqlite``."""
    root = os.environ.get("GEARAG_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "llm.sqlite"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "gearag" / "llm.sqlite"


@dataclass(frozen=True)
class LLMConfig:
    """How to reach a chat-completions endpoint and how hard to try."""

    #: Model name as the server knows it (``gpt-4o-mini``, ``Qwen/Qwen2.5-7B-Instruct``,
    #: ``llama3.1:8b``...). Required: there is no default model.
    model: str
    #: Root of the OpenAI-compatible API, including ``/v1``; requests go to
    #: ``{base_url}/chat/completions``. A query string (an Azure-style
    #: ``?api-version=``) is kept.
    base_url: str = OPENAI_BASE_URL
    #: Bearer token. ``None`` sends no ``Authorization`` header (local servers).
    api_key: str | None = None
    #: Sampling temperature; 0 as in GEAR §6.2, for reproducible runs.
    temperature: float = 0.0
    #: Upper bound on generated tokens of every reply, over the per-role bounds of
    #: :mod:`gearag.llm.bounds`; ``None``: those bounds alone.
    max_tokens: int | None = None
    #: Per-role reply bounds replacing :data:`gearag.llm.bounds.BOUNDS`' (``{"read": 400}``).
    role_max_tokens: Mapping[str, int] = field(default_factory=dict)
    #: A GGUF model file run in this process by llama.cpp (the ``local`` engine, extra ``local``)
    #: instead of an endpoint; ``base_url`` and ``api_key`` are then not used.
    gguf: Path | None = None
    #: Context window (tokens) llama.cpp gives the GGUF model: prompt and reply together.
    gguf_context: int = 8192
    #: Deadline of one HTTP request in seconds: connecting, sending and reading
    #: the whole reply. A server that trickles its reply is cut off at the
    #: deadline, not only one that stops sending.
    timeout: float = 120.0
    #: Retries after the first attempt on 408/409/425/429/5xx, timeouts and
    #: dropped connections; a 200 whose body is not a completion is retried once.
    #: Refused connections, other 4xx and oversized replies are not retried.
    max_retries: int = 6
    #: Seconds all attempts of one call may take together, waits included;
    #: no retry starts that would end its wait beyond it.
    retry_budget: float = 600.0
    #: Largest reply body accepted (bytes, after decompression); a larger one
    #: is abandoned as soon as it is seen, without reading the rest.
    max_reply_bytes: int = 8 << 20
    #: Exponential backoff: the n-th retry waits about ``backoff_base * 2**n``
    #: seconds (half fixed, half random jitter), at most ``backoff_cap``.
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    #: Longest wait accepted from a server's ``Retry-After`` header.
    retry_after_cap: float = 300.0
    #: Requests in flight at once in batch work (``complete_many``, extraction).
    concurrency: int = 8
    #: SQLite response cache; ``None`` disables caching.
    cache_path: Path | None = field(default_factory=default_cache_path)
    #: Extra HTTP headers on every request (e.g. ``{"api-key": ...}`` for an
    #: Azure-style gateway, or an organisation header).
    extra_headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.model or not str(self.model).strip():
            raise LLMError(_NO_MODEL)
        if not self.base_url or not urlsplit(self.base_url).scheme.startswith("http"):
            raise ConfigError(f"LLM base URL must start with http:// or https://, got {self.base_url!r}")
        checks = [
            (self.timeout > 0 and math.isfinite(self.timeout), "timeout must be a finite number > 0"),
            (self.retry_budget > 0 and math.isfinite(self.retry_budget), "retry_budget must be a finite number > 0"),
            (self.max_reply_bytes >= 1024, "max_reply_bytes must be >= 1024"),
            (self.max_retries >= 0, "max_retries must be >= 0"),
            (self.backoff_base >= 0, "backoff_base must be >= 0"),
            (self.backoff_cap >= 0, "backoff_cap must be >= 0"),
            (self.retry_after_cap >= 0, "retry_after_cap must be >= 0"),
            (self.concurrency >= 1, "concurrency must be >= 1"),
            (self.max_tokens is None or self.max_tokens >= 1, "max_tokens must be >= 1"),
            (self.gguf_context >= 512, "gguf_context must be >= 512"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(f"LLM config: {message}")
        if self.cache_path is not None and not isinstance(self.cache_path, Path):
            object.__setattr__(self, "cache_path", Path(self.cache_path).expanduser())
        from gearag.llm.bounds import check_overrides

        object.__setattr__(self, "role_max_tokens", check_overrides(self.role_max_tokens))
        if self.gguf is not None and not isinstance(self.gguf, Path):
            object.__setattr__(self, "gguf", Path(self.gguf).expanduser())

    @property
    def endpoint(self) -> str:
        """Full chat-completions URL (query string of ``base_url`` preserved).

        With ``gguf`` no request leaves the process: the URL only names the model file (its name and size)
        in cache keys and messages.
        """
        if self.gguf is not None:
            return f"gguf://{self.gguf.name}/{_size(self.gguf)}/chat/completions"
        parts = urlsplit(self.base_url)
        path = parts.path.rstrip("/")
        if not path.endswith("/chat/completions"):
            path += "/chat/completions"
        return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))

    def with_overrides(self, **overrides: Any) -> LLMConfig:
        """A copy with the given fields changed.

        ``None`` values are ignored, ``cache_path=False`` disables the cache.
        """
        return replace(self, **_clean(overrides))

    def describe(self) -> str:
        """One line for logs and error messages (never shows the key)."""
        cache = str(self.cache_path) if self.cache_path else "off"
        where = f"gguf={self.gguf}" if self.gguf is not None else f"endpoint={self.endpoint}"
        return f"model={self.model} {where} concurrency={self.concurrency} cache={cache}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
        """Build a config from environment variables, then ``overrides``.

        Overrides whose value is ``None`` are ignored, so CLI options that
        were not given can be passed straight through. Pass ``cache_path=False``
        to disable the cache. Raises :class:`LLMError` when no model is
        configured, and when the public OpenAI endpoint is used without a key.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        base_url = env.get("GEARAG_LLM_BASE_URL") or env.get("OPENAI_BASE_URL")
        if base_url:
            values["base_url"] = base_url
        api_key = env.get("GEARAG_LLM_API_KEY") or env.get("OPENAI_API_KEY")
        if api_key:
            values["api_key"] = api_key
        if env.get("GEARAG_LLM_MODEL"):
            values["model"] = env["GEARAG_LLM_MODEL"]
        if env.get("GEARAG_LLM_GGUF"):
            values["gguf"] = Path(env["GEARAG_LLM_GGUF"]).expanduser()
        if env.get("GEARAG_LLM_MAX_TOKENS"):
            from gearag.llm.bounds import parse_overrides

            values["role_max_tokens"] = parse_overrides(env["GEARAG_LLM_MAX_TOKENS"], "GEARAG_LLM_MAX_TOKENS")
        for var, name, kind in (
            ("GEARAG_LLM_CONCURRENCY", "concurrency", int),
            ("GEARAG_LLM_TIMEOUT", "timeout", float),
            ("GEARAG_LLM_MAX_RETRIES", "max_retries", int),
            ("GEARAG_LLM_RETRY_BUDGET", "retry_budget", float),
            ("GEARAG_LLM_MAX_REPLY_BYTES", "max_reply_bytes", int),
        ):
            raw = env.get(var)
            if raw:
                try:
                    values[name] = kind(raw)
                except ValueError:
                    raise ConfigError(f"{var} must be a number, got {raw!r}") from None
        headers = env.get("GEARAG_LLM_HEADERS")
        if headers:
            try:
                parsed = json.loads(headers)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict) or not all(isinstance(v, str) for v in parsed.values()):
                raise ConfigError('GEARAG_LLM_HEADERS must be a JSON object of strings, e.g. {"api-key": "..."}')
            values["extra_headers"] = parsed
        cache_flag = env.get("GEARAG_LLM_CACHE")
        if cache_flag is not None and cache_flag.strip().lower() in _FALSE:
            values["cache_path"] = None
        elif "GEARAG_CACHE_DIR" in env and env.get("GEARAG_CACHE_DIR"):
            values["cache_path"] = Path(env["GEARAG_CACHE_DIR"]).expanduser() / "llm.sqlite"

        overrides = _clean(overrides)
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(f"unknown LLM setting(s): {', '.join(sorted(unknown))}")
        values.update(overrides)
        if values.get("gguf") is not None:
            gguf = Path(values["gguf"]).expanduser()
            check_gguf(gguf)
            values["gguf"] = gguf
            values.setdefault("model", gguf.stem)
            values["concurrency"] = 1  # one model in this process: calls take turns
        if not values.get("model"):
            raise LLMError(_NO_MODEL)
        config = cls(**values)
        host = urlsplit(config.base_url).hostname or ""
        if config.gguf is None and host.endswith("api.openai.com") and not config.api_key:
            raise LLMError(
                f"no API key for {config.base_url}: set OPENAI_API_KEY, or point --llm-base-url "
                "(OPENAI_BASE_URL) at a local OpenAI-compatible server"
            )
        return config


_NO_MODEL = (
    "no LLM model configured: pass --llm-model or set GEARAG_LLM_MODEL "
    "(for example gpt-4o-mini, or the name your vLLM/Ollama/llama.cpp server serves)"
)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def check_gguf(path: Path) -> None:
    """A one-line ConfigError unless ``path`` is a readable GGUF file (its first bytes say ``GGUF``)."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except IsADirectoryError:
        raise ConfigError(f"--llm-gguf {path}: is a directory, not a GGUF model file") from None
    except OSError as exc:
        raise ConfigError(f"--llm-gguf {path}: cannot read it ({exc.strerror or exc})") from None
    if magic != b"GGUF":
        raise ConfigError(f"--llm-gguf {path}: not a GGUF model file (llama.cpp's format)")


def _clean(overrides: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in overrides.items() if v is not None}
    if out.get("cache_path") is False:
        out["cache_path"] = None  # ``cache_path=False`` means "no cache"
    elif isinstance(out.get("cache_path"), str):
        out["cache_path"] = Path(out["cache_path"]).expanduser()
    return out
