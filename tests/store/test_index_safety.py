"""Safe --overwrite, the build lock, and verification that means something."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, StubExtractor, assert_clean_error, edit_manifest, flip_byte, tiny_passages, write_jsonl
from gearag.config import IndexConfig
from gearag.errors import BusyError, IndexFormatError
from gearag.indexing import build_index, work_dir_for
from gearag.store import checksum
from gearag.store.index import Index, check_index, read_manifest
from gearag.store.writer import IndexLock, IndexWriter, lock_path


def _build(out: Path, n: int = 4, **kwargs: object) -> Index:
    return build_index(tiny_passages()[:n], out, IndexConfig.of(extractor="stub"), extractor=StubExtractor(),
                       **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def index_copy(tiny_index: Index, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(tiny_index.path, out)
    return out


# --------------------------------------------------------------------------- --overwrite


def test_overwrite_refuses_a_folder_that_merely_has_a_manifest_json(cli, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "manifest.json").write_text('{"name": "my web app"}', encoding="utf-8")
    (site / "index.html").write_text("<html></html>", encoding="utf-8")
    with pytest.raises(IndexFormatError, match=r"not a gearag index.*refusing to delete") as info:
        _build(site, overwrite=True)
    assert str(info.value).count("not a gearag index") == 1
    assert sorted(p.name for p in site.iterdir()) == ["index.html", "manifest.json"]
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"title": "A", "text": "Alpha."}])
    assert_clean_error(cli("index", corpus, "--out", site, "--overwrite", "--extractor", "openie:none"),
                       "not a gearag index")
    assert (site / "index.html").exists()


def test_overwrite_refuses_an_index_holding_the_users_files(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    _build(out)
    (out / "notes.txt").write_text("my notes", encoding="utf-8")
    (out / "vectors" / "mine.npy").write_bytes(b"123")
    with pytest.raises(IndexFormatError, match=r"holds files the index did not write \(notes\.txt, vectors/mine\.npy"):
        _build(out, n=2, overwrite=True)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "my notes"
    assert Index.load(out).manifest["counts"]["passages"] == 4
    (out / "notes.txt").unlink()
    (out / "vectors" / "mine.npy").unlink()
    assert _build(out, n=2, overwrite=True).manifest["counts"]["passages"] == 2


def test_overwrite_refuses_a_symlink_inside_an_index(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    _build(out)
    precious = tmp_path / "precious"
    precious.mkdir()
    (out / "link").symlink_to(precious)
    with pytest.raises(IndexFormatError, match="link/"):
        _build(out, overwrite=True)
    assert precious.is_dir()


# --------------------------------------------------------------------------- the build lock


_SLOW_BUILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from conftest import StubExtractor, use_stub_extractor

    corpus, out, started, go = sys.argv[1:5]

    class Waiting(StubExtractor):
        def extract(self, passages):
            Path(started).touch()
            while not Path(go).exists():
                time.sleep(0.05)
            yield from super().extract(passages)

    use_stub_extractor(Waiting())
    from gearag.cli import main
    sys.exit(main(["index", corpus, "--out", out, "--extractor", "stub"]))
""")


