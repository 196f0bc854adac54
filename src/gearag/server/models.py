"""Request and response bodies of the ``/v1`` API (pydantic; shown on the OpenAPI page at ``/docs``).

Bounds that depend on :class:`~gearag.server.settings.ServerSettings` (question
length, ``top_k``) are checked in the routes, so one model serves every setting.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetrieveRequest(_Strict):
    """A question for one method. ``options`` are the method's options (``gearag retrieve --help`` lists them)."""

    question: str = Field(..., min_length=1, description="The question.", examples=["Who coached Seth Curry's team?"])
    method: str = Field("bm25", description="A method name: GET /v1/index lists them.")
    top_k: int = Field(10, ge=1, description="Passages to return (at most the server's max_top_k).")
    options: dict[str, Any] = Field(default_factory=dict, description="Method options, e.g. {\"beam_width\": 5}.")


class AskRequest(RetrieveRequest):
    """Like :class:`RetrieveRequest`, defaulting to the GEAR agent, which also answers."""

    method: str = Field("gear", description="A method name; gear (the agent) answers the question.")
    top_k: int = Field(5, ge=1, description="Passages to return (at most the server's max_top_k).")


class PassageOut(BaseModel):
    id: str
    title: str
    text: str
    score: float = Field(description="The method's score, or 1 / rank where the response's score_kind is \"rank\".")
    evidence: bool = Field(False, description="The answer rests on this passage (its evidence facts come from it).")


class RetrieveResponse(BaseModel):
    """The run-file row of the result (:func:`gearag.results.result_row`) plus the method."""

    question: str
    method: str
    passages: list[PassageOut]
    score_kind: str | None = Field(None, description="\"rank\": the method ranks without per-passage scores and "
                                                     "each score is 1 / rank; null: the method's own score.")
    answer: str | None = None
    answer_label: str | None = Field(None, description="How the answer was made (an LLM, or the offline engine).")
    evidence: list[str] = Field(default_factory=list, description="The evidence chain behind the answer.")
    trace: dict[str, Any] | None = Field(None, description="The method's typed trace (versioned, see gearag.trace).")
    graph: dict[str, Any] | None = Field(None, description="The final beams and evidence as nodes and edges.")
    seconds: float


class StreamEvent(BaseModel):
    """One NDJSON line of ``POST /v1/ask/stream``: a ``step`` as it finishes, then the ``result`` (or an ``error``)."""

    event: Literal["step", "result", "error"]
    step: dict[str, Any] | None = None
    graph: dict[str, Any] | None = None
    result: RetrieveResponse | None = None
    error: dict[str, str] | None = None


class MethodInfo(BaseModel):
    name: str
    help: str
    options: dict[str, dict[str, Any]] = Field(description="The options a request may set: name → {type, default, "
                                                           "help, max (the largest value a request may ask; null: "
                                                           "no bound)}.")


class ServedInfo(BaseModel):
    """How the service follows its index (:meth:`gearag.server.live.LiveGearag.status`)."""

    stamp: str | None = Field(description="the index served: its manifest's SHA-256, or its Lance meta version")
    opened_at: float = Field(description="when the index served was opened (Unix seconds)")
    looked_at: float | None = Field(description="the last look for an update (Unix seconds; null: none yet)")
    reload_seconds: float = Field(description="seconds between looks (0: the service keeps the index it opened)")
    reloads: int = Field(description="updates of the index served since the service started")
    failures: int = Field(description="looks since the last update served that found one that did not open")
    last_error: str | None = Field(description="why the last of those did not open")


class IndexInfo(BaseModel):
    """The index's manifest summary."""

    path: str = Field(description="The index's name (the last part of its location).")
    counts: dict[str, int]
    extractor: str | None
    embedder: str | None
    created: str | None
    format_version: int | None
    gearag_version: str | None
    methods: list[MethodInfo]
    served: ServedInfo


class Health(BaseModel):
    status: Literal["ok"]
    version: str


class PassageDetail(BaseModel):
    id: str
    title: str
    text: str
    row: int
    triples: list[list[str]] = Field(description="The triples extracted from this passage.")


class EntityHit(BaseModel):
    name: str
    degree: int = Field(description="Triples in which the entity is subject or object.")


class EntitySearch(BaseModel):
    query: str
    entities: list[EntityHit]


class GraphNode(BaseModel):
    id: str
    label: str
    kind: Literal["entity", "value", "passage"]
    passage_id: str | None = None
    focus: bool = Field(False, description="The entity asked about.")
    highlight: bool = Field(False, description="On the evidence chain / in the gist memory.")


class GraphEdge(BaseModel):
    id: str
    source: str
    target: str
    label: str
    kind: Literal["triple", "source"]
    highlight: bool = False


class GraphOut(BaseModel):
    """A bounded neighbourhood: entities and passages as nodes, triples as labelled edges."""

    entity: str
    depth: int
    truncated: bool = Field(description="True when max_nodes cut the neighbourhood short.")
    nodes: list[GraphNode]
    edges: list[GraphEdge]


class ErrorDetail(BaseModel):
    message: str
    type: str


class ErrorBody(BaseModel):
    """Every error: ``{"error": {"message", "type"}}``."""

    error: ErrorDetail


# ---------------------------------------------------------------- OpenAI chat completions (the subset gearag serves)
class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """OpenAI's chat-completions request; gearag answers the last user message (a follow-up with the earlier user
    messages before it: gearag.server.conversation). Unused fields are accepted."""

    model_config = ConfigDict(extra="allow")

    model: str = Field("gearag-gear", description="gearag-METHOD (e.g. gearag-gear, gearag-syncge) or METHOD.")
    messages: list[ChatMessage] = Field(..., min_length=1)
    stream: bool = False
    top_k: int | None = Field(None, ge=1, description="gearag extension: passages to retrieve and cite.")
