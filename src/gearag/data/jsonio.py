"""Reading JSON and JSON Lines with errors that name the file and the line."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from gearag.errors import DataError


def load_json(path: Path) -> Any:
    """Parse a JSON file gearag wrote, from its bytes, with orjson (0.6 s instead of 0.85 s for the 7M names of
    a million-passage index's vocabulary, which every add reads); what orjson refuses and ``json`` reads
    (``NaN``, a lone surrogate escape) is read by ``json``. ``OSError`` and ``ValueError`` propagate: the
    caller names the file in its own error. Returns the parsed value as JSON builds it (dict, list, str, int,
    float, bool or None): ``Any``, since only the caller knows the file's shape and checks it."""
    return parse_json(Path(path).read_bytes())


def parse_json(raw: bytes) -> Any:
    """:func:`load_json` of bytes already read: the parsed JSON value, of a shape only the caller knows."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def dump_json(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON, with orjson: the entity and name lists of a million-passage index
    (150 MB each, written by every build and add) take 0.13 s instead of ``json.dumps``' 1.9 s, and
    orjson holds the GIL that long, not the whole time the other generation thread works. Non-string
    keys are written as strings, as ``json`` does; a float NaN or infinity would become ``null``, so
    index files hold none (ids, strings, counts and settings). A
    :class:`~gearag.data.jsonstrings.JsonStrings` anywhere in ``value`` is written as its text."""
    from gearag.data.jsonstrings import default

    return orjson.dumps(value, default=default, option=orjson.OPT_NON_STR_KEYS)


def jsonl_line(row: Any) -> bytes:
    """``json.dumps(row, ensure_ascii=False)`` and a newline, as UTF-8: the line :meth:`IndexWriter.write_jsonl
    <gearag.store.writer.IndexWriter.write_jsonl>` writes. A list of strings or a dict of strings to strings (the
    triples' and passages' rows: 17M triple rows at a million passages) is joined from the encoding ``json``
    gives each string (its C ``encode_basestring``), without the encoder ``json.dumps`` makes per call: 4x
    faster, and its temporaries are small ``str`` objects (per-string orjson bytes, 1.6x, raised a build's peak
    by ~4%). Anything else goes through ``json.dumps``."""
    if type(row) is list and all(type(x) is str for x in row):
        line = "[" + ", ".join(map(_encoded, row)) + "]\n"
    elif type(row) is dict and all(type(k) is str and type(v) is str for k, v in row.items()):
        line = "{" + ", ".join(_encoded(k) + ": " + _encoded(v) for k, v in row.items()) + "}\n"
    else:
        line = json.dumps(row, ensure_ascii=False) + "\n"
    return line.encode("utf-8")


#: A string as ``json.dumps(..., ensure_ascii=False)`` writes it (quoted, ``"``, ``\\`` and control characters
#: escaped): the encoder's own function.
_encoded: Callable[[str], str] = json.encoder.encode_basestring


def read_text(path: Path) -> str:
    """Read a UTF-8 file; undecodable bytes are an error naming the byte offset."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected a JSON or JSONL file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(
            f"{path}: line {line}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start});"
            " re-encode the file as UTF-8"
        ) from None
    return text.removeprefix("\ufeff")


def json_lines(text: str) -> Iterator[tuple[int, str]]:
    """Non-blank lines of JSON Lines text with their 1-based numbers.

    Lines end at ``\n`` only (a trailing ``\r`` is dropped): JSON allows
    U+2028, U+2029 and U+0085 raw inside strings, where ``str.splitlines``
    would break a record in two.
    """
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if line.strip():
            yield lineno, line


def read_json_or_jsonl(path: Path) -> Any:
    """Parse a whole-file JSON document, or JSON Lines (one value per non-blank line): the document's value, or
    the list of the lines' values. ``Any``: user data of a shape the caller checks (a list of records, a dict)."""
    path = Path(path)
    text = read_text(path)
    stripped = text.lstrip()
    if not stripped:
        raise DataError(f"{path}: file is empty")
    if path.suffix.lower() != ".jsonl":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            # A .json file holding JSON Lines is common; fall through only then.
            if not stripped.startswith("{") or exc.msg != "Extra data":
                raise DataError(f"{path}: line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})") from None
    rows = []
    for lineno, line in json_lines(text):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {lineno}: invalid JSON ({exc.msg})") from None
    return rows