def _spawn_build(script: Path, corpus: Path, out: Path, started: Path, go: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO / 'tests'}", "GEARAG_PROGRESS": "0"}
    return subprocess.Popen([sys.executable, str(script), str(corpus), str(out), str(started), str(go)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_two_concurrent_builds_of_one_directory(tmp_path: Path) -> None:
    script = tmp_path / "slow_build.py"
    script.write_text(_SLOW_BUILD, encoding="utf-8")
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"title": t, "text": x} for _, t, x in
                                                     ((p.id, p.title, p.text) for p in tiny_passages())])
    out = tmp_path / "index"
    go = tmp_path / "go"
    first = _spawn_build(script, corpus, out, tmp_path / "first-started", go)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "first-started").exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first build never started extracting"
            time.sleep(0.05)
        in_progress = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".index."))
        assert ".index.lock" in in_progress and any(n.startswith(".index.tmp-") for n in in_progress)
        # The second build runs to its lock and fails at once, naming the first; it touches nothing.
        go_now = tmp_path / "go-now"
        go_now.touch()  # were the second to get past the lock, it would not wait
        second = _spawn_build(script, corpus, out, tmp_path / "second-started", go_now)
        _, err = second.communicate(timeout=120)
        assert second.returncode == 2, err
        assert "another gearag build is writing this index" in err and f"pid {first.pid}" in err, err
        assert "Traceback" not in err
        assert not (tmp_path / "second-started").exists()
        go.touch()
        _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
    finally:
        for proc in (first,):
            if proc.poll() is None:
                proc.kill()
    index = Index.load(out, verify=True)
    assert index.manifest["counts"]["passages"] == len(tiny_passages())
    assert (out / "bm25" / "passages").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_held_lock_refuses_in_process_too(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    lock = IndexLock(out)
    lock.acquire()
    try:
        (tmp_path / ".idx.tmp-other").mkdir()  # another build's work in progress
        with pytest.raises(BusyError, match=f"pid {os.getpid()}"):
            _build(out)
        assert (tmp_path / ".idx.tmp-other").is_dir()
    finally:
        lock.release()
    assert not lock_path(out).exists()


def test_a_busy_index_is_refused_before_the_inputs_are_read(tmp_path: Path, cli, tiny_index,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """gearag index / add / delete fail on another writer's lock before reading the corpus (minutes at 1M)."""
    import shutil

    from gearag import data

    def no_reading(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("read the corpus of a busy index")

    monkeypatch.setattr(data, "load_corpus", no_reading)
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": p.id, "title": p.title, "text": p.text}
                                                     for p in tiny_passages()])
    index = tmp_path / "index"
    shutil.copytree(tiny_index.path, index)
    (tmp_path / "ids.txt").write_text(tiny_index.passages[0].id + "\n", encoding="utf-8")
    for out, argv in ((tmp_path / "new", ("index", corpus, "--out", tmp_path / "new")),
                      (index, ("add", index, corpus)), (index, ("delete", index, tmp_path / "ids.txt"))):
        lock = IndexLock(out)
        lock.acquire()
        try:
            assert_clean_error(cli(*argv), "another gearag build is writing this index", f"pid {os.getpid()}")
        finally:
            lock.release()
    assert read_manifest(index) == tiny_index.manifest  # nothing written


def test_stale_temporary_directories_are_removed_under_the_lock(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    (tmp_path / ".idx.tmp-killed").mkdir()  # left by a build killed with -9: nobody holds the lock
    (tmp_path / ".idx.tmp-killed" / "passages.jsonl").write_text("", encoding="utf-8")
    (tmp_path / ".other.tmp-live").mkdir()  # another index's: never touched
    _build(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.tmp-live", "idx"]


def test_writer_holds_the_lock_until_closed(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    with IndexWriter(out) as writer:
        with pytest.raises(BusyError):
            IndexWriter(out)
        writer.write_json("a.json", [1])
    assert not lock_path(out).exists()
    assert not work_dir_for(out).exists()


def test_the_lock_belongs_to_the_index_not_to_the_name_it_is_reached_by(tmp_path: Path, cli,
                                                                        index_copy: Path) -> None:
    """A symlink to the index, or to a folder on its path, and the real path take one lock.

    Locked by the name it was given, ``add LINK`` and ``add TARGET`` both ran, and the second commit dropped
    the first one's shard."""
    from gearag.indexing.incremental import add_documents
    from gearag.model import Passage
    from gearag.store.writer import check_unlocked

    (tmp_path / "link").symlink_to(index_copy)
    (tmp_path / "folder-link").symlink_to(tmp_path)
    names = [index_copy, tmp_path / "link", tmp_path / "folder-link" / index_copy.name]
    corpus = write_jsonl(tmp_path / "more.jsonl", [{"id": "new-1", "title": "Paris", "text": "Paris is in France."}])
    before = read_manifest(index_copy)
    for held in names:
        lock = IndexLock(held)
        lock.acquire()
        try:
            for other in names:
                assert lock_path(other) == lock.path == tmp_path / ".copy.lock"
                with pytest.raises(BusyError, match=f"pid {os.getpid()}"):
                    check_unlocked(other)
                with pytest.raises(BusyError, match=f"pid {os.getpid()}"):
                    IndexLock(other).acquire()  # the lock itself, not only the early probe
                with pytest.raises(BusyError):
                    IndexWriter(other, overwrite=True)
                with pytest.raises(BusyError):
                    add_documents(other, [Passage("new-1", "Paris", "Paris is in France.")])
                assert_clean_error(cli("add", other, corpus), "another gearag build is writing this index")
        finally:
            lock.release()
    assert read_manifest(index_copy) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_overwrite_of_a_busy_index_says_it_is_busy_not_that_it_holds_foreign_files(tmp_path: Path, cli,
                                                                                   index_copy: Path) -> None:
    """While an add runs, its work files are inside the index: ``index --overwrite`` must report the running
    add, not ask the user to move its live files away."""
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"title": "A", "text": "Alpha."}])
    work = index_copy / "shards" / ".s-0123456789abcdef.work"
    lock = IndexLock(index_copy)
    lock.acquire()
    try:
        work.mkdir(parents=True)
        (work / "extract-stub.jsonl").write_text("", encoding="utf-8")
        line = assert_clean_error(cli("index", corpus, "--out", index_copy, "--overwrite", "--extractor", "stub"),
                                  "another gearag build is writing this index", f"pid {os.getpid()}")
        assert "did not write" not in line
        with pytest.raises(BusyError, match=f"pid {os.getpid()}"):  # the writer too: its lock before the check
            IndexWriter(index_copy, overwrite=True)
    finally:
        lock.release()
    assert (work / "extract-stub.jsonl").exists()
    assert_clean_error(cli("index", corpus, "--out", index_copy, "--overwrite", "--extractor", "stub"),
                       "holds files the index did not write", "shards/")  # unlocked, the files are foreign


# --------------------------------------------------------------------------- verification


def test_required_files_are_checked_not_just_listed_ones(cli, index_copy: Path) -> None:
    # What a racing build's clean-up once left: no bm25/, and a manifest that no longer lists it.
    shutil.rmtree(index_copy / "bm25")
    edit_manifest(index_copy, lambda m: m.update(files={k: v for k, v in m["files"].items()
                                                         if not k.startswith("bm25/")}))
    with pytest.raises(IndexFormatError, match="missing directory bm25/"):
        check_index(index_copy, full=True)
    assert_clean_error(cli("info", index_copy, "--verify"), "missing directory bm25/", "rebuild")


def test_a_required_file_missing_from_the_manifest_is_an_error(index_copy: Path) -> None:
    edit_manifest(index_copy, lambda m: m["files"].pop("arrays/entity_indices.npy"))
    with pytest.raises(IndexFormatError, match=r"does not list arrays/entity_indices\.npy"):
        Index.load(index_copy)


def test_large_arrays_get_a_sampled_check_and_a_full_one_with_verify(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checksum, "SMALL_FILE_BYTES", 1024)
    monkeypatch.setattr(checksum, "SAMPLE_BLOCK_BYTES", 256)
    monkeypatch.setattr(checksum, "SAMPLE_BLOCKS", 4)
    out = tmp_path / "idx"
    _build(out, n=8)
    meta = read_manifest(out)["files"]["vectors/passages.npy"]
    size = meta["bytes"]
    assert size > 4 * 1024 and "sample" in meta
    vectors = out / "vectors" / "passages.npy"
    original = vectors.read_bytes()
    flip_byte(vectors, size - 1)  # inside the last sampled block: the default load notices
    with pytest.raises(IndexFormatError, match=r"vectors/passages\.npy fails its sampled checksum"):
        Index.load(out)
    vectors.write_bytes(original)
    flip_byte(vectors, 300)  # between sampled blocks: only the full check notices
    Index.load(out)
    with pytest.raises(IndexFormatError, match=r"vectors/passages\.npy fails its checksum"):
        Index.load(out, verify=True)


def test_old_indices_without_sampled_hashes_still_load(index_copy: Path) -> None:
    def to_format_1(m: dict) -> None:
        m["format_version"] = 1
        m.pop("collections", None)
        for meta in m["files"].values():
            meta.pop("sample", None)

    edit_manifest(index_copy, to_format_1)
    index = Index.load(index_copy, verify=True)
    assert set(index.collections) == {"passages", "triples"}


def _rewrite_array(index: Path, rel: str, array: np.ndarray) -> None:
    """Replace an array and fix its manifest entry, as a consistent-looking corruption would."""
    np.save(index / rel, array, allow_pickle=False)
    size = (index / rel).stat().st_size
    edit_manifest(index, lambda m: m["files"].update({rel: checksum.entry(index / rel, size)}))


@pytest.mark.parametrize("rel", ["arrays/entity_indices.npy", "arrays/triple_head.npy", "arrays/entity_indptr.npy",
                                 "arrays/triple_passage.npy", "arrays/passage_triple_indptr.npy"])
def test_corrupt_graph_arrays_are_a_clean_error(index_copy: Path, rel: str) -> None:
    array = np.load(index_copy / rel).copy()
    array[-1] = 10**6  # same size, same type, out of range
    _rewrite_array(index_copy, rel, array)
    with pytest.raises(IndexFormatError, match=f"{rel}.*rebuild"):
        Index.load(index_copy)


def test_corrupt_npy_header_never_suggests_pickle(index_copy: Path) -> None:
    rel = "vectors/triples.npy"
    np.save(index_copy / rel, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    size = (index_copy / rel).stat().st_size
    edit_manifest(index_copy, lambda m: m["files"].update(
        {rel: checksum.entry(index_copy / rel, size)}))
    index = Index.load(index_copy)
    with pytest.raises(IndexFormatError) as err:
        index.collection("triples").vectors  # noqa: B018
    assert "pickle" not in str(err.value).lower() and "rebuild" in str(err.value)
    garbage = index_copy / "arrays" / "triple_tail.npy"
    garbage.write_bytes(b"\x93NUMPY\x01\x00" + b"garbage" * 10)
    edit_manifest(index_copy, lambda m: m["files"].update({"arrays/triple_tail.npy": checksum.entry(
        garbage, garbage.stat().st_size)}))
    with pytest.raises(IndexFormatError) as err:
        Index.load(index_copy)
    assert "triple_tail.npy is corrupt" in str(err.value) and "pickle" not in str(err.value).lower()


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda m: m.update(files=["passages.jsonl"]), "'files' is malformed"),
        (lambda m: m["files"]["passages.jsonl"].pop("bytes"), "files.passages.jsonl"),
        (lambda m: m["files"]["passages.jsonl"].update(bytes="many"), "files.passages.jsonl"),
        (lambda m: m["files"].update({"../../etc/passwd": {"bytes": 1, "sha256": "0"}}), "inside the index"),
        (lambda m: m.update(counts={"passages": "eight"}), "'counts' is malformed"),
        (lambda m: m.update(counts=[8]), "'counts' is malformed"),
        (lambda m: m["collections"]["triples"].update(rows="many"), "collections.triples"),
        (lambda m: m["collections"]["passages"].pop("rows"), "collections.passages"),
        (lambda m: m.update(collections=[]), "collections"),
        (lambda m: m.update(config="spacy"), "'config' is malformed"),
        (lambda m: m.update(format_version=True), "format_version"),
    ],
)
def test_hand_edited_manifest_fields_are_one_line_errors(cli, index_copy: Path, edit, needle: str) -> None:
    edit_manifest(index_copy, edit)
    with pytest.raises(IndexFormatError, match=r"rebuild|format_version") as err:
        Index.load(index_copy)
    assert needle in str(err.value)
    assert_clean_error(cli("info", index_copy), needle)


