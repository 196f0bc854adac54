"""gearag.data.jsonio: the index's JSON files, written and read with orjson, read as ``json`` reads them."""

from __future__ import annotations

import json
import math
from pathlib import Path

from gearag.data.jsonio import dump_json, load_json


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
