"""Index builds on a local 2-worker Ray instance equal the single-process build.

One Ray instance serves the whole module (starting one takes seconds). The
real-data test uses spaCy + wordllama on a 2Wiki slice; the fault tests use
an instant extractor with planted faults (ray_faults.py) so that the time
goes to Ray, not to parsing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed")
pytest.importorskip("ray.data", reason="the ray extra is not installed")

import ray_faults  # noqa: E402
from ray_faults import FaultyExtractor  # noqa: E402

from conftest import assert_clean_error, wiki_slice, write_jsonl  # noqa: E402
from gearag.config import IndexConfig  # noqa: E402
from gearag.data import load_corpus  # noqa: E402
from gearag.distributed import RayConfig, RayExecutor  # noqa: E402
from gearag.extract.base import register_extractor  # noqa: E402
from gearag.indexing import build_index, work_dir_for  # noqa: E402
from gearag.store import checksum  # noqa: E402
from gearag.store.checkpoint import checkpoint_name  # noqa: E402

#: Manifest fields that record when and how a build ran, not what it built.
RUN_FIELDS = {"created", "build_seconds", "build_executor", "files"}


def built(manifest: dict) -> dict:
    """The manifest without run fields, and without the per-step timings stages keep (``seconds``) at any depth."""
    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "seconds"}
        return value

    return {k: strip(v) for k, v in manifest.items() if k not in RUN_FIELDS}


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    ray.cloudpickle.register_pickle_by_value(ray_faults)  # the workers cannot import the tests
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 60 real 2Wiki passages (the first 54 plus the gold passages of 4 questions)."""
    rows, _ = wiki_slice(54, 4)
    return write_jsonl(tmp_path_factory.mktemp("corpus") / "corpus.jsonl", rows)


def _executor(**changes: Any) -> RayExecutor:
    return RayExecutor(RayConfig(**{"workers": 2, "batch_size": 8, "retries": 2, **changes}))


def assert_same_index(a: Path, b: Path) -> None:
    """Same files with the same checksums, and the same manifest apart from the run's timing and executor."""
    ma = json.loads((a / "manifest.json").read_text(encoding="utf-8"))
    mb = json.loads((b / "manifest.json").read_text(encoding="utf-8"))
    assert sorted(ma["files"]) == sorted(mb["files"])
    differing = [f for f in ma["files"] if not checksum.same_content(ma["files"][f], mb["files"][f])]
    assert differing == []
    assert built(ma) == built(mb)
    assert ma["counts"]["triples"] > 0


@pytest.mark.slow
def test_ray_build_equals_single_process_build(ray_instance: None, corpus: Path, tmp_path: Path) -> None:
    passages = load_corpus(corpus)
    assert len(passages) >= 60
    local = build_index(passages, tmp_path / "local")  # spaCy + wordllama, the defaults
    with _executor() as executor:
        distributed = build_index(passages, tmp_path / "ray", executor=executor)
    assert distributed.manifest["build_executor"] == {"name": "ray", "address": "local", "workers": 2,
                                                      "batch_size": 8, "retries": 2}
    assert local.manifest["build_executor"] == {"name": "local"}
    assert_same_index(tmp_path / "local", tmp_path / "ray")
    assert ray.is_initialized()  # the executor left the instance it did not start running


