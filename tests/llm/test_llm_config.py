"""LLMConfig: defaults, environment, overrides and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gearag.errors import ConfigError, LLMError
from gearag.llm import LLMConfig, default_cache_path


def test_defaults_are_documented_values() -> None:
    config = LLMConfig(model="m")
    assert config.base_url == "https://api.openai.com/v1"
    assert config.temperature == 0.0 and config.max_tokens is None
    assert config.max_retries >= 3 and config.concurrency >= 1
    assert config.cache_path == default_cache_path()
    assert config.endpoint == "https://api.openai.com/v1/chat/completions"


def test_from_env_reads_standard_variables(tmp_path: Path) -> None:
    env = {"OPENAI_BASE_URL": "http://localhost:8000/v1/", "OPENAI_API_KEY": "sk-x", "GEARAG_LLM_MODEL": "qwen",
           "GEARAG_CACHE_DIR": str(tmp_path), "GEARAG_LLM_CONCURRENCY": "16", "GEARAG_LLM_TIMEOUT": "9.5"}
    config = LLMConfig.from_env(env)
    assert (config.base_url, config.api_key, config.model) == ("http://localhost:8000/v1/", "sk-x", "qwen")
    assert config.endpoint == "http://localhost:8000/v1/chat/completions"
    assert config.cache_path == tmp_path / "llm.sqlite"
    assert config.concurrency == 16 and config.timeout == 9.5


def test_overrides_win_and_none_is_ignored() -> None:
    env = {"OPENAI_BASE_URL": "http://a/v1", "GEARAG_LLM_MODEL": "env-model"}
    config = LLMConfig.from_env(env, base_url=None, model="cli-model", cache_path=False)
    assert config.model == "cli-model" and config.base_url == "http://a/v1" and config.cache_path is None
    assert LLMConfig.from_env({"GEARAG_LLM_BASE_URL": "http://b/v1", "OPENAI_BASE_URL": "http://a/v1"},
                              model="m").base_url == "http://b/v1"


def test_missing_model_is_a_clear_llm_error() -> None:
    with pytest.raises(LLMError) as err:
        LLMConfig.from_env({})
    assert "--llm-model" in str(err.value) and "GEARAG_LLM_MODEL" in str(err.value)
    with pytest.raises(LLMError):
        LLMConfig(model="  ")


def test_public_openai_needs_a_key_but_local_servers_do_not() -> None:
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        LLMConfig.from_env({"GEARAG_LLM_MODEL": "gpt-4o-mini"})
    local = LLMConfig.from_env({"GEARAG_LLM_MODEL": "llama3.1", "OPENAI_BASE_URL": "http://localhost:11434/v1"})
    assert local.api_key is None


def test_cache_can_be_disabled_from_env(tmp_path: Path) -> None:
    env = {"GEARAG_LLM_MODEL": "m", "OPENAI_API_KEY": "k", "GEARAG_LLM_CACHE": "0"}
    assert LLMConfig.from_env(env).cache_path is None
    assert LLMConfig(model="m").with_overrides(cache_path=False).cache_path is None
    assert LLMConfig(model="m", cache_path=str(tmp_path / "x.sqlite")).cache_path == tmp_path / "x.sqlite"


def test_cache_dir_env_changes_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GEARAG_CACHE_DIR", str(tmp_path))
    assert default_cache_path() == tmp_path / "llm.sqlite"
    monkeypatch.delenv("GEARAG_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "gearag" / "llm.sqlite"


@pytest.mark.parametrize(
    "bad",
    [dict(timeout=0), dict(max_retries=-1), dict(concurrency=0), dict(max_tokens=0), dict(base_url="localhost:8000")],
)
def test_invalid_values_are_config_errors(bad: dict) -> None:
    with pytest.raises(ConfigError):
        LLMConfig(model="m", **bad)


def test_bad_numbers_in_env_and_unknown_overrides() -> None:
    with pytest.raises(ConfigError, match="GEARAG_LLM_CONCURRENCY"):
        LLMConfig.from_env({"GEARAG_LLM_MODEL": "m", "OPENAI_API_KEY": "k", "GEARAG_LLM_CONCURRENCY": "lots"})
    with pytest.raises(ConfigError, match="unknown LLM setting"):
        LLMConfig.from_env({"GEARAG_LLM_MODEL": "m", "OPENAI_API_KEY": "k"}, colour="blue")


def test_describe_never_shows_the_key() -> None:
    config = LLMConfig(model="m", api_key="sk-secret", cache_path=None)
    assert "sk-secret" not in config.describe() and "sk-secret" not in repr(config.describe())


def test_gateway_headers_from_env() -> None:
    env = {"GEARAG_LLM_MODEL": "m", "OPENAI_BASE_URL": "http://gw/v1", "GEARAG_LLM_HEADERS": '{"api-key": "abc"}'}
    assert dict(LLMConfig.from_env(env).extra_headers) == {"api-key": "abc"}
    with pytest.raises(ConfigError, match="GEARAG_LLM_HEADERS"):
        LLMConfig.from_env(dict(env, GEARAG_LLM_HEADERS="api-key: abc"))
