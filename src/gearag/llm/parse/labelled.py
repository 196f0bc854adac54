"""Labelled-text replies of GEAR's online roles: reasoning, next question, answer.

The prompts ask for ``Label: value`` lines (``Answerable: Yes`` /
``Answer: ...``, ``Why: ...``, ``Next Question: ...``); the parsers also
accept Markdown emphasis, JSON objects, a bare "Yes ..."/"No ..." and other
near misses. Anything unclear is *not answerable*.
"""

from __future__ import annotations

import re

from gearag.llm.lenient import loads_lenient, unquote
from gearag.llm.parse.base import Parsed, never_raise
from gearag.llm.parse.triples import is_scalar
from gearag.model import Reasoning

_MARKUP = re.compile(r"[*_#>`]+")


def _plain(text: str) -> str:
    """Text with Markdown emphasis, headings and quote markers removed, and fences unwrapped."""
    if not isinstance(text, str):
        return ""
    text = text.replace("\r\n", "\n")
    text = re.sub(r"```[\w+-]*", "", text)
    return _MARKUP.sub("", text)


_ANSWERABLE = re.compile(r"answerable\s*(?:\?|:|-|=|is|\s)\s*\(?([A-Za-z]+)", re.IGNORECASE)
_YES = {"yes", "y", "true", "answerable", "yep", "correct"}
_NO = {"no", "n", "false", "not", "unanswerable", "none", "partially", "partial", "insufficient", "unknown", "nope"}
_LABEL = r"(?im)^[ \t\-\d.)]*{name}[ \t]*[:\-=][ \t]*"
_ANSWER_LABEL = re.compile(_LABEL.format(name=r"(?:final\s+)?answer"))
_WHY_LABEL = re.compile(_LABEL.format(name=r"(?:why|reason(?:ing)?|explanation|because)"))
_ANY_LABEL = re.compile(
    _LABEL.format(name=r"(?:answerable|(?:final\s+)?answer|why|reason(?:ing)?|explanation|next\s+question)")
)
_UNKNOWN_ANSWER = re.compile(
    r"^(unknown|none|n/?a|not (provided|given|available|known|stated|mentioned|enough|specified)|"
    r"cannot be (determined|answered)|insufficient|no answer|unanswerable|\.\.\.|<.*>)\W*$",
    re.IGNORECASE,
)


def _field(text: str, label: re.Pattern[str]) -> str | None:
    """The text after a ``Label:`` up to the next known label; ``None`` if the label is absent."""
    m = label.search(text)
    if not m:
        return None
    rest = text[m.end():]
    nxt = _ANY_LABEL.search(rest)
    value = rest[: nxt.start()] if nxt else rest
    return value.strip()


def _not_answerable(why: str) -> Reasoning:
    return Reasoning(False, why)


@never_raise(lambda reply: _not_answerable(reply[:500] if isinstance(reply, str) else ""))
def parse_reasoning(text: str) -> Parsed[Reasoning]:
    """``Answerable: Yes / Answer: ...`` or ``Answerable: No / Why: ...``; anything unclear is *not answerable*.

    The value's ``text`` is the answer when answerable (then also ``answer``), else why not.
    """
    raw = text
    plain = _plain(raw).strip()
    repaired = False
    verdict: bool | None = None
    answer = _field(plain, _ANSWER_LABEL)
    why = _field(plain, _WHY_LABEL)

    m = _ANSWERABLE.search(plain)
    if m:
        word = m.group(1).lower()
        if word in _YES:
            verdict = True
        elif word in _NO:
            verdict = False
        if not re.search(r"(?im)^\s*answerable\s*:\s*(yes|no)\b", raw):
            repaired = True
        if verdict and answer is None:
            tail = plain[m.end():].lstrip(" \t.,:;!-)")
            line = tail.split("\n")[0].strip()
            if line:
                answer, repaired = _ANSWER_PREFIX.sub("", line), True
    if verdict is None:
        value, _, _ = loads_lenient(raw) if "{" in raw else (None, False, False)
        if isinstance(value, dict):
            lowered = {str(k).lower(): v for k, v in value.items()}
            flag = lowered.get("answerable")
            if isinstance(flag, bool):
                verdict = flag
            elif isinstance(flag, str) and flag.strip().lower() in _YES | _NO:
                verdict = flag.strip().lower() in _YES
            if verdict is not None:
                repaired = True
                answer = str(lowered.get("answer") or answer or "").strip() or answer
                why = str(lowered.get("why") or lowered.get("reason") or why or "").strip() or why
    if verdict is None:
        first = re.match(r"\s*(yes|no)\b[\s.,:;!-]*", plain, re.IGNORECASE)
        if first:
            verdict = first.group(1).lower() == "yes"
            repaired = True
            if verdict and answer is None:
                answer = plain[first.end():].strip().split("\n")[0]
            if not verdict and why is None:
                why = plain[first.end():].strip()
    if verdict is None and answer and not _UNKNOWN_ANSWER.match(unquote(answer)):
        verdict = True  # an "Answer: X" without the Answerable line
        repaired = True

    if verdict is None:
        return Parsed(_not_answerable(plain[:500]), ok=False, repaired=True,
                      problems=["no 'Answerable: Yes/No' verdict; treated as not answerable"])

    problems: list[str] = []
    if verdict:
        ans = clean_answer(answer or "")
        if not ans or _UNKNOWN_ANSWER.match(ans):
            # "Yes" with no usable answer is not trustworthy: keep searching.
            return Parsed(_not_answerable(why or plain[:500]), ok=True, repaired=True,
                          problems=["answerable without an answer; treated as not answerable"])
        return Parsed(Reasoning(True, ans, ans), ok=True, repaired=repaired, valid=1, problems=problems)
    reason = why if why else _strip_verdict(plain)
    return Parsed(_not_answerable(reason.strip()), ok=True, repaired=repaired or why is None, valid=1,
                  problems=problems)