@pytest.fixture(scope="module")
def faulty_reference(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The single-process build with the fault-free extractor."""
    out = tmp_path_factory.mktemp("reference") / "index"
    build_index(load_corpus(corpus), out, IndexConfig.of(extractor="faulty"),
                extractor=FaultyExtractor(out.parent))
    return out


def test_failed_batch_and_killed_worker_are_retried(ray_instance: None, corpus: Path, faulty_reference: Path,
                                                     tmp_path: Path) -> None:
    passages = load_corpus(corpus)
    log = tmp_path / "extracted.log"
    extractor = FaultyExtractor(tmp_path, log=log, raise_once=passages[5].title, kill_once=passages[40].title)
    with _executor() as executor:
        build_index(passages, tmp_path / "index", IndexConfig.of(extractor="faulty"), extractor=extractor,
                    executor=executor)
    # Both faults happened: one batch raised, one worker was SIGKILLed in the middle of its batch...
    assert (tmp_path / "raised").exists() and (tmp_path / "killed").exists()
    # ...and the build is still the single-process one: no row lost, none wrong.
    assert_same_index(faulty_reference, tmp_path / "index")
    extracted = log.read_text(encoding="utf-8").splitlines()
    assert set(extracted) == {p.title for p in passages}


def test_permanent_failure_then_resume_skips_checkpointed_rows(ray_instance: None, cli, corpus: Path,
                                                                faulty_reference: Path, tmp_path: Path) -> None:
    passages = load_corpus(corpus)
    out = tmp_path / "index"
    ckpt = work_dir_for(out) / checkpoint_name(FaultyExtractor.key)
    last = passages[-1].title
    # The last passage fails on every attempt, once the driver has checkpointed 16 rows (so that the
    # interrupted build has some to keep, whatever order the batches finish in).
    failing = FaultyExtractor(tmp_path, fail_always=last, wait_for=ckpt, wait_lines=16)
    register_extractor("faulty", lambda arg, options: failing)
    result = cli("index", corpus, "--out", out, "--extractor", "faulty", "--ray", "--ray-batch-size", 8,
                 "--ray-retries", 1)
    line = assert_clean_error(result, last, "rows", "planted permanent failure")
    assert "extraction batch" in line
    assert not out.exists()
    kept = [json.loads(row)["h"] for row in ckpt.read_text(encoding="utf-8").splitlines()]
    assert 16 <= len(kept) < len(passages)

    log = tmp_path / "resumed.log"
    register_extractor("faulty", lambda arg, options: FaultyExtractor(tmp_path, log=log))
    result = cli("index", corpus, "--out", out, "--extractor", "faulty", "--ray", "--ray-batch-size", 8)
    assert result.code == 0, result.stderr
    assert "on Ray (local, 2 workers)" in result.stderr
    resumed = log.read_text(encoding="utf-8").splitlines()
    assert len(resumed) == len(passages) - len(kept)  # nothing extracted twice
    from gearag.store.checkpoint import passage_hash

    titles_kept = {p.title for p in passages if passage_hash(p) in set(kept)}
    assert not titles_kept & set(resumed)
    assert_same_index(faulty_reference, out)
    assert not work_dir_for(out).exists()


def test_llm_extraction_on_ray_pays_each_passage_once(ray_instance: None, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from gearag.extract.llm import make_llm_extractor
    from gearag.extract.run import extract_with_checkpoint
    from gearag.llm import LLMConfig
    from gearag.model import Passage
    from llm_server import Reply, ScriptedServer

    monkeypatch.setenv("GEARAG_PROGRESS", "0")
    passages = [Passage(f"p{i}", f"Doc {i}", f"PASSAGE-{i:03d} tells that E{i} has index {i}.") for i in range(20)]

    def reply(body: dict) -> Reply:
        i = int(re.findall(r"PASSAGE-(\d{3})", body["messages"][-1]["content"])[-1])
        return Reply("```json\n" + json.dumps({"named_entities": [f"E{i}"], "triples": [[f"E{i}", "has index",
                                                                                           str(i)]]}) + "\n```")

    with ScriptedServer(responder=reply) as server:
        config = LLMConfig(model="test-model", base_url=server.base_url, api_key="k", timeout=5.0, max_retries=0,
                           concurrency=2, cache_path=None)
        extractor = make_llm_extractor("", {"llm_config": config})
        with _executor(batch_size=4) as executor:
            result = extract_with_checkpoint(passages, extractor, tmp_path, executor=executor)
            assert [[list(f) for f in facts] for facts in result] == [[[f"E{i}", "has index", str(i)]]
                                                                       for i in range(20)]
            assert len(server.requests) == 20
            # The workers' token usage and parse counts came back to the driver's extractor.
            assert extractor.ledger.snapshot(role="extract").requests == 20
            assert extractor.parse_stats.replies == 20
            # Rerun (a resumed build): everything is in the checkpoint, nothing is sent.
            again = extract_with_checkpoint(passages, extractor, tmp_path, executor=executor)
        assert again == result and len(server.requests) == 20
        extractor.close()
