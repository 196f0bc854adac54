"""``gearag index --ray``: argument handling and the error without the extra (these need no Ray)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_clean_error, write_jsonl
from gearag.cli import _bare_ray
from gearag.distributed.config import RayConfig, is_address
from gearag.errors import ConfigError


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "corpus.jsonl", [{"title": "Utah Jazz", "text": "The Utah Jazz play in Utah."}])


def test_ray_without_the_extra_is_a_one_line_error(cli, small_corpus: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    monkeypatch.setitem(sys.modules, "ray.data", None)
    out = tmp_path / "index"
    result = cli("index", small_corpus, "--out", out, "--ray")
    assert_clean_error(result, "--ray", "pip install 'gearag[ray]'")
    assert not out.exists()


def test_ray_options_need_ray(cli, small_corpus: Path, tmp_path: Path) -> None:
    result = cli("index", small_corpus, "--out", tmp_path / "index", "--ray-workers", 2)
    assert_clean_error(result, "--ray-workers", "only with --ray")


def test_bad_ray_address_is_a_one_line_error(cli, small_corpus: Path, tmp_path: Path) -> None:
    result = cli("index", small_corpus, "--out", tmp_path / "index", "--ray=not an address")
    assert_clean_error(result, "--ray", "not an address")


@pytest.mark.parametrize(("argv", "expected"), [
    (["index", "c.json", "--ray"], ["index", "c.json", "--ray", "local"]),
    (["index", "c.json", "--ray", "--out", "x"], ["index", "c.json", "--ray", "local", "--out", "x"]),
    (["index", "--ray", "c.json", "--out", "x"], ["index", "--ray", "local", "c.json", "--out", "x"]),
    (["index", "c.json", "--ray", "auto"], ["index", "c.json", "--ray", "auto"]),
    (["index", "c.json", "--ray", "ray://head:10001"], ["index", "c.json", "--ray", "ray://head:10001"]),
    (["index", "c.json", "--ray", "10.0.0.5:6379"], ["index", "c.json", "--ray", "10.0.0.5:6379"]),
    (["retrieve", "i", "q.json", "--ray"], ["retrieve", "i", "q.json", "--ray"]),  # only `index` has --ray
])
def test_bare_ray_means_a_local_instance(argv: list[str], expected: list[str]) -> None:
    assert _bare_ray(argv) == expected


def test_ray_config_checks_the_address() -> None:
    assert is_address("auto") and is_address("local") and is_address("ray://h:1") and is_address("h:6379")
    assert not is_address("corpus.json")
    with pytest.raises(ConfigError, match="--ray"):
        RayConfig(address="corpus.json")


def test_import_and_help_do_not_import_ray() -> None:
    code = (
        "import sys, gearag, gearag.distributed\n"
        "from gearag.cli import main\n"
        "main(['--help']); main(['index', '--help'])\n"
        "assert not [m for m in sys.modules if m == 'ray' or m.startswith('ray.')], 'ray imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "--ray" in proc.stdout


class _Failing:
    key = "failing-v1"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def extract(self, passages):
        raise self.error


def _batch() -> dict:
    import numpy as np

    return {"row": np.array([4, 5]), "id": np.array(["a", "b"], dtype=object),
            "title": np.array(["Utah Jazz", "Liverpool"], dtype=object), "text": np.array(["x", "y"], dtype=object)}


def test_a_batch_error_names_its_rows_and_first_passage() -> None:
    from gearag.distributed.ray_executor import _ExtractWorker
    from gearag.errors import DataError, ExecutorError

    # A transient failure raises (Ray Data retries the batch)...
    with pytest.raises(ExecutorError, match=r"rows 4-5 \(first passage 'Utah Jazz'\) failed: boom"):
        _ExtractWorker(_Failing(RuntimeError("boom")))(_batch())
    # ...bad input comes back as the batch's error, which the driver raises without retrying.
    out = _ExtractWorker(_Failing(DataError("no OpenIE result for 'Utah Jazz'")))(_batch())
    assert list(out["error"]) == ["extraction batch of rows 4-5 (first passage 'Utah Jazz'): "
                                  "no OpenIE result for 'Utah Jazz'", ""]
    from gearag.distributed.ray_executor import _extracted_rows

    with pytest.raises(ExecutorError, match="no OpenIE result"):
        list(_extracted_rows(iter([out]), None))
