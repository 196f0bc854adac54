"""Shared fixtures: the real data directory, a stub triple extractor, a tiny index and a CLI runner."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gearag.config import IndexConfig
from gearag.model import Passage

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Caches (the LLM cache, local copies of Lance indices' files) go to a directory of this run, never ~/.cache:
    under pytest's own temporary root, which keeps the last few runs' and prunes older ones, so a killed run leaves
    nothing behind for good."""
    os.environ["GEARAG_CACHE_DIR"] = str(tmp_path_factory.mktemp("gearag-cache"))


def wiki_slice(n_passages: int, n_questions: int) -> tuple[list[dict], list[dict]]:
    """The first ``n_passages`` 2Wiki passages plus the gold passages of the first ``n_questions`` questions."""
    corpus = json.loads((DATA / "2wikimultihopqa" / "2wikimultihopqa_corpus.json").read_text(encoding="utf-8"))
    questions = json.loads((DATA / "2wikimultihopqa" / "2wikimultihopqa.json").read_text(encoding="utf-8"))
    questions = questions[:n_questions]
    by_title = {p["title"]: p for p in corpus}
    rows = corpus[:n_passages]
    have = {p["title"] for p in rows}
    for q in questions:
        for title in q["supporting_facts"]:
            if title not in have:
                rows.append(by_title[title])
                have.add(title)
    return rows, questions


def write_wiki_slice(directory: Path, n_passages: int, n_questions: int, corpus_name: str = "corpus.json",
                     questions_name: str = "questions.json") -> tuple[Path, Path]:
    """:func:`wiki_slice` written as a corpus file and a questions file in ``directory``."""
    rows, questions = wiki_slice(n_passages, n_questions)
    corpus, qfile = directory / corpus_name, directory / questions_name
    corpus.write_text(json.dumps(rows), encoding="utf-8")
    qfile.write_text(json.dumps(questions), encoding="utf-8")
    return corpus, qfile
VENV_BIN = Path(sys.executable).parent

_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z]+\b")


class StubExtractor:
    """Yields ``(title, "mentions", Word)`` for each distinct capitalised word of a passage.

    Records every passage it is asked about, so tests can count extractions.
    ``fail_after=n`` raises ``fail_with`` once ``n`` passages have been yielded
    (a crash or Ctrl-C in the middle of a build).
    """

    def __init__(self, key: str = "stub-v1", *, fail_after: int | None = None,
                 fail_with: type[BaseException] = RuntimeError) -> None:
        self.key = key
        self.fail_after = fail_after
        self.fail_with = fail_with
        self.seen: list[Passage] = []

    @staticmethod
    def triples_for(passage: Passage) -> list[tuple[str, str, str]]:
        words = list(dict.fromkeys(_CAPITALISED.findall(passage.text)))
        return [(passage.title, "mentions", w) for w in words if w != passage.title]

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[tuple[str, str, str]]]:
        for n, passage in enumerate(passages):
            if self.fail_after is not None and n >= self.fail_after:
                raise self.fail_with(f"stub extractor stopped after {n} passages")
            self.seen.append(passage)
            yield self.triples_for(passage)


def use_stub_extractor(extractor: StubExtractor) -> None:
    """Make ``--extractor stub`` (and ``make_extractor("stub")``) return ``extractor``."""
    from gearag.extract.base import register_extractor

    register_extractor("stub", lambda arg, options: extractor)


