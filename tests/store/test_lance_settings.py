"""A Lance index's query-time settings (LanceSearchConfig) from the CLI and `gearag serve`: the --lance-* options.

Skipped only when the ``lance`` extra is not installed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import assert_clean_error, write_jsonl
from gearag.api import Gearag
from gearag.errors import ConfigError
from gearag.options import changed_options
from gearag.store.backend import check_lance_settings, open_index
from gearag.store.index import Index

pytest.importorskip("lancedb", reason="the lance extra is not installed")

from gearag.indexing.export import export_index
from gearag.store.lance import index as lance_index_module
from gearag.store.lance.collection import LanceSearchConfig
from gearag.store.lance.export import HELD_ARRAYS
from gearag.store.lance.index import LanceIndex


@pytest.fixture(scope="module")
def lance_uri(tiny_index: Index, tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = tmp_path_factory.mktemp("lance-settings") / "tiny.lance"
    export_index(tiny_index.path, uri)
    return str(uri)


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "question": "Who is the father of Stephen Curry?"},
                                              {"id": "q2", "question": "Where was the Beatles band formed?"}])


@pytest.fixture
def opened_with(monkeypatch: pytest.MonkeyPatch) -> list[LanceSearchConfig]:
    """Every config the Lance loader is called with (the registry imports it by name on each open)."""
    seen: list[LanceSearchConfig] = []
    real = lance_index_module.open_lance_index

    def spy(location: Any, *, verify: bool = False, config: LanceSearchConfig = LanceSearchConfig()) -> LanceIndex:
        seen.append(config)
        return real(location, verify=verify, config=config)

    monkeypatch.setattr(lance_index_module, "open_lance_index", spy)
    return seen


def _cached_files(cache: Path) -> list[str]:
    return sorted(p.relative_to(d).as_posix() for d in (cache / "lance").iterdir() for p in d.rglob("*.npy"))


def test_options_are_named_lance_and_changed_options_names_what_differs() -> None:
    from gearag.cli.common import _lance_specs, _method_specs

    names = set(_lance_specs())
    assert all(name.startswith("lance_") for name in names) and not names & set(_method_specs())
    assert changed_options(LanceSearchConfig()) == {}
    assert changed_options(LanceSearchConfig(exact=True, cache_dir="x")) == {"lance_exact": True,
                                                                             "lance_cache_dir": "x"}


def test_open_index_passes_the_settings_to_lance_and_ignores_them_for_a_directory(
        lance_uri: str, tiny_index: Index, tmp_path: Path, opened_with: list[LanceSearchConfig]) -> None:
    config = LanceSearchConfig(exact=True, cache_rows=16, cache_dir=str(tmp_path / "cache"))
    opened = Gearag.open(lance_uri, lance=config).index
    assert isinstance(opened, LanceIndex) and opened_with == [config]
    assert opened.collection("passages").config == config  # type: ignore[attr-defined]
    assert _cached_files(tmp_path / "cache") == sorted(HELD_ARRAYS)
    assert len(open_index(tiny_index.path, lance=config).passages) == len(tiny_index.passages)
    assert opened_with == [config]
    with pytest.raises(ConfigError, match=r"^--lance-exact, --lance-cache-rows: only a Lance index"):
        check_lance_settings(tiny_index.path, LanceSearchConfig(exact=True, cache_rows=16))
    check_lance_settings(tiny_index.path, LanceSearchConfig())
    check_lance_settings(lance_uri, config)


def test_retrieve_uses_the_lance_options(cli: Any, lance_uri: str, questions: Path, tmp_path: Path,
                                         opened_with: list[LanceSearchConfig]) -> None:
    cache, run = tmp_path / "cache", tmp_path / "run.jsonl"
    result = cli("retrieve", lance_uri, questions, "--out", run, "--method", "dense", "--lance-exact",
                 "--lance-nprobes", "8", "--lance-cache-dir", cache, "--lance-cache-rows", "100")
    assert result.code == 0, result.stderr
    assert opened_with == [LanceSearchConfig(exact=True, nprobes=8, cache_rows=100, cache_dir=str(cache))]
    assert _cached_files(cache) == sorted(HELD_ARRAYS)
    rows = [json.loads(line) for line in run.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["q1", "q2"] and all(r["passages"] for r in rows)


def test_info_and_ask_take_the_lance_options(cli: Any, lance_uri: str, tmp_path: Path,
                                             opened_with: list[LanceSearchConfig]) -> None:
    result = cli("info", lance_uri, "--lance-cache-dir", tmp_path / "info")
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["backend"] == "lance"
    result = cli("ask", lance_uri, "Who is the father of Stephen Curry?", "--json", "--lance-cache-dir",
                 tmp_path / "ask", "--lance-index-cache-mb", "1.5")
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["passages"]
    assert opened_with == [LanceSearchConfig(cache_dir=str(tmp_path / "info")),
                           LanceSearchConfig(cache_dir=str(tmp_path / "ask"), index_cache_mb=1.5)]
    assert _cached_files(tmp_path / "info") == _cached_files(tmp_path / "ask") == sorted(HELD_ARRAYS)


@pytest.mark.parametrize(("args", "needles"), [
    (["--lance-nprobes", "0"], ["--lance-nprobes must be positive"]),
    (["--lance-refine-factor", "0"], ["--lance-refine-factor must be at least 1"]),
    (["--lance-index-cache-mb", "-1"], ["--lance-index-cache-mb must be positive"]),
    (["--lance-cache-rows", "many"], ["--lance-cache-rows"]),
])
def test_a_bad_lance_value_is_a_one_line_error_before_anything_is_read(
        cli: Any, lance_uri: str, questions: Path, tmp_path: Path, opened_with: list[LanceSearchConfig],
        args: list[str], needles: list[str]) -> None:
    run = tmp_path / "run.jsonl"
    result = cli("retrieve", lance_uri, questions, "--out", run, *args)
    assert result.code == 2, result.stderr
    if args[1] != "many":  # typer's own parse error for a non-number (a usage message, also exit 2)
        assert_clean_error(result, *needles)
    else:
        assert "--lance-cache-rows" in result.stderr
    assert opened_with == [] and not run.exists()


def test_a_lance_option_for_an_index_directory_is_a_one_line_error(
        cli: Any, tiny_index: Index, questions: Path, tmp_path: Path) -> None:
    cache, run = tmp_path / "cache", tmp_path / "run.jsonl"
    for flags, argv in (("--lance-exact", ["retrieve", tiny_index.path, questions, "--out", run, "--lance-exact"]),
                        ("--lance-exact, --lance-cache-dir",
                         ["ask", tiny_index.path, "Who?", "--lance-cache-dir", cache, "--lance-exact"]),
                        ("--lance-cache-dir", ["info", tiny_index.path, "--lance-cache-dir", cache]),
                        ("--lance-nprobes", ["serve", tiny_index.path, "--lance-nprobes", "4"])):
        assert_clean_error(cli(*argv), f"{flags}: only a Lance index takes Lance settings; {tiny_index.path} is")
    assert not cache.exists() and not run.exists()
    assert cli("info", tiny_index.path, "--no-lance-exact").code == 0  # the default value changes nothing


def test_serve_settings_carry_the_lance_options() -> None:
    from gearag.server.settings import ServerSettings

    settings = ServerSettings.from_env(port=9000, lance_exact=True, lance_cache_dir="/tmp/x")
    assert settings.lance == LanceSearchConfig(exact=True, cache_dir="/tmp/x") and settings.port == 9000
    assert ServerSettings().lance == LanceSearchConfig()
    with pytest.raises(ConfigError, match=r"^--lance-metadata-cache-mb must be positive"):
        ServerSettings.from_env(lance_metadata_cache_mb=0)


def test_gearag_serve_opens_the_lance_index_with_its_options(lance_uri: str, tmp_path: Path) -> None:
    """Two `gearag serve` replicas read one Lance index, sharing one --lance-cache-dir."""
    from server.servehelp import Served

    cache = tmp_path / "cache"
    # Warming dense only: the graph methods' warm-up would cache the prepared graph's files too.
    replicas = [Served(Path(lance_uri), None, "--lance-cache-dir", str(cache), "--lance-exact", "--warm-methods",
                       "dense") for _ in range(2)]
    try:
        answers = []
        for replica in replicas:
            reply = httpx.post(replica.base_url + "/v1/retrieve", timeout=30,
                               json={"question": "Who is the father of Stephen Curry?", "method": "dense",
                                     "top_k": 3})
            assert reply.status_code == 200, reply.text
            answers.append([p["id"] for p in reply.json()["passages"]])
        assert answers[0] == answers[1] and len(answers[0]) == 3
    finally:
        codes = [replica.stop()[0] for replica in replicas]
    assert codes == [0, 0]
    assert _cached_files(cache) == sorted(HELD_ARRAYS)  # one copy, used by both


def test_a_resumed_run_with_another_dense_search_starts_over_and_cache_settings_do_not_matter(
        cli: Any, lance_uri: str, questions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gearag.api

    real = gearag.api.make_method

    def interrupting(index: Any, name: str, config: Any = None, **options: Any) -> Any:
        run = real(index, name, config, **options)

        def once(question: str, k: int) -> Any:
            monkeypatch.setattr(gearag.api, "make_method", real)
            if "Beatles" in question:
                raise KeyboardInterrupt
            return run(question, k)

        return once

    def partial(*lance: str) -> Path:
        out = tmp_path / f"run{len(list(tmp_path.glob('run*.jsonl*')))}.jsonl"
        monkeypatch.setattr(gearag.api, "make_method", interrupting)
        assert cli("retrieve", lance_uri, questions, "--out", out, "--method", "dense", *lance).code == 130
        return out

    out = partial("--lance-nprobes", "8")
    resumed = cli("retrieve", lance_uri, questions, "--out", out, "--method", "dense", "--lance-nprobes", "8",
                  "--lance-cache-rows", "10", "--lance-cache-dir", tmp_path / "cache")
    assert resumed.code == 0 and "resuming: 1 of 2" in resumed.stderr, resumed.stderr
    out = partial("--lance-nprobes", "8")
    restarted = cli("retrieve", lance_uri, questions, "--out", out, "--method", "dense", "--lance-exact")
    assert restarted.code == 0 and "discarded 1 rows" in restarted.stderr, restarted.stderr
    assert "lance" in restarted.stderr
