"""Question-set loaders and gold-passage resolution.

Formats (auto-detected per record):

* MuSiQue: ``{id, question, answer, answer_aliases, paragraphs: [{title,
  paragraph_text, is_supporting}]}`` — gold = supporting paragraphs (title and
  text, since MuSiQue titles repeat);
* HotpotQA: ``{_id, question, answer, supporting_facts: [[title, sent]]}`` —
  gold = distinct titles;
* 2WikiMultiHopQA (HippoRAG's file): ``{id, question, answer, answer_aliases,
  supporting_facts: [title, ...]}`` — gold = the titles;
* plain JSON/JSONL: ``{id, question, answer?, answers?, gold?: [[title, text]
  | title | {title, text}]}``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gearag.data.jsonio import read_json_or_jsonl
from gearag.errors import DataError
from gearag.model import GoldRef, Passage, Question

_WS = re.compile(r"\s+")


def _norm_text(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _gold_from_record(rec: dict[str, Any], where: str) -> list[GoldRef]:
    if isinstance(rec.get("paragraphs"), list):  # MuSiQue
        return [
            GoldRef(p.get("title", ""), p.get("paragraph_text", p.get("text")))
            for p in rec["paragraphs"]
            if isinstance(p, dict) and p.get("is_supporting")
        ]
    raw = rec.get("gold", rec.get("supporting_facts"))
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise DataError(f"{where}: gold/supporting_facts must be a list")
    refs: list[GoldRef] = []
    for item in raw:
        if isinstance(item, str):
            refs.append(GoldRef(item))
        elif isinstance(item, dict) and "title" in item:
            refs.append(GoldRef(str(item["title"]), item.get("text")))
        elif isinstance(item, list) and item and isinstance(item[0], str):
            # [title, text] in our JSONL; [title, sentence_index] in HotpotQA/2Wiki.
            text = item[1] if len(item) > 1 and isinstance(item[1], str) else None
            refs.append(GoldRef(item[0], text))
        else:
            raise DataError(f"{where}: cannot read gold entry {item!r}")
    # Distinct, order kept (HotpotQA names a title once per supporting sentence).
    return list(dict.fromkeys(refs))


def _question_from_record(rec: Any, row: int, path: Path) -> Question:
    where = f"{path}: record {row}"
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected an object, got {type(rec).__name__}")
    question = rec.get("question", rec.get("query"))
    if not isinstance(question, str) or not question.strip():
        raise DataError(f"{where}: missing or empty 'question'")
    qid = rec.get("id", rec.get("_id"))
    qid = str(row) if qid is None else str(qid)
    answer = rec.get("answer")
    aliases = rec.get("answer_aliases") or []
    if answer is None and isinstance(rec.get("answers"), list) and rec["answers"]:
        answer, aliases = rec["answers"][0], rec["answers"][1:]
    return Question(
        id=qid,
        question=question.strip(),
        answer=None if answer is None else str(answer),
        answer_aliases=[str(a) for a in aliases],
        gold=_gold_from_record(rec, f"{where} (question {qid})"),
    )


def load_questions(path: str | Path) -> list[Question]:
    """Load a question file in any supported format."""
    path = Path(path)
    data = read_json_or_jsonl(path)
    if isinstance(data, dict):
        data = data.get("data") or data.get("questions") or [data]
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a list of questions")
    questions = [_question_from_record(rec, row, path) for row, rec in enumerate(data)]
    if not questions:
        raise DataError(f"{path}: no questions")
    seen: set[str] = set()
    for row, q in enumerate(questions):
        if q.id in seen:
            raise DataError(f"{path}: record {row}: duplicate question id {q.id!r}")
        seen.add(q.id)
    return questions


class GoldMatcher:
    """Decides which passages are gold for a question.

    A gold reference with text matches passages with that title and
    (whitespace-normalised) text; a title-only reference matches every
    passage with that title.
    """

    def __init__(self, passages: Sequence[Passage]) -> None:
        self._by_title: dict[str, list[int]] = defaultdict(list)
        self._by_title_text: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, p in enumerate(passages):
            self._by_title[p.title].append(i)
            self._by_title_text[(p.title, _norm_text(p.text))].append(i)

    def resolve(self, question: Question) -> list[frozenset[int]]:
        """Passage rows for each gold reference; an unresolvable reference is a DataError."""
        out = []
        for ref in question.gold:
            rows = (
                self._by_title_text.get((ref.title, _norm_text(ref.text)))
                if ref.text is not None
                else self._by_title.get(ref.title)
            )
            if not rows:
                what = f"title {ref.title!r}" + (" with the given text" if ref.text is not None else "")
                raise DataError(f"question {question.id}: gold passage not in the corpus ({what})")
            out.append(frozenset(rows))
        return out


def gold_matches(ref: GoldRef, title: str, text: str) -> bool:
    """Whether a retrieved (title, text) is the gold passage ``ref`` names."""
    if ref.title != title:
        return False
    return ref.text is None or _norm_text(ref.text) == _norm_text(text)