def test_a_linked_file_keeps_the_checksums_its_index_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hard-linking a committed index's file costs no read of it at commit (gearag add links gigabytes);
    a file replaced after linking is checksummed as written."""
    from gearag.store.index import read_manifest
    from gearag.store.writer import IndexWriter

    source = tmp_path / "source"
    with IndexWriter(source) as w:
        w.write_array("a.npy", np.arange(10))
        w.write_array("b.npy", np.arange(5))
        w.commit({})
    read: list[str] = []
    real = checksum.file_digest

    def counted(path: Path, name: str = checksum.WRITTEN) -> str:
        read.append(path.name)
        return real(path, name)

    monkeypatch.setattr(checksum, "file_digest", counted)
    out = tmp_path / "out"
    with IndexWriter(out) as w:
        w.link("x/a.npy", source / "a.npy", source)
        w.link("b.npy", source / "b.npy", source)
        w.path("b.npy").unlink()
        w.write_array("b.npy", np.arange(7))  # replaced: not the listed file any more
        w.commit({})
    assert read == ["b.npy"]
    files = read_manifest(out)["files"]
    assert files["x/a.npy"] == read_manifest(source)["files"]["a.npy"]
    assert files["b.npy"]["xxh3_128"] == checksum.file_digest(out / "b.npy") \
        != read_manifest(source)["files"]["b.npy"]["xxh3_128"]
