"""Reading one array of a JSON file element by element: the values and errors json.loads gives."""

from __future__ import annotations

import hashlib
import io
import json
import random

import pytest

from gearag.data.jsonstream import ArrayNotFoundError, JSONStreamError, iter_array


def stream(raw: bytes, key: str = "docs", chunk: int = 7, digest: object | None = None) -> list:
    return list(iter_array(io.BytesIO(raw), key, digest=digest, chunk=chunk))


def random_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(7 if depth < 3 else 4)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -12, 123456789012345678901234567890, 1.5e-7, -0.25, 3.0])
    if kind in (2, 3):
        return "".join(rng.choice('ab "\\\n\té€😀\u2028') for _ in range(rng.randrange(12)))
    if kind in (4, 5):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{i}\u00e9": random_value(rng, depth + 1) for i in range(rng.randrange(4))}


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_elements_equal_json_loads_at_any_chunk_size(seed, chunk):
    rng = random.Random(seed)
    docs = [random_value(rng) for _ in range(rng.randrange(6))]
    payload = {"before": random_value(rng), "docs": docs, "after": [random_value(rng)], "n": 10}
    raw = json.dumps(payload, indent=rng.choice([None, 1]), ensure_ascii=rng.random() < 0.5).encode()
    assert stream(raw, chunk=chunk) == json.loads(raw)["docs"]
    top = json.dumps(docs).encode()
    assert stream(top, chunk=chunk) == docs  # a top-level array


def test_a_number_cut_by_the_buffer_is_read_whole():
    raw = b'{"docs": [1234567, 89], "x": 1234567}'
    for chunk in range(1, len(raw) + 1):
        assert stream(raw, chunk=chunk) == [1234567, 89]


def test_digest_covers_every_byte_and_encodings_as_json_loads():
    raw = json.dumps({"docs": [{"t": "é"}], "ents_by_doc": [["a"] * 50]}).encode()
    digest = hashlib.blake2b(digest_size=12)
    assert stream(raw, digest=digest) == [{"t": "é"}]
    assert digest.hexdigest() == hashlib.blake2b(raw, digest_size=12).hexdigest()
    for encoded in (b"\xef\xbb\xbf" + raw, raw.decode().encode("utf-16")):
        assert stream(encoded) == json.loads(encoded)["docs"]


@pytest.mark.parametrize("text", [
    "", "  ", '{"docs": [1, 2', '{"docs": [1 2]}', '{"docs": [1], }', '{docs: [1]}', '{"docs" [1]}',
    '{"docs": [1]} x', '[1, 2,]', '{"a": [1, }, "docs": []}', '\n\n  {"docs": [\n {"a": 1},\n {"a": tru}]}',
    '{"docs": [1]}\n[', '{"a": "' + "x" * 40 + '\n', '[' + '1, ' * 30 + '}',
])
def test_invalid_json_is_an_error_at_json_loads_position(text):
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    with pytest.raises(JSONStreamError) as got:
        stream(text.encode(), chunk=5)
    assert (got.value.lineno, got.value.colno) == (want.value.lineno, want.value.colno)


@pytest.mark.parametrize("text", ['{"results": []}', '{"docs": {"a": 1}}', '{"docs": "x"}', '"docs"', "3", "{}",
                                  "null"])
def test_other_shapes_are_not_found(text):
    with pytest.raises(ArrayNotFoundError):
        stream(text.encode())


def test_a_key_given_twice_is_an_error():
    with pytest.raises(JSONStreamError, match="twice"):
        stream(b'{"docs": [1], "docs": [2]}')


def test_undecodable_bytes_raise_unicode_errors():
    with pytest.raises(UnicodeDecodeError):
        stream(b'{"docs": ["\xff\xfe\xfa"]}')
    with pytest.raises(UnicodeDecodeError):
        stream(b'{"docs": ["\xc3')  # cut inside a character