def _strip_verdict(text: str) -> str:
    return re.sub(r"(?im)^\s*answerable\s*[:\-=]?\s*\w+\s*[.,;]?\s*", "", text).strip()


_NEXT_LABEL = re.compile(
    r"(?im)^[ \t\-\d.)]*(?:next|new|follow[- ]?up|sub|rewritten|simpler)[ \t]*(?:question|query)[ \t]*[:\-=][ \t]*"
)
_QUESTION_LABEL = re.compile(r"(?im)^[ \t]*(?:question|query)[ \t]*[:\-=][ \t]*")


@never_raise(lambda _: "")
def parse_next_question(text: str) -> Parsed[str]:
    """The rewriter's ``Next Question: ...``; empty (``ok=False``) when no question can be found."""
    plain = _plain(text).strip()
    repaired = False
    candidate = None
    m = _NEXT_LABEL.search(plain)
    if m:
        rest = plain[m.end():].strip()
        candidate = rest.split("\n")[0].strip() or [*rest.split("\n"), ""][1].strip()
        if not re.match(r"(?i)\s*next question\s*:", text.strip()):
            repaired = True
    if not candidate and "{" in plain:
        value, _, _ = loads_lenient(plain)
        if isinstance(value, dict):
            for k, v in value.items():
                if re.search(r"question|query", str(k), re.IGNORECASE) and isinstance(v, str) and v.strip():
                    candidate, repaired = v, True
                    break
    if not candidate:
        m = _QUESTION_LABEL.search(plain)
        if m:
            candidate, repaired = plain[m.end():].split("\n")[0], True
    if not candidate:
        lines = [ln.strip() for ln in plain.split("\n") if ln.strip()]
        asked = [ln for ln in lines if ln.endswith("?")]
        if len(lines) == 1:
            candidate = lines[0]
        elif asked:
            candidate, repaired = asked[0], True
        elif lines:
            candidate, repaired = lines[0], True
    question = unquote(candidate or "")
    if not question:
        return Parsed("", ok=False, repaired=True, problems=["no next question found"])
    return Parsed(question, ok=True, repaired=repaired, valid=1)


_ANSWER_PREFIX = re.compile(r"(?i)^\s*(?:the\s+)?(?:final\s+|short\s+)?answer\s*(?:is|:|-)\s*")


def clean_answer(text: str) -> str:
    """An answer string without a leading "the answer is", quotes, emphasis or a final period."""
    answer = _plain(text).strip().split("\n")[0].strip()
    answer = _ANSWER_PREFIX.sub("", answer)
    answer = unquote(answer)
    if answer.endswith(".") and not re.search(r"\b[A-Z]\.$|\b(?:Jr|Sr|St|Dr|Inc|Ltd|Co)\.$", answer):
        answer = answer[:-1].rstrip()
    return unquote(answer)


@never_raise(lambda _: "")
def parse_answer(text: str) -> Parsed[str]:
    """A short QA answer: the text after ``Answer:`` on its line, without quotes, emphasis or a final period."""
    plain = _plain(text).strip()
    repaired = False
    if plain.startswith("{"):
        value, _, _ = loads_lenient(plain)
        if isinstance(value, dict):
            for k, v in value.items():
                if "answer" in str(k).lower() and is_scalar(v):
                    plain, repaired = str(v), True
                    break
    labels = list(_ANSWER_LABEL.finditer(plain))
    m = labels[-1] if labels else None  # the last one: models sometimes echo the example first
    if m:
        rest = plain[m.end():].strip()
        repaired = repaired or m.start() > 0
    else:
        rest = plain
    lines = [ln.strip() for ln in rest.split("\n") if ln.strip()]
    answer = lines[0] if lines else ""
    cleaned = clean_answer(answer)
    if _ANSWER_PREFIX.match(answer):
        repaired = True
    answer = cleaned
    if not answer:
        return Parsed("", ok=False, repaired=True, problems=["empty answer"])
    return Parsed(answer, ok=True, repaired=repaired or len(lines) > 1, valid=1)

