"""A chat's retrieval question: the last user message, resolved against earlier turns when it is a follow-up.

``POST /v1/chat/completions`` used to answer the last user message alone, so
a follow-up — "Where was he born?" after "Who directed Inception?" — was
retrieved with nothing to say who "he" is. Retrieval needs one question, so
the conversation is folded into one by a rule that is cheap, predictable and
written down here (no LLM is asked to rewrite it: most methods run offline):

1. The question is the last user message (the text parts of a content list).
2. It is a **follow-up** when it refers back or names nothing: it holds a
   pronoun or pointing word (:data:`REFERRING`: it, he, she, they, that,
   there, …), or no entity — no capitalised word past the first of a
   sentence, no number, no quoted phrase.
3. A follow-up gets the earlier user messages put before it, most recent
   first, each whole, while the question stays within the server's
   ``max_question_chars``. Going back stops after the first earlier message
   that is not itself a follow-up: the question the thread started from.
   "Who directed Inception?" + "Where was he born?" is retrieved as "Who
   directed Inception? Where was he born?" — a two-hop question, which is
   what the multi-hop methods answer.
4. Assistant, system and tool messages are never part of it. An answer is
   generated text: where it is wrong it would steer retrieval to its own
   mistake, and the multi-hop methods find the bridge entity ("Nolan")
   from the earlier question themselves. The user's own words carry the
   entities; the answer adds no entity the index cannot reach.

The resolved question is returned in the response's ``gearag.question``, so a
client sees what was retrieved.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: Words that refer back to something named earlier in the conversation.
REFERRING = frozenset({
    "it", "its", "itself", "he", "him", "his", "himself", "she", "her", "hers", "herself", "they", "them",
    "their", "theirs", "themselves", "that", "those", "this", "these", "there", "then", "former", "latter",
})

_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+)([^\W\d_][\w'’-]*)")
_NUMBER = re.compile(r"\d")
_QUOTED = re.compile(r"[\"“”«»][^\"“”«»]{2,}[\"“”«»]")


def message_text(content: str | list[dict[str, Any]] | None) -> str:
    """A message's text: a string as is, the text parts of a content list joined by spaces."""
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return content or ""


def names_something(text: str) -> bool:
    """Whether ``text`` names an entity: a capitalised word that does not start a sentence (``I`` aside), a
    number, or a quoted phrase."""
    if _NUMBER.search(text) or _QUOTED.search(text):
        return True
    starts = {m.start(1) for m in _SENTENCE_START.finditer(text)}
    return any(m.group()[0].isupper() and m.start() not in starts and m.group() != "I"
               for m in _WORD.finditer(text))


def is_follow_up(text: str) -> bool:
    """Whether a user message needs the earlier turns: it refers back (:data:`REFERRING`) or names nothing."""
    words = {w.lower() for w in _WORD.findall(text)}
    return bool(words & REFERRING) or not names_something(text)


def retrieval_question(user_messages: Sequence[str], max_chars: int) -> str:
    """The question to retrieve with for a conversation whose user messages are ``user_messages`` (in order,
    the last one being answered): the last, with earlier ones before it when it is a follow-up (see the module
    docstring), within ``max_chars`` characters (the last message alone may exceed them: the caller refuses it)."""
    texts = [t.strip() for t in user_messages if t.strip()]
    if not texts:
        return ""
    last = texts[-1]
    if not is_follow_up(last):
        return last
    kept: list[str] = []
    size = len(last)
    for earlier in reversed(texts[:-1]):
        if size + 1 + len(earlier) > max_chars:
            break
        kept.append(earlier)
        size += 1 + len(earlier)
        if not is_follow_up(earlier):
            break
    return " ".join([*reversed(kept), last])


__all__ = ["REFERRING", "is_follow_up", "message_text", "names_something", "retrieval_question"]
