"""How long each role's reply may be: one table of ``max_tokens`` (and stop sequences) per LLM role.

Why: a server given no ``max_tokens`` lets a model write until its context
is full. A small model asked for a few triples can write thousands of
tokens (one gist call of SmolLM2-135M wrote 6,445 tokens in 200 s, past the
request deadline), and a retry asks the same thing again. Every
role's output has a known shape, so each call asks for at most what that
shape needs:

=================  ==========  ==============================================
role               max_tokens  what the reply holds
=================  ==========  ==============================================
``read``           256         a few triples (reader, Eq. 1; gist, Eq. 4)
``reason``         192         "Answerable: …" and a short paragraph (Eq. 6)
``rewrite``        64          one question (Eq. 7)
``answer``         32          a few words (≤ 6 asked; K.3, SiReRAG §5)
``ircot``          96          one sentence of reasoning (IRCoT)
``ner``            96          the question's names (HippoRAG)
``filter``         192         at most four facts (HippoRAG 2)
``extract``        128 + 0.5/c  triples of a passage (K.1), by its length
``entities``       64 + 0.15/c  names of a passage (SiReRAG Fig. 7)
``propositions``   128 + 0.6/c  facts and triplets of a passage (Fig. 8)
``coref``          64 + 0.35/c  the paragraph rewritten (about its length)
``summarize``      96 + 0.1/c   a summary of a cluster (≤ ``cap``)
=================  ==========  ==============================================

``+ x/c``: plus ``x`` tokens per character of the call's input text (the
passage or cluster; ≈ 4 characters a token), up to the role's ``cap``
(2,048 unless the table's :class:`Bound` says otherwise). A reply cut at
the bound is parsed for what it holds (the parsers close what a cut reply
left open, :mod:`gearag.llm.lenient`) and counted as truncated in the parse
statistics. Override per role with ``--llm-max-tokens read=400,answer=16``
(CLI), ``GEARAG_LLM_MAX_TOKENS`` (environment) or
``LLMConfig.role_max_tokens`` (code); an override is a fixed number of
tokens for that role. ``LLMConfig.max_tokens``, when set, caps every role.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gearag.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Bound:
    """The reply bound of one role: ``base`` tokens plus ``per_char`` per input character, at most ``cap``."""

    base: int
    per_char: float = 0.0
    cap: int = 2048
    #: Stop sequences where the reply's format allows them (never one a valid reply may begin with).
    stop: tuple[str, ...] = ()

    def tokens(self, input_chars: int) -> int:
        return min(self.cap, self.base + round(self.per_char * max(input_chars, 0)))


#: The table above; the one place these defaults are written.
BOUNDS: dict[str, Bound] = {
    "read": Bound(256),
    "reason": Bound(192),
    "rewrite": Bound(64),
    "answer": Bound(32, stop=("\n\n", "\nQuestion:")),
    "ircot": Bound(96, stop=("\n\n",)),
    "ner": Bound(96),
    "filter": Bound(192),
    "extract": Bound(128, 0.5),
    "entities": Bound(64, 0.15, cap=512),
    "propositions": Bound(128, 0.6),
    "coref": Bound(64, 0.35),
    "summarize": Bound(96, 0.1, cap=512),
}
#: A role missing from the table (a user's own prompt set may add one).
DEFAULT_BOUND = Bound(256)
#: The values of a role's prompt that are its input text (what the scaled bounds scale with).
INPUT_KEYS = ("passage", "text", "paragraph", "documents", "passages")


def parse_overrides(text: str | None, what: str = "--llm-max-tokens") -> dict[str, int]:
    """``"read=400,answer=16"`` as ``{"read": 400, "answer": 16}``; a one-line ConfigError naming ``what``."""
    out: dict[str, int] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        role, sep, value = item.partition("=")
        role = role.strip()
        if not sep or role not in BOUNDS:
            raise ConfigError(f"{what}: {item!r} is not ROLE=TOKENS with ROLE one of {', '.join(BOUNDS)}")
        try:
            tokens = int(value)
        except ValueError:
            tokens = 0
        if tokens < 1:
            raise ConfigError(f"{what}: {role}={value.strip()!r} must be a whole number of tokens >= 1")
        out[role] = tokens
    return out


def bounds_fingerprint(llm: object, roles: Sequence[str]) -> str:
    """The reply-bound overrides of ``roles`` an LLM client carries (``LLMConfig.role_max_tokens``), for a
    checkpoint key: ``""`` when none is set, so keys made before bounds could be overridden stay as they were;
    else ``"|max-tokens:extract=77"``. A table bound is not part of a key (the table has a version: the code)."""
    overrides = getattr(getattr(llm, "config", None), "role_max_tokens", None) or {}
    set_here = [f"{role}={overrides[role]}" for role in roles if role in overrides]
    return f"|max-tokens:{','.join(set_here)}" if set_here else ""


def check_overrides(overrides: Mapping[str, int], what: str = "role_max_tokens") -> dict[str, int]:
    """``overrides`` checked (known roles, whole numbers >= 1), as a plain dict."""
    return parse_overrides(",".join(f"{k}={v}" for k, v in overrides.items()), what)


def input_chars(values: Mapping[str, Any]) -> int:
    """Characters of a prompt's input text (the values named in :data:`INPUT_KEYS`)."""
    return sum(len(v) for k, v in values.items() if k in INPUT_KEYS and isinstance(v, str))


def reply_params(role: str, chars: int, overrides: Mapping[str, int] | None = None,
                 cap: int | None = None) -> dict[str, Any]:
    """The request parameters bounding one call of ``role`` on ``chars`` characters of input."""
    bound = BOUNDS.get(role, DEFAULT_BOUND)
    tokens = (overrides or {}).get(role) or bound.tokens(chars)
    if cap is not None:
        tokens = min(tokens, cap)
    params: dict[str, Any] = {"max_tokens": tokens}
    if bound.stop:
        params["stop"] = list(bound.stop)
    return params
