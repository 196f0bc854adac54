"""gearag.data.jsonio: the index's JSON files, written and read with orjson, read as ``json`` reads them."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from gearag.data.jsonio import dump_json, jsonl_line, load_json


def test_dump_json_is_what_json_parses_back_with_raw_utf8_and_string_keys() -> None:
    value = {"names": ["Zürich", "北京", 'a "quoted" \\ name', "tab\there"], 3: [1, 2], "w": 0.1}
    raw = dump_json(value)
    assert "Zürich".encode() in raw and b"\\u" not in raw  # UTF-8 as it is, not escaped
    assert json.loads(raw) == json.loads(json.dumps(value))  # an int key becomes a string, as in json


def test_load_json_reads_what_json_reads_and_orjson_refuses(tmp_path: Path) -> None:
    plain, nan = tmp_path / "plain.json", tmp_path / "nan.json"
    plain.write_bytes(dump_json(["a", "b"]))
    nan.write_text(json.dumps({"x": float("nan"), "s": "\ud800"}), encoding="utf-8")
    assert load_json(plain) == ["a", "b"]
    got = load_json(nan)
    assert math.isnan(got["x"]) and got["s"] == "\ud800"


def test_a_jsonl_line_is_what_json_dumps_writes() -> None:
    """Rows of strings are joined from json's string encodings: the same bytes as ``json.dumps`` (every
    escape, every code point class), and other rows go through ``json`` itself."""
    rng = random.Random(3)
    alphabet = [chr(c) for c in (*range(0x80), 0xA0, 0xE9, 0x2028, 0x2029, 0xFEFF, 0xFFFD, 0x1D11E, 0x10FFFF)]
    strings = ["", '"', "\\", "/", "\t\n\r\b\f", "\x00\x1f\x7f", "é 中文 𝄞"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12))) for _ in range(2000)]
    rows: list[object] = [strings[i: i + 3] for i in range(0, len(strings), 3)]
    rows += [{"id": a, "title": b, "text": c} for a, b, c in zip(strings, strings[1:], strings[2:], strict=False)]
    rows += [[], {}, ["a", 1], {"a": None}, {"n": 1.5, "s": "x"}, [["nested"]], "plain", 7]
    for row in rows:
        assert jsonl_line(row) == (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"), row
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate: refused as before, by the UTF-8 encoding
        jsonl_line(["\ud800"])
