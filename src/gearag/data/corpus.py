"""Corpus loaders.

Accepted shapes (auto-detected):

* a JSON list, or JSON Lines, of ``{"title", "text"}`` records with an
  optional ``id`` (``contents``/``paragraph_text``/``passage`` are accepted for
  ``text``);
* a ``{title: [sentences]}`` or ``{title: text}`` dict (HotpotQA's corpus).

Passages without an ``id`` get ``p<row>`` (``p<id_start + row>``: ``gearag add`` continues an
index's numbering, :func:`gearag.indexing.incremental.next_auto_id`), or where another id is that, a
free ``p<n>`` (:func:`gearag.data.ids.number_missing`). Every id must be one ``gearag delete`` and
the HTTP API can name (:func:`gearag.data.ids.check_id`). Duplicate ids, ids that break that rule,
records with no text, non-string sentences and an empty corpus are errors that name the
record.

A passage longer than ``max_passage_chars`` (default
:data:`MAX_PASSAGE_CHARS`, 200,000 characters — a book chapter, not a
paragraph) is split into chunks of at most that many characters, at
whitespace where possible, with a warning naming it. Each chunk keeps the
title and gets the id ``<id>#<n>`` (n from 1). The spaCy extractor bounds
its own memory and reads at most 200,000 characters of a passage; the split
keeps every part of a long document extracted and embedded. Gold references
by title still match every chunk.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from gearag.data.ids import check_id, number_missing
from gearag.data.jsonio import read_json_or_jsonl
from gearag.errors import DataError
from gearag.model import Passage

_TEXT_KEYS = ("text", "contents", "paragraph_text", "passage", "content")

#: Passages longer than this many characters are split (see the module docstring).
MAX_PASSAGE_CHARS = 200_000

log = logging.getLogger("gearag.data")


def _sentences(body: list[Any], where: str) -> str:
    for i, sent in enumerate(body):
        if not isinstance(sent, str):
            raise DataError(f"{where}: sentence {i} must be a string, got {type(sent).__name__}")
    return join_sentences(body)


def split_text(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at the last whitespace of each window."""
    pieces = []
    while len(text) > limit:
        cut = max(text.rfind(" ", limit // 2, limit), text.rfind("\n", limit // 2, limit))
        if cut <= 0:
            cut = limit
        pieces.append(text[:cut].strip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return [p for p in pieces if p]


def split_long_passages(
    passages: list[Passage], limit: int, on_warning: Callable[[str], None] | None = None, where: str = ""
) -> list[Passage]:
    """Split every passage longer than ``limit`` characters into chunks ``<id>#1``, ``<id>#2``, ..."""
    return _split(passages, limit, on_warning, where)[0]


def _split(passages: list[Passage], limit: int, on_warning: Callable[[str], None] | None,
           where: str) -> tuple[list[Passage], list[int]]:
    """:func:`split_long_passages`, with the row of ``passages`` each passage comes from."""
    out: list[Passage] = []
    rows: list[int] = []
    for row, p in enumerate(passages):
        if len(p.text) <= limit:
            out.append(p)
            rows.append(row)
            continue
        chunks = split_text(p.text, limit)
        message = (f"{where}record {row} (id {p.id!r}, {len(p.text):,} characters) is longer than "
                   f"{limit:,} characters; split into {len(chunks)} passages {p.id}#1..#{len(chunks)}")
        (on_warning or log.warning)(message)
        out.extend(Passage(check_id(f"{p.id}#{n}", f"{where}record {row}"), p.title, chunk)
                   for n, chunk in enumerate(chunks, 1))
        rows.extend([row] * len(chunks))
    return out, rows


def join_sentences(sentences: list[str]) -> str:
    """Join pre-split sentences, adding a space only where the next lacks leading whitespace."""
    out = ""
    for sent in sentences:
        if out and sent and not sent[0].isspace() and not out[-1].isspace():
            out += " "
        out += sent
    return out.strip()


#: A UTF-16 surrogate code point on its own: JSON can spell it, UTF-8 cannot encode it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _record_fields(rec: Any, row: int, path: Path) -> tuple[str | None, str, str]:
    """A record's own id (None if it has none), title and text."""
    where = f"{path}: record {row}"
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected an object with 'title' and 'text', got {type(rec).__name__}")
    text = next((rec[k] for k in _TEXT_KEYS if k in rec), None)
    if text is None:
        raise DataError(f"{where}: missing 'text' field (keys: {', '.join(map(str, rec)) or 'none'})")
    if isinstance(text, list):
        text = _sentences(text, where)
    if not isinstance(text, str):
        raise DataError(f"{where}: 'text' must be a string, got {type(text).__name__}")
    title = rec.get("title", "")
    if title is None:
        title = ""
    if not isinstance(title, str):
        raise DataError(f"{where}: 'title' must be a string, got {type(title).__name__}")
    if not text.strip() and not title.strip():
        raise DataError(f"{where}: passage has neither title nor text")
    for name, value in (("title", title), ("text", text)):
        if _SURROGATE.search(value):  # JSON's "\ud800" alone: no UTF-8 file can hold it (the index writer failed)
            raise DataError(f"{where}: '{name}' holds a lone surrogate (an unpaired \\ud800-\\udfff escape), "
                            "which is not text; fix the record's encoding")
    pid = rec.get("id", rec.get("_id", rec.get("idx")))
    return (None if pid is None else check_id(str(pid), where)), title.strip(), text.strip()


def passages_from_records(
    records: Any, path: Path, *, max_passage_chars: int | None = MAX_PASSAGE_CHARS,
    on_warning: Callable[[str], None] | None = None, id_start: int = 0,
    taken: Callable[[list[str]], Collection[str]] | None = None,
) -> list[Passage]:
    """Turn parsed JSON (list of records, or title→sentences dict) into passages (``id_start``: the number of the
    first ``p<n>`` id given to a record without one; ``taken``: which of a list of ids are in use elsewhere, so
    not given to one: :func:`gearag.data.ids.number_missing`)."""
    if isinstance(records, dict):
        if "docs" in records or "data" in records or "corpus" in records:
            inner = records.get("docs") or records.get("data") or records.get("corpus")
            return passages_from_records(inner, path, max_passage_chars=max_passage_chars, on_warning=on_warning,
                                         id_start=id_start, taken=taken)
        records = [
            {"title": title,
             "text": body if not isinstance(body, list) else _sentences(body, f"{path}: record {row} ({title!r})")}
            for row, (title, body) in enumerate(records.items())
        ]
    if not isinstance(records, list):
        raise DataError(f"{path}: expected a list of passages or a {{title: text}} dict")
    fields = [_record_fields(rec, row, path) for row, rec in enumerate(records)]
    if not fields:
        raise DataError(f"{path}: corpus is empty")
    ids = number_missing([pid for pid, _, _ in fields], id_start, taken)
    passages = [Passage(pid, title, text) for pid, (_, title, text) in zip(ids, fields, strict=True)]
    rows = list(range(len(passages)))
    if max_passage_chars is not None:
        passages, rows = _split(passages, max_passage_chars, on_warning, where=f"{path}: ")
    seen: dict[str, int] = {}
    for row, p in zip(rows, passages, strict=True):
        if p.id in seen:
            raise DataError(f"{path}: record {row}: duplicate id {p.id!r} (first at record {seen[p.id]})")
        seen[p.id] = row
    return passages


def load_corpus(
    path: str | Path, *, max_passage_chars: int | None = MAX_PASSAGE_CHARS,
    on_warning: Callable[[str], None] | None = None, id_start: int = 0,
    taken: Callable[[list[str]], Collection[str]] | None = None,
) -> list[Passage]:
    """Load a corpus file into passages, in file order (overlong passages split; records without an id numbered
    from ``id_start`` with ids neither another record nor ``taken`` uses: see the module docstring)."""
    path = Path(path)
    return passages_from_records(read_json_or_jsonl(path), path, max_passage_chars=max_passage_chars,
                                 on_warning=on_warning, id_start=id_start, taken=taken)
