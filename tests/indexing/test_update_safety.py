"""gearag add / delete besides equalling a rebuild: a crash mid-add, bad input, ids, per-add options, a failing step
and converting a plain index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
from test_incremental import STUB, _passages, assert_same_index

from conftest import REPO, StubExtractor, assert_clean_error, use_stub_extractor, write_jsonl
from gearag.api import Gearag
from gearag.config import IndexConfig, TreesConfig
from gearag.data import load_corpus
from gearag.errors import IndexFormatError
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents, delete_documents
from gearag.model import Passage
from gearag.store.index import MANIFEST, Index, manifest_identity
from numbering import union_generations
from oracles import reference_build

_KILLED_ADD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from conftest import StubExtractor, use_stub_extractor

    index_dir, corpus, stall_after = sys.argv[1], sys.argv[2], int(sys.argv[3])

    class Stalling(StubExtractor):
        def extract(self, passages):
            for n, triples in enumerate(super().extract(passages)):
                if n == stall_after:
                    while True:  # killed here by the test
                        time.sleep(1)
                yield triples

    use_stub_extractor(Stalling())
    from gearag.cli import main
    sys.exit(main(["add", index_dir, corpus]))
""")


def test_sigkill_during_add_leaves_the_old_index_and_the_add_resumes(tmp_path: Path) -> None:
    passages, questions = _passages(30, 3)
    base, new = passages[:18], passages[18:]
    root = tmp_path / "idx"
    use_stub_extractor(StubExtractor())
    build_index(base, root, STUB)
    extra = Passage("extra-0", "Extra page", "An extra page about Paris.")
    add_documents(root, [extra])  # sharded before the killed add (conversion is tested elsewhere)
    before = manifest_identity(root)
    corpus = write_jsonl(tmp_path / "new.jsonl", [{"id": p.id, "title": p.title, "text": p.text} for p in new])
    script = tmp_path / "killed_add.py"
    script.write_text(_KILLED_ADD, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO / 'tests'}", "GEARAG_PROGRESS": "0"}
    stall = 5
    proc = subprocess.Popen([sys.executable, str(script), str(root), str(corpus), str(stall)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            ckpts = list((root / "shards").glob(".s-*.work/extract-*.jsonl"))
            if ckpts and ckpts[0].read_text(encoding="utf-8").count("\n") >= stall:
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the add never reached extraction"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The previous index is untouched and answers.
    assert manifest_identity(root) == before
    old = Index.load(root, verify=True)
    assert len(old.passages) == len(base) + 1
    assert Gearag(old).retrieve(questions[0], "hybrid", 5).passages
    # Rerunning the add extracts only what the killed run had not.
    counting = StubExtractor()
    use_stub_extractor(counting)
    grown = add_documents(root, new)
    assert len(counting.seen) == len(new) - stall
    expected = reference_build([*base, extra, *new], tmp_path / "expected", STUB)
    assert_same_index(grown, expected)
    assert not list((root / "shards").glob(".*"))  # the work directory went with the success


def test_errors_are_one_line_and_write_nothing(tmp_path: Path, cli) -> None:
    root, passages, before = _sharded(tmp_path, 10)
    rows = [{"id": p.id, "title": p.title, "text": p.text} for p in passages]

    # w9 with other content: an id clash (w9 with its own content would be skipped as already there).
    dup = write_jsonl(tmp_path / "dup.jsonl", [{**rows[9], "text": "Other content."}, *rows[10:12]])
    assert_clean_error(cli("add", root, dup), "w9", "already in the index")
    conflicting = write_jsonl(tmp_path / "ok.jsonl", rows[10:12])
    assert_clean_error(cli("add", root, conflicting, "--embedder", "minilm"), "--embedder", "conflicts")
    # Checked before the documents are read: a missing corpus is not what the error names.
    assert_clean_error(cli("add", root, tmp_path / "missing.jsonl", "--embedder", "minilm"), "--embedder", "conflicts")
    ids = tmp_path / "ids.txt"
    ids.write_text("w1\nnope-1\nw2\nnope-2\n", encoding="utf-8")
    assert_clean_error(cli("delete", root, ids), "'nope-1', 'nope-2'", "nothing deleted", "a corpus record's `id`")
    not_index = tmp_path / "plain-dir"
    not_index.mkdir()
    for argv in (("add", not_index, conflicting), ("delete", not_index, ids), ("compact", not_index)):
        assert_clean_error(cli(*argv), "not a gearag index")
    assert manifest_identity(root) == before

    trees = build_index(passages[:6], tmp_path / "trees", replace(STUB, trees=TreesConfig(raptor=True)))
    tree_before = manifest_identity(trees.path)
    assert_clean_error(cli("add", trees.path, conflicting), "tree pools", "gearag index")
    assert manifest_identity(trees.path) == tree_before
    assert json.loads((trees.path / MANIFEST).read_text(encoding="utf-8")).get("layout") is None

    # add's options default to the index's settings, and the help says so (not the defaults of a new build).
    shown = cli("add", "--help")
    assert shown.code == 0 and "index's own" in shown.stdout and "wordllama]" not in shown.stdout
    assert "--ray-workers" not in shown.stdout

    # The same commands succeed on good input.
    assert cli("add", root, conflicting, "--embedder", "wordllama").code == 0
    ids.write_text("w1\n", encoding="utf-8")
    assert cli("delete", root, ids).code == 0
    result = cli("compact", root)
    assert result.code == 0, result.stderr
    assert "1 shard(s)" in result.stderr
    assert cli("info", root).code == 0


def test_documents_without_ids_continue_the_index_numbering(tmp_path: Path, cli) -> None:
    """A corpus loaded without ids numbers its records p0, p1, …: each add continues after every number an
    earlier build or add used, deleted and compacted rows included, instead of clashing with p0."""
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(14, 0)
    rows = [{"title": p.title, "text": p.text} for p in passages]  # no ids
    root = tmp_path / "idx"
    build_index(load_corpus(write_jsonl(tmp_path / "base.jsonl", rows[:6])), root, STUB)

    def add(part: list[dict[str, str]]) -> None:
        result = cli("add", root, write_jsonl(tmp_path / "more.jsonl", part))
        assert result.code == 0, result.stderr

    add(rows[6:8])
    add(rows[8:10])
    assert [p.id for p in Index.load(root).passages] == [f"p{i}" for i in range(10)]
    # An index written before the number was kept: its shards' rows bound the numbers used.
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    assert manifest.pop("next_auto_id") == 10
    (root / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    add(rows[10:11])
    ids = tmp_path / "ids.txt"
    ids.write_text("p10\np9\np2\n", encoding="utf-8")
    assert cli("delete", root, ids).code == 0
    assert cli("compact", root).code == 0
    add(rows[11:13])
    expected = [f"p{i}" for i in range(9) if i != 2] + ["p11", "p12"]
    assert [p.id for p in Index.load(root).passages] == expected
    assert [p.text for p in Index.load(root).passages][-2:] == [r["text"] for r in rows[11:13]]


def test_a_sharded_index_is_verified_and_replaceable_like_a_plain_one(tmp_path: Path, cli) -> None:
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(10, 0)
    root = tmp_path / "idx"
    build_index(passages[:6], root, STUB)
    grown = add_documents(root, passages[6:])
    info = cli("info", root)
    assert info.code == 0 and json.loads(info.stdout)["shards"] == 2
    assert json.loads(info.stdout)["last_update"]["op"] == "add"
    shard = root / "shards" / grown.manifest["shards"][1]["name"]
    # A shard or generation changed behind the manifest's back does not load.
    vectors = shard / "vectors" / "passages.npy"
    saved = vectors.read_bytes()
    vectors.write_bytes(saved[:-4] + b"\x00\x00\x80\x3f")
    with pytest.raises(IndexFormatError, match=r"passages\.npy fails its checksum"):
        Index.load(root)
    vectors.write_bytes(saved)
    tombstones = root / "generations" / grown.manifest["generation"]["name"] / "tombstones.json"
    tombstones.write_text('{"nope": [0]}', encoding="utf-8")
    with pytest.raises(IndexFormatError, match=r"tombstones\.json"):
        Index.load(root)
    # --overwrite replaces a sharded index like a plain one, and refuses when it holds a user's file.
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": p.id, "title": p.title, "text": p.text} for p in passages])
    (root / "shards" / "notes.txt").write_text("mine", encoding="utf-8")
    assert_clean_error(cli("index", corpus, "--out", root, "--overwrite", "--extractor", "stub"),
                       "shards/notes.txt")
    (root / "shards" / "notes.txt").unlink()
    assert cli("index", corpus, "--out", root, "--overwrite", "--extractor", "stub").code == 0
    assert Index.load(root).manifest.get("layout") is None


def _sharded(tmp_path: Path, n: int) -> tuple[Path, list[Passage], str]:
    """A stub index of 8 of 12 passages grown to ``n`` by one add: its root, the 12 passages, its identity."""
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(12, 0)
    root = tmp_path / "idx"
    build_index(passages[:8], root, STUB)
    add_documents(root, passages[8:n])
    return root, passages, manifest_identity(root)


def test_an_add_that_failed_after_its_shard_reuses_the_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gearag.indexing.incremental as incremental

    root, passages, before = _sharded(tmp_path, 9)

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # killed between the shard's commit and the generation

    monkeypatch.setattr(incremental, "write_generation", crash)
    monkeypatch.setattr(incremental, "write_delta_generation", crash)
    with pytest.raises(KeyboardInterrupt):
        add_documents(root, passages[9:])
    assert manifest_identity(root) == before and len(Index.load(root).passages) == 9
    monkeypatch.undo()
    counting = StubExtractor()
    use_stub_extractor(counting)
    grown = add_documents(root, passages[9:])
    assert counting.seen == []  # the finished shard was found, nothing extracted again
    assert_same_index(grown, reference_build(passages, tmp_path / "expected", STUB))


def test_an_openie_index_takes_the_added_documents_triples_from_another_file(tmp_path: Path) -> None:
    """``openie:FILE`` names data, not a setting: ``add`` reads the new documents' triples from their own file."""
    from conftest import DATA
    from gearag.errors import ConfigError

    musique = DATA / "musique_train"
    corpus = json.loads((musique / "musique_train_corpus.json").read_text(encoding="utf-8"))
    openie = json.loads((musique / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json")
                        .read_text(encoding="utf-8"))
    rows = range(300, 330)
    passages = [Passage(f"m{i}", corpus[i]["title"], corpus[i]["text"]) for i in rows]

    def openie_file(name: str, picked: range) -> str:
        path = tmp_path / name
        path.write_text(json.dumps({**openie, "docs": [openie["docs"][i] for i in picked]}), encoding="utf-8")
        return f"openie:{path}"

    whole = build_index(passages, tmp_path / "whole", IndexConfig.of(extractor=openie_file("all.json", rows)))
    grown = tmp_path / "grown"
    build_index(passages[:20], grown, IndexConfig.of(extractor=openie_file("first.json", range(300, 320))))
    rest = openie_file("rest.json", range(320, 330))
    with pytest.raises(ConfigError, match="--extractor spacy conflicts"):
        add_documents(grown, passages[20:], options={"extractor": "spacy"})
    added = add_documents(grown, passages[20:], options={"extractor": rest})
    assert sum(len(added.passage_triples(r)) for r in range(20, 30)) > 0
    assert_same_index(added, whole)


def test_add_with_an_llm_extractor_takes_the_endpoint_options(tmp_path: Path, monkeypatch) -> None:
    """``gearag add --llm-base-url/--llm-model`` reach the LLM extractor of the new shard."""
    from conftest import isolate_llm_env
    from gearag.extract import make_extractor
    from llm_server import Reply, ScriptedServer

    isolate_llm_env(monkeypatch, tmp_path / "cache")
    docs = [Passage(f"d{i}", f"Doc {i}", f"Entity{i} Alpha has index {i}.") for i in range(6)]

    def reply(body: dict) -> Reply:
        i = int(body["messages"][-1]["content"].split("has index ")[-1].split(".")[0])
        return Reply(json.dumps({"named_entities": [f"Entity{i} Alpha"],
                                 "triples": [[f"Entity{i} Alpha", "has index", str(i)]]}))

    with ScriptedServer(responder=reply) as server:
        out = tmp_path / "index"
        with make_extractor("llm", llm_base_url=server.base_url, llm_model="m") as extractor:
            build_index(docs[:4], out, IndexConfig.of(extractor="llm"), extractor=extractor)
        before = len(server.requests)
        added = add_documents(out, docs[4:], extractor_options={"llm_base_url": server.base_url, "llm_model": "m"})
        assert len(server.requests) == before + 2  # the two new passages, nothing else
    assert [added.triples[t].subject for t in range(len(added.triples))][-2:] == ["Entity4 Alpha", "Entity5 Alpha"]


@pytest.mark.parametrize("where", ["derive.union_files.triple_graph", "derive.delta_resolve.resolve_delta",
                                   "derive.union_files.apply_delta", "graph.flatten.flat_rows"])
def test_a_failure_on_any_generation_step_fails_the_add_and_keeps_the_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """An add's triple graph is made on a thread of its own beside its resolution: its error reaches the caller as
    the resolution's does, the previous index stays as it was, and nothing is left behind. So does an error
    while an add's delta is applied or written whole, or while a generation is derived from nothing."""
    import importlib

    module, name = where.rsplit(".", 1)
    root, passages, before = _sharded(tmp_path, 10)
    if module != "graph.flatten":
        union_generations(monkeypatch)

    def broken(*args: object, **kwargs: object) -> None:
        raise IndexFormatError(f"{name}: damaged")

    monkeypatch.setattr(importlib.import_module(f"gearag.{module}"), name, broken)
    with pytest.raises(IndexFormatError, match=name):
        add_documents(root, passages[10:])
    assert manifest_identity(root) == before and len(Index.load(root).passages) == 10
    assert not [p for p in (root / "generations").iterdir() if p.name.startswith(".")]  # no half-written one
    monkeypatch.undo()
    expected = reference_build(passages, tmp_path / "expected", STUB)
    assert_same_index(add_documents(root, passages[10:]), expected)


def test_a_delete_on_a_plain_index_converts_it_and_removes_the_rows_it_located(tmp_path: Path) -> None:
    """The ids are located in the plain index before it is converted; its one shard holds them at the same rows."""
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(12, 0)
    root = tmp_path / "idx"
    build_index(passages, root, STUB)
    gone = {passages[0].id, passages[5].id, passages[11].id}
    deleted = delete_documents(root, sorted(gone))
    assert deleted.manifest.get("layout") == "sharded" and len(deleted.passages) == 9
    rest = [p for p in passages if p.id not in gone]
    assert_same_index(deleted, reference_build(rest, tmp_path / "expected", STUB))