def write_jsonl(path: Path, rows: Sequence[object]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


#: A small corpus where each question has one obviously right passage, lexically and semantically.
TINY = [
    ("Stephen Curry", "Stephen Curry is an American basketball player for the Golden State Warriors. "
     "He played college basketball for the Davidson Wildcats."),
    ("Dell Curry", "Dell Curry is a former basketball player and the father of Stephen Curry. He was drafted "
     "by the Utah Jazz."),
    ("Utah Jazz", "The Utah Jazz are a professional basketball team based in Salt Lake City, Utah."),
    ("The Beatles", "The Beatles were an English rock band formed in Liverpool in 1960, with John Lennon and "
     "Paul McCartney."),
    ("Liverpool", "Liverpool is a port city in North West England on the River Mersey."),
    ("Photosynthesis", "Photosynthesis is the process by which green plants use sunlight, water and carbon "
     "dioxide to make glucose and oxygen."),
    ("Mount Everest", "Mount Everest is the highest mountain on Earth, in the Himalayas on the border of Nepal "
     "and China."),
    ("Volcano", "A volcano is a rupture in the crust of a planet through which lava, ash and gases escape."),
]


def tiny_passages() -> list[Passage]:
    return [Passage(f"t{i}", title, text) for i, (title, text) in enumerate(TINY)]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    assert DATA.is_dir(), f"shared data not found at {DATA}"
    return DATA


def index_of_rows(directory: Path, rows: Sequence[tuple[str, str]]):  # type: ignore[no-untyped-def]
    """An index over ``(title, text)`` rows with ids ``p0, p1, ...`` (the agents' small fixture corpora)."""
    from gearag.indexing import build_index

    return build_index([Passage(f"p{i}", t, x) for i, (t, x) in enumerate(rows)], directory / "index")


@pytest.fixture(scope="session")
def demo_rows_index(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The demo's passages (:data:`gearag.demo.PASSAGES`) indexed once per session."""
    from gearag.demo import PASSAGES

    return index_of_rows(tmp_path_factory.mktemp("demo-rows"), PASSAGES)


@pytest.fixture(scope="session")
def tiny_index(tmp_path_factory: pytest.TempPathFactory):
    """An index of :data:`TINY` built with the stub extractor and wordllama (shared, read-only)."""
    from gearag.indexing import build_index

    out = tmp_path_factory.mktemp("tiny") / "index"
    return build_index(tiny_passages(), out, IndexConfig.of(extractor="stub"), extractor=StubExtractor())


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run ``gearag.cli.main(argv)`` in-process; returns exit code and captured output."""
    from gearag.cli import main

    def run(*argv: object) -> CliResult:
        capsys.readouterr()
        code = main([str(a) for a in argv])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def run_gearag(*argv: object, timeout: float = 120, env: dict[str, str] | None = None) -> CliResult:
    """Run the installed ``gearag`` console script in a subprocess."""
    exe = VENV_BIN / "gearag"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "gearag.cli"]
    proc = subprocess.run(
        cmd + [str(a) for a in argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "GEARAG_PROGRESS": "0", **(env or {})},
        stdin=subprocess.DEVNULL,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def assert_clean_error(result: CliResult, *needles: str) -> str:
    """Exit code 2, no traceback, and a single ``error:`` line containing every needle."""
    assert result.code == 2, (result.code, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle.lower() in errors[0].lower(), (needle, errors[0])
    return errors[0]


def isolate_llm_env(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    """LLM tests: no response cache (every call must reach the server), no retries, nothing from the caller's env."""
    for var in ("GEARAG_LLM_BASE_URL", "OPENAI_BASE_URL", "GEARAG_LLM_MODEL", "GEARAG_LLM_HEADERS",
                "GEARAG_LLM_PRICES", "GEARAG_PROMPTS", "GEARAG_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GEARAG_LLM_CACHE", "0")
    monkeypatch.setenv("GEARAG_CACHE_DIR", str(cache_dir))  # in case the flag is ignored
    monkeypatch.setenv("GEARAG_LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("GEARAG_LLM_TIMEOUT", "20")
    monkeypatch.setenv("GEARAG_PROGRESS", "0")


def edit_manifest(index: Path, edit: Callable[[dict[str, Any]], object]) -> None:
    """Apply ``edit`` to the manifest of the index at ``index`` in place, as a hand edit would."""
    mpath = index / "manifest.json"
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    edit(manifest)
    mpath.write_text(json.dumps(manifest), encoding="utf-8")


def flip_byte(path: Path, offset: int) -> None:
    """Corrupt one byte of ``path`` (same size)."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
