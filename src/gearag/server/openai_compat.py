"""``POST /v1/chat/completions``: an index as an OpenAI-compatible "model".

The model name picks the method (``gearag-gear``, ``gearag-syncge``, or a bare
method name; default ``gearag-gear``). The last user message is the question,
with the earlier user messages before it when it is a follow-up ("Where was
he born?"; :mod:`gearag.server.conversation` gives the rule). The reply is the
method's answer (when it writes one) followed by the cited passages as
``[n] Title``. ``stream: true`` sends server-sent events in OpenAI's chunk
format ending with ``data: [DONE]``. Extra fields of the request
(temperature, ...) are accepted and ignored; the response carries a
``gearag`` extension (passage ids and scores, the trace, the question retrieved).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from gearag.registry import REGISTRY
from gearag.results import Result
from gearag.server.conversation import message_text, retrieval_question
from gearag.server.errors import APIError, client_error, error_body
from gearag.server.models import ChatRequest
from gearag.server.routes import ERRORS, app_state, check_question, check_top_k
from gearag.server.settings import ServerSettings

router = APIRouter()

PREFIX = "gearag-"
DEFAULT_TOP_K = 5
#: Characters per streamed content chunk.
CHUNK = 48


def method_of(model: str) -> str:
    """``gearag-gear`` → ``gear``; a ConfigError (→ 400) names the models otherwise."""
    name = model[len(PREFIX):] if model.startswith(PREFIX) else model
    if name not in REGISTRY.names("method"):
        choices = ", ".join(PREFIX + n for n in REGISTRY.names("method"))
        raise APIError(400, f"unknown model {model!r} (choose from {choices})")
    return name


def user_messages(body: ChatRequest) -> list[str]:
    """The texts of the user messages, in order (a 422 if there are none); other roles are left out."""
    texts = [message_text(m.content) for m in body.messages if m.role == "user"]
    if not texts:
        raise APIError(422, "messages: no user message to answer")
    return texts


def chat_question(body: ChatRequest, settings: ServerSettings) -> str:
    """The question a chat request retrieves with: its last user message, checked as every question is, with
    the earlier user messages before it when it is a follow-up (:func:`gearag.server.conversation.retrieval_question`,
    within ``max_question_chars``)."""
    texts = user_messages(body)
    check_question(texts[-1], settings)  # the message itself: empty or too long is the client's 422
    return check_question(retrieval_question(texts, settings.max_question_chars), settings)


def compose(result: Result, gearag: Any, method: str) -> tuple[str, list[dict[str, Any]]]:
    """The reply text (answer, then ``[n] Title`` citations) and the cited passages.

    The passages the answer rests on are first and say so (``evidence: true``; "— evidence" in the text); a
    citation's ``score`` is the method's, or ``1 / rank`` where ``score_kind`` says ``rank``.
    """
    cited = []
    evidence = set(result.evidence)
    for n, hit in enumerate(result.passages, 1):
        p = gearag.index.passages[hit.idx]
        entry = {"n": n, "id": p.id, "title": p.title, "score": round(hit.score, 6)}
        if result.score_kind is not None:
            entry["score_kind"] = result.score_kind
        if hit.idx in evidence:
            entry["evidence"] = True
        cited.append(entry)
    lines = []
    if result.answer is not None:
        lines.append(result.answer)
        label = result.answer_label
        if label and label != "answer":
            lines.append(f"({label})")
    else:
        lines.append(f"gearag-{method} retrieves passages and writes no answer; the best passages are:")
    lines.append("")
    lines.append("Sources:")
    lines.extend(f"[{c['n']}] {c['title']}" + (" — evidence" if c.get("evidence") else "") for c in cited)
    return "\n".join(lines), cited


def _usage(trace: dict[str, Any] | None) -> dict[str, int]:
    """OpenAI's ``usage``: the tokens the engine's model spent on this answer (0 offline)."""
    used = (trace or {}).get("tokens_by_role") or {}
    prompt = sum(int(u.get("prompt", 0)) for u in used.values())
    completion = sum(int(u.get("completion", 0)) for u in used.values())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _completion(model: str, content: str, cited: list[dict[str, Any]], trace: dict[str, Any] | None,
                question: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24], "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": _usage(trace),
        "gearag": {"citations": cited, "trace": trace, "question": question},
    }


def _chunk(cid: str, model: str, created: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()


@router.post("/v1/chat/completions", responses=ERRORS, tags=["openai"], response_model=None)
async def chat_completions(request: Request, body: ChatRequest) -> dict[str, Any] | StreamingResponse:
    """OpenAI chat completions: answers the last user message with gearag and cites the passages; a follow-up
    ("Where was he born?") is retrieved with the earlier user messages before it (``gearag.question``)."""
    gearag, runner, settings = app_state(request)
    method = method_of(body.model)
    question = chat_question(body, settings)
    top_k = check_top_k(body.top_k or DEFAULT_TOP_K, settings)
    config = runner.config(method, {})
    call = runner.submit(gearag, method, config, question, top_k)
    if not body.stream:
        result = await runner.result(call)
        content, cited = compose(result, gearag, method)
        return _completion(body.model, content, cited, result.trace.to_dict() if result.trace else None, question)

    cid, created = "chatcmpl-" + uuid.uuid4().hex[:24], int(time.time())

    async def events() -> AsyncIterator[bytes]:
        yield _chunk(cid, body.model, created, {"role": "assistant", "content": ""})
        try:
            result = await runner.result(call)
            content, _ = compose(result, gearag, method)
            for start in range(0, len(content), CHUNK):
                yield _chunk(cid, body.model, created, {"content": content[start:start + CHUNK]})
            yield _chunk(cid, body.model, created, {}, "stop")
        except Exception as exc:  # the stream has started: the error is its last event, with no upstream details
            _, message, type_ = client_error(exc, settings.request_timeout)
            yield f"data: {json.dumps(error_body(message, type_))}\n\n".encode()
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})


@router.get("/v1/models", tags=["openai"])
def models() -> dict[str, Any]:
    """OpenAI's model list: one model per gearag method."""
    return {"object": "list", "data": [{"id": PREFIX + n, "object": "model", "created": 0, "owned_by": "gearag"}
                                       for n in REGISTRY.names("method")]}
