"""Corpus loaders.

Accepted shapes (auto-detected):

* a JSON list, or JSON Lines, of ``{"title", "text"}`` records with an
  optional ``id`` (``contents``/``paragraph_text``/``passage`` are accepted for
  ``text``);
* a ``{title: [sentences]}`` or ``{title: text}`` dict (HotpotQA's corpus).

Passages without an ``id`` get ``p<row>``. Duplicate ids, records with no
text, and an empty corpus are errors that name the record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gearag.data.jsonio import read_json_or_jsonl
from gearag.errors import DataError
from gearag.model import Passage

_TEXT_KEYS = ("text", "contents", "paragraph_text", "passage", "content")


def join_sentences(sentences: list[str]) -> str:
    """Join pre-split sentences, adding a space only where the next lacks leading whitespace."""
    out = ""
    for sent in sentences:
        if out and sent and not sent[0].isspace() and not out[-1].isspace():
            out += " "
        out += sent
    return out.strip()


def _record_to_passage(rec: Any, row: int, path: Path) -> Passage:
    where = f"{path}: record {row}"
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected an object with 'title' and 'text', got {type(rec).__name__}")
    text = next((rec[k] for k in _TEXT_KEYS if k in rec), None)
    if text is None:
        raise DataError(f"{where}: missing 'text' field (keys: {', '.join(map(str, rec)) or 'none'})")
    if isinstance(text, list):
        text = join_sentences([str(s) for s in text])
    if not isinstance(text, str):
        raise DataError(f"{where}: 'text' must be a string, got {type(text).__name__}")
    title = rec.get("title", "")
    if title is None:
        title = ""
    if not isinstance(title, str):
        raise DataError(f"{where}: 'title' must be a string, got {type(title).__name__}")
    if not text.strip() and not title.strip():
        raise DataError(f"{where}: passage has neither title nor text")
    pid = rec.get("id", rec.get("_id", rec.get("idx")))
    pid = f"p{row}" if pid is None else str(pid)
    return Passage(id=pid, title=title.strip(), text=text.strip())


def passages_from_records(records: Any, path: Path) -> list[Passage]:
    """Turn parsed JSON (list of records, or title→sentences dict) into passages."""
    if isinstance(records, dict):
        if "docs" in records or "data" in records or "corpus" in records:
            inner = records.get("docs") or records.get("data") or records.get("corpus")
            return passages_from_records(inner, path)
        records = [
            {"title": title, "text": body if not isinstance(body, list) else join_sentences(body)}
            for title, body in records.items()
        ]
    if not isinstance(records, list):
        raise DataError(f"{path}: expected a list of passages or a {{title: text}} dict")
    passages = [_record_to_passage(rec, row, path) for row, rec in enumerate(records)]
    if not passages:
        raise DataError(f"{path}: corpus is empty")
    seen: dict[str, int] = {}
    for row, p in enumerate(passages):
        if p.id in seen:
            raise DataError(f"{path}: record {row}: duplicate id {p.id!r} (first at record {seen[p.id]})")
        seen[p.id] = row
    return passages


def load_corpus(path: str | Path) -> list[Passage]:
    """Load a corpus file into passages, in file order."""
    path = Path(path)
    return passages_from_records(read_json_or_jsonl(path), path)
