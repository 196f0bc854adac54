"""The SQLite response cache: keys, persistence, concurrent writers (threads and processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from gearag.errors import ConfigError
from gearag.llm.cache import CachedReply, ResponseCache, cache_key
from gearag.llm.usage import Usage

SRC = Path(__file__).resolve().parents[2] / "src"
MSGS = [{"role": "user", "content": "hi"}]


def test_key_covers_endpoint_model_messages_and_params() -> None:
    base = cache_key("http://a/v1/chat/completions", "m", MSGS, {"temperature": 0.0, "stop": ["\n"]})
    assert base == cache_key("http://a/v1/chat/completions", "m", MSGS, {"stop": ["\n"], "temperature": 0.0})
    assert base != cache_key("http://b/v1/chat/completions", "m", MSGS, {"temperature": 0.0, "stop": ["\n"]})
    assert base != cache_key("http://a/v1/chat/completions", "m2", MSGS, {"temperature": 0.0, "stop": ["\n"]})
    assert base != cache_key("http://a/v1/chat/completions", "m", [{"role": "user", "content": "hi!"}],
                             {"temperature": 0.0, "stop": ["\n"]})
    assert base != cache_key("http://a/v1/chat/completions", "m", MSGS, {"temperature": 0.5, "stop": ["\n"]})


def test_roundtrip_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "llm.sqlite"
    with ResponseCache(path) as cache:
        assert cache.get("k") is None
        cache.put("k", CachedReply("text ✓", Usage(10, 2, estimated=True), "m", "length"))
    with ResponseCache(path) as again:
        hit = again.get("k")
        assert hit == CachedReply("text ✓", Usage(10, 2, True), "m", "length")
        assert len(again) == 1 and "k" in again
        again.clear()
        assert len(again) == 0


def test_many_threads_write_safely(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(60):
                cache.put(f"{t}-{i}", CachedReply(f"reply {t} {i}", Usage(i, 1), "m"))
                assert cache.get(f"{t}-{i}") is not None
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(cache) == 8 * 60
    assert cache.get("7-59").text == "reply 7 59"
    cache.close()


def test_many_processes_write_safely(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    script = textwrap.dedent(
        """
        import sys
        from gearag.llm.cache import CachedReply, ResponseCache
        from gearag.llm.usage import Usage
        cache = ResponseCache(sys.argv[1])
        worker = sys.argv[2]
        for i in range(150):
            cache.put(f"{worker}-{i}", CachedReply(f"r{i}", Usage(i, i), "m"))
            cache.put("shared", CachedReply(worker, Usage(1, 1), "m"))
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), str(w)], env=env, stderr=subprocess.PIPE,
                              text=True) for w in range(5)]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    with ResponseCache(path) as cache:
        assert len(cache) == 5 * 150 + 1
        assert cache.get("4-149").usage == Usage(149, 149)
        assert cache.get("shared").text in {str(w) for w in range(5)}


def test_unusable_cache_file_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "llm.sqlite"
    bad.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(ConfigError, match=r"GEARAG_CACHE_DIR|cannot open"):
        ResponseCache(bad)
