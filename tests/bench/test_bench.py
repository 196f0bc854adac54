"""``gearag bench`` end to end on a real 2Wiki slice: index build, rows, the Table-2 Markdown, JSON and both PNGs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_clean_error, run_gearag, write_jsonl, write_wiki_slice
from gearag.bench import report
from gearag.bench.datasets import pick_datasets, shared_datasets
from gearag.bench.grid import grid, select
from gearag.errors import ConfigError, OutputError

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def slice_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_wiki_slice(tmp_path_factory.mktemp("bench-data"), 40, 5, "wiki_corpus.json", "wiki.json")


def test_bench_end_to_end_writes_the_table_the_numbers_and_both_figures(
    slice_files: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, questions = slice_files
    out = tmp_path / "bench"
    result = run_gearag("bench", "--corpus", corpus, "--questions", questions, "--limit", "5", "--out", out,
                        "--methods", "bm25,syncge,hipporag,hipporag2,ircot,gear", "--no-ablations", timeout=600)
    assert result.code == 0, result.stderr
    md = (out / "results.md").read_text()
    assert "| method | wiki (5 q) R@2 | wiki (5 q) R@5 | wiki (5 q) R@10 | wiki (5 q) R@15 |" in md
    for label in ("| bm25 |", "| bm25 + SyncGE-offline |", "| HippoRAG |", "| HippoRAG 2 |", "| IRCoT (bm25) |",
                  "| GEAR-offline (bm25) |"):
        assert label in md, label
    assert "### Cost" in md and "### Index builds" in md
    assert (out / "recall_by_iteration.png").read_bytes()[:8] == PNG
    assert not (out / "tokens_by_iteration.png").exists()  # offline: no tokens, so no empty figure
    data = json.loads((out / "results.json").read_text())
    (run,) = data["runs"]
    assert run["dataset"] == "wiki" and run["max_steps"] == 2
    assert run["index"]["counts"]["passages"] >= 40 and run["index"]["seconds"] > 0
    assert run["index"]["peak_rss_mb"] > 0
    rows = {r["label"]: r for r in run["rows"]}
    assert all(r["n"] == 5 and set(r["recall"]) == {"2", "5", "10", "15"} for r in rows.values())
    assert rows["IRCoT (bm25)"]["options"] == {"base": "bm25", "max_steps": 2}
    assert "by_iteration" in rows["IRCoT (bm25)"] and "by_iteration" in rows["GEAR-offline (bm25)"]
    assert rows["IRCoT (bm25)"]["mean_tokens"] is None  # offline: no tokens
    # A second run reuses the index.
    again = run_gearag("bench", "--corpus", corpus, "--questions", questions, "--limit", "2", "--out", out,
                       "--methods", "bm25", "--no-ablations", timeout=300)
    assert again.code == 0, again.stderr
    assert json.loads((out / "results.json").read_text())["runs"][0]["index"]["reused"] is True
    # bm25 alone has no iterations: the first run's figure, which described that run, is gone.
    assert not (out / "recall_by_iteration.png").exists()
    assert set(json.loads((out / ".gearag-written.json").read_text())["files"]) == {"results.md", "results.json"}


def _stepped_results(tokens: float) -> dict:
    def row(label: str, base: float) -> dict:
        curve = [{"iteration": i, "R@15": base + i} for i in (1, 2)]
        return {"label": label, "n": 10, "recall": {"15": base + 2}, "median_ms": 1.0, "by_iteration": {"curve": curve},
                "tokens_by_iteration": [{"iteration": i, "mean_tokens": tokens * i} for i in (1, 2)]}
    return {"runs": [{"dataset": ds, "extractor": "spacy", "embedder": "wordllama", "index": {},
                      "rows": [row("GEAR", 50), row("IRCoT", 40),
                               {"label": "bm25", "n": 10, "recall": {"15": 40.0}, "median_ms": 0.3}]}
                     for ds in ("musique", "hotpotqa")]}


def test_figures_draw_a_panel_per_dataset_and_tokens_only_when_a_model_spent_them() -> None:
    offline = report.plot(_stepped_results(0.0))
    assert set(offline) == {report.RECALL_FIGURE} and offline[report.RECALL_FIGURE][:8] == PNG
    with_llm = report.plot(_stepped_results(120.0))
    assert set(with_llm) == {report.RECALL_FIGURE, report.TOKENS_FIGURE}
    assert report.plot({"runs": [{"dataset": "d", "extractor": "spacy", "embedder": "wordllama",
                                  "rows": [{"label": "bm25", "n": 3}]}]}) == {}


def test_bench_rejects_unknown_names(tmp_path: Path) -> None:
    assert_clean_error(run_gearag("bench", "--datasets", "nope", "--out", tmp_path), "unknown dataset")
    with pytest.raises(ConfigError, match="unknown method"):
        select(grid(shared_datasets()["musique"], "wordllama"), "telepathy")
    with pytest.raises(ConfigError, match="go together"):
        pick_datasets(None, tmp_path / "c.json", None)


def test_grid_follows_table_two_and_the_datasets_step_budgets() -> None:
    sets = shared_datasets()
    rows = grid(sets["musique"], "wordllama")
    labels = [r.label for r in rows]
    assert labels[:3] == ["bm25", "bm25 + NaiveGE", "bm25 + SyncGE-offline"]
    for name in ("IRCoT (bm25)", "HippoRAG", "HippoRAG 2", "HippoRAG w/ IRCoT", "GEAR-offline (bm25)"):
        assert name in labels
    stepped = {r.label: r.options.get("max_steps") for r in rows if r.method in ("gear", "ircot", "hipporag-ircot")}
    assert set(stepped.values()) == {4}
    assert {r.options.get("max_steps") for r in grid(sets["2wiki"], "wordllama") if r.method == "ircot"} == {2}


@pytest.fixture
def small_set(tmp_path: Path) -> tuple[Path, Path]:
    corpus = write_jsonl(tmp_path / "small_corpus.jsonl", [{"title": "A", "text": "Alpha beta."},
                                                          {"title": "B", "text": "Beta gamma."}])
    questions = write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "question": "Alpha?", "gold": ["A"]}])
    return corpus, questions


def _bench(cli, small_set: tuple[Path, Path], *argv: object):
    corpus, questions = small_set
    return cli("bench", "--corpus", corpus, "--questions", questions, "--methods", "bm25", "--no-ablations", *argv)


def test_bench_out_refuses_a_folder_holding_results_gearag_did_not_write(cli, small_set: tuple[Path, Path],
                                                                         tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "results.md").write_text("my results\n", encoding="utf-8")
    assert_clean_error(_bench(cli, small_set, "--out", out), "results.md", "did not write", "another --out")
    assert (out / "results.md").read_text(encoding="utf-8") == "my results\n"
    assert sorted(p.name for p in out.iterdir()) == ["results.md"]  # refused before any index was built
    link = tmp_path / "link"
    link.symlink_to(out)
    assert_clean_error(_bench(cli, small_set, "--out", link), "results.md", "did not write")
    (out / "results.md").unlink()
    (tmp_path / "figure.png").write_bytes(PNG)
    (out / "tokens_by_iteration.png").symlink_to(tmp_path / "figure.png")
    assert_clean_error(_bench(cli, small_set, "--out", out), "tokens_by_iteration.png is a symbolic link")
    (out / "tokens_by_iteration.png").unlink()
    (out / "results.json").symlink_to(small_set[0])  # writing there would replace the corpus
    assert_clean_error(_bench(cli, small_set, "--out", out), "results.json", "input file")
    assert (tmp_path / "figure.png").read_bytes() == PNG and small_set[0].read_text().startswith("{")


@pytest.mark.parametrize("where", ["corpus", "file", "/dev/stdout"])
def test_bench_out_that_is_not_a_folder_is_refused_before_work(cli, small_set: tuple[Path, Path], tmp_path: Path,
                                                               where: str) -> None:
    target = {"corpus": small_set[0], "file": tmp_path / "a-file"}.get(where, Path(where))
    if where == "file":
        target.write_text("x\n", encoding="utf-8")
    before = target.read_bytes() if target.is_file() else None
    assert_clean_error(_bench(cli, small_set, "--out", target), "--out", "is a file" if before else "special file")
    if before is not None:
        assert target.read_bytes() == before


def test_bench_index_dir_is_checked_before_work(cli, small_set: tuple[Path, Path], tmp_path: Path) -> None:
    assert_clean_error(_bench(cli, small_set, "--out", tmp_path / "o", "--index-dir", small_set[1]),
                       "--index-dir", "is a file")
    indices = tmp_path / "indices"
    (indices / "small-spacy-wordllama").mkdir(parents=True)  # the folder this run's index would be
    (indices / "small-spacy-wordllama" / "thesis.tex").write_text("mine\n", encoding="utf-8")
    assert_clean_error(_bench(cli, small_set, "--out", tmp_path / "o", "--index-dir", indices),
                       "--index-dir", "small-spacy-wordllama", "move it away")
    assert (indices / "small-spacy-wordllama" / "thesis.tex").read_text(encoding="utf-8") == "mine\n"
    assert not (tmp_path / "o").exists()


def test_the_report_is_written_into_a_folder_it_may_write_again(tmp_path: Path) -> None:
    results = {"command": "gearag bench", "machine": "m", "date": "d", "limit": None,
               **_stepped_results(10.0)}
    out = tmp_path / "out"
    written = report.write(results, report.claim(out))
    assert sorted(p.name for p in written) == sorted(report.FILES)
    assert (out / report.RECALL_FIGURE).read_bytes()[:8] == PNG
    report.write(results, report.claim(out))  # a rerun into its own folder
    (out / report.RESULTS_MD).write_text("edited\n", encoding="utf-8")
    with pytest.raises(OutputError, match=r"results\.md"):
        report.claim(out)


def test_rows_run_by_an_llm_engine_say_so_in_their_label() -> None:
    from gearag.bench.run import BenchConfig, _with_engine

    rows = select(grid(shared_datasets()["hotpotqa"], "wordllama", ablations=False), "bm25,gear,ircot")
    local = {r.label: r.options for r in _with_engine(rows, BenchConfig(Path("o"), engine="local"))}
    assert local["GEAR-local (bm25)"]["engine"] == "local" and local["IRCoT (bm25) [local]"]["engine"] == "local"
    assert "bm25" in local  # its engine only answers (when asked to): the label stays
    offline = [r.label for r in _with_engine(rows, BenchConfig(Path("o"), engine="offline"))]
    assert "GEAR-offline (bm25)" in offline


def test_the_llm_preset_selects_every_row_an_llm_engine_plays() -> None:
    from gearag.bench.run import BenchConfig, _with_engine

    rows = _with_engine(select(grid(shared_datasets()["musique"], "wordllama"), "llm"),
                        BenchConfig(Path("o"), engine="local"))
    assert [r.label for r in rows] == ["bm25 + SyncGE-local", "IRCoT (bm25) [local]", "HippoRAG 2 [local]",
                                       "GEAR-local (bm25)", "GEAR-local, Alg. 1 + Eq. 9 (PPR off)"]
    assert all(r.options["engine"] == "local" for r in rows)
    assert rows[-1].options | {"graph": "beams", "final": "rrf"} == rows[-1].options
    no_ablations = select(grid(shared_datasets()["musique"], "wordllama", ablations=False), "llm")
    assert len(no_ablations) == 4  # the paper-as-printed row is an ablation row


def _report_module():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_report", Path(__file__).parents[2] / "benchmarks/report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_results_block_keeps_the_latency_of_the_summarys_indices_only() -> None:
    md = ("head\n\n### Recall · spacy\n\nr1\n\n### Cost · spacy · wordllama\n\nc1\n\n"
          "### Recall · openie\n\nr2\n\n### Cost · openie · wordllama\n\nc2\n\n### Index builds\n\nb\n")
    kept = _report_module().main_costs(md)
    assert "c1" in kept and "c2" not in kept and all(part in kept for part in ("head", "r1", "r2", "b"))


def test_the_llm_block_puts_each_row_beside_its_offline_run() -> None:
    module = _report_module()

    def run(rows: list[dict]) -> dict:
        return {"command": "gearag bench", "machine": "m", "date": "d",
                "runs": [{"dataset": "hotpotqa", "max_steps": 2, "rows": rows}]}

    def row(label: str, engine: str, r5: float, **extra: object) -> dict:
        return {"label": label, "options": {"engine": engine}, "recall": {"5": r5, "15": 90.0}, "n": 20,
                "median_ms": 1500.0, "mean_tokens": None, **extra}

    offline = run([row("bm25", "offline", 60.0), row("GEAR-offline (bm25)", "offline", 80.0, EM=25.0, F1=30.0)])
    local = run([row("GEAR-local (bm25)", "local", 70.0, EM=0.0, F1=4.0, mean_tokens=8000.0,
                     fallbacks={"read": {"replies": 4, "offline": 3}})])
    lines = [line for line in module.llm_tables(offline, local).splitlines() if line.startswith("| GEAR")]
    assert lines == ["| GEAR (bm25) | offline | 80.0 / 90.0 | 25.0 / 30.0 | — | 1.50 | — |",
                     "| GEAR (bm25) | local | 70.0 / 90.0 | 0.0 / 4.0 | 8,000 | 1.50 | read 3 of 4 |"]
    assert "| bm25 | offline | 60.0 / 90.0 |" in module.llm_tables(offline, local)


def test_bench_builds_hand_the_reply_bounds_to_their_child_process(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from gearag.bench import build as bench_build

    seen: list[dict[str, str] | None] = []

    def child(argv: list[str], log: object, extra_env: dict[str, str] | None = None) -> tuple[int, str, list[str]]:
        seen.append(extra_env)
        return 2, "", ["error: stopped here"]

    monkeypatch.setattr(bench_build, "_run_child", child)
    ds = shared_datasets()["hotpotqa"]
    for bounds in ("extract=77", None):
        with pytest.raises(ConfigError, match="stopped here"):
            bench_build.build(ds, "spacy", "wordllama", tmp_path, force=True, llm_max_tokens=bounds)
    assert seen == [{"GEARAG_LLM_MAX_TOKENS": "extract=77"}, {}]
