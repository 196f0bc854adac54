"""README.md's examples run as written: every ```python block runs, every gearag line of a ```bash
block — in the README and in docs/, where its sections moved — parses (its command and options exist, its arguments
fit), on the demo corpus, in seconds."""

from __future__ import annotations

import contextlib
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO

README = REPO / "README.md"


#: The pages whose ```bash blocks are checked: the README and the docs its sections moved to.
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]


def _blocks(language: str, pages: list[Path] | None = None) -> list[str]:
    """The ```language blocks of ``pages`` (default: the README alone)."""
    return [block for page in (pages or [README])
            for block in re.findall(rf"^```{language}\n(.*?)^```", page.read_text(encoding="utf-8"),
                                    flags=re.S | re.M)]


def gearag_lines(block: str) -> Iterator[list[str]]:
    """The argv of each ``gearag ...`` command of a bash block (continuations joined, comments and what follows
    ``&&`` or ``;`` split off)."""
    for line in block.replace("\\\n", " ").splitlines():
        words: list[str] = []
        for word in [*shlex.split(line, comments=True), "&&"]:
            if word not in ("&&", ";", "||"):
                words.append(word)
                continue
            if words[:1] == ["gearag"]:
                yield words[1:]
            words = []


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as the README's examples expect it: corpus.json (the demo corpus) and `make demo`'s
    demo_out/index, built with gearag.demo's data as tests/server does."""
    from gearag.data import load_corpus
    from gearag.demo import write_demo_data
    from gearag.indexing import build_index

    root = tmp_path_factory.mktemp("readme")
    corpus, _ = write_demo_data(root / "demo_out")
    passages = load_corpus(corpus)
    (root / "corpus.json").write_text(json.dumps([{"title": p.title, "text": p.text} for p in passages]),
                                      encoding="utf-8")
    build_index(passages, root / "demo_out" / "index")
    return root


@contextlib.contextmanager
def _in_process_openai(monkeypatch: pytest.MonkeyPatch, index: Path) -> Iterator[None]:
    """``openai.OpenAI`` talking to ``gearag serve INDEX`` in this process (its own base URL, any port), while the
    block runs. The service stops with it: left running, its threads (the look for an index update every 2 s,
    the call pool) would outlive the test and allocate during later tests' tracemalloc measurements."""
    import openai
    from fastapi.testclient import TestClient

    from gearag.api import Gearag
    from gearag.server import ServerSettings, create_app

    with TestClient(create_app(Gearag.open(index), ServerSettings(access_log=False, warm_methods=""))) as client:

        class InProcess(openai.OpenAI):
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(**kwargs, http_client=client)

        monkeypatch.setattr(openai, "OpenAI", InProcess)
        yield


@pytest.mark.parametrize("number", range(len(_blocks("python"))))
def test_python_blocks_run_as_written(number: int, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    block = _blocks("python")[number]
    monkeypatch.chdir(workdir)
    serving = (_in_process_openai(monkeypatch, workdir / "demo_out" / "index") if "openai" in block
               else contextlib.nullcontext())
    with serving:
        exec(compile(block, f"README.md python block {number + 1}", "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out.splitlines()
    assert printed, "the example prints nothing"
    assert "[]" not in [line.strip() for line in printed], f"the example prints an empty list:\n{block}"
    if "openai" in block:
        assert printed[0] == "1982"  # the demo question's answer, with its sources after it


def test_the_python_blocks_are_the_ones_tested() -> None:
    assert len(_blocks("python")) >= 2 and any("OpenAI" in b for b in _blocks("python"))


def test_every_gearag_line_of_a_bash_block_parses() -> None:
    """Each command exists, each option it names is one of its options, and its arguments fit (click parses the
    line without running it)."""
    import typer

    from gearag.cli import _bare_ray, app

    group = typer.main.get_command(app)
    seen = 0
    for block in _blocks("bash", PAGES):
        for argv in gearag_lines(block):
            argv = _bare_ray(argv)
            ctx = group.make_context("gearag", list(argv), resilient_parsing=True)
            name, command, rest = group.resolve_command(ctx, list(argv))
            assert command is not None, argv
            try:
                command.make_context(name, rest, parent=ctx)
            except Exception as exc:  # a click usage error: an unknown option, a missing or extra argument
                pytest.fail(f"README or docs/: gearag {shlex.join(argv)}: {exc}")
            seen += 1
    assert seen >= 30  # every section's commands, not an empty match
