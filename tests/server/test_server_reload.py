"""A service over an index directory answers from the update once `gearag add` (or delete, compact) commits it."""

from __future__ import annotations

import gc
import logging
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gearag.api import Gearag
from gearag.data import load_corpus
from gearag.demo import write_demo_data
from gearag.errors import ConfigError
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents, delete_documents
from gearag.model import Passage
from gearag.server import ServerSettings, create_app
from gearag.store.index import manifest_identity, read_manifest
from gearag.store.lease import held_by_reader, lease_name

NEW = Passage("new-1", "Quillmoor Abbey", "Quillmoor Abbey is a ruined abbey founded by the hermit Osric Penhallow.")
QUESTION = "Who founded Quillmoor Abbey?"


def _index(tmp_path: Path) -> Path:
    corpus, _ = write_demo_data(tmp_path)
    build_index(load_corpus(corpus), tmp_path / "index")
    return tmp_path / "index"


def _state(client: TestClient) -> tuple[int, list[str]]:
    """The served passage count and the top 3 for QUESTION, once the service looked for an update (as its thread
    does every ``reload_seconds``) and opened any it found."""
    client.app.state.live.refresh()  # type: ignore[attr-defined]
    passages = client.get("/v1/index").json()["counts"]["passages"]
    found = client.post("/v1/retrieve", json={"question": QUESTION, "method": "syncge", "top_k": 3})
    assert found.status_code == 200, found.text
    return passages, [p["id"] for p in found.json()["passages"]]


def test_the_service_opens_an_update_of_its_index_and_lets_the_old_one_go(tmp_path: Path) -> None:
    root = _index(tmp_path)
    said: list[str] = []
    settings = ServerSettings(access_log=False, reload_seconds=3600)  # the test looks (refresh)
    gc.disable()  # only the service's own collection may free the old index (its objects form cycles)
    try:
        with TestClient(create_app(Gearag.open(root), settings, announce=said.append)) as client:
            passages, ids = _state(client)
            assert "new-1" not in ids
            old = lease_name(read_manifest(root))
            assert held_by_reader(root, old)
            add_documents(root, [NEW])
            grown, ids = _state(client)
            assert grown == passages + 1 and "new-1" in ids
            assert said == [f"index {root} updated: now serving {passages + 1} passages"]
            served = client.get("/v1/index").json()["served"]
            assert served["reloads"] == 1 and served["failures"] == 0 and served["last_error"] is None
            assert served["stamp"] == manifest_identity(root) and served["looked_at"] is not None
            assert "gearag_index_reloads 1.0" in client.get("/metrics").text
            live = client.app.state.live  # type: ignore[attr-defined]
            if live.retiring is not None:
                live.retiring.join()
            assert not held_by_reader(root, old)  # the next update may remove its generation
            _after_delete(client, root, passages)
    finally:
        gc.enable()


def _after_delete(client: TestClient, root: Path, passages: int) -> None:
    delete_documents(root, ["new-1"])
    shrunk, ids = _state(client)
    assert shrunk == passages and "new-1" not in ids


def test_with_reload_off_the_service_keeps_what_it_opened(tmp_path: Path) -> None:
    root = _index(tmp_path)
    with TestClient(create_app(Gearag.open(root), ServerSettings(access_log=False, reload_seconds=0))) as client:
        before = _state(client)
        add_documents(root, [NEW])  # the old generation's files stay for it (its read lease)
        assert _state(client) == before
        served = client.get("/v1/index").json()["served"]
        assert served["reload_seconds"] == 0 and served["looked_at"] is None and served["reloads"] == 0


def test_an_update_that_does_not_open_leaves_the_service_on_the_index_it_has(tmp_path: Path) -> None:
    root = _index(tmp_path)
    said: list[str] = []
    settings = ServerSettings(access_log=False, reload_seconds=3600)
    with TestClient(create_app(Gearag.open(root), settings, announce=said.append)) as client:
        before = _state(client)
        manifest = (root / "manifest.json").read_text(encoding="utf-8")
        (root / "manifest.json").unlink()
        (root / "manifest.json").write_text(manifest.replace('"counts"', '"counts_"', 1), encoding="utf-8")
        assert _state(client) == before and said == []
        served = client.get("/v1/index").json()["served"]  # an operator sees why the service did not move
        assert served["reloads"] == 0 and served["failures"] == 1 and "counts" in served["last_error"]
        assert "gearag_index_reload_failures 1.0" in client.get("/metrics").text
        assert _state(client) == before  # the same damaged update is not opened again before its wait is over
        assert client.get("/v1/index").json()["served"]["failures"] == 1
        (root / "manifest.json").write_text(manifest, encoding="utf-8")
        add_documents(root, [NEW])  # a newer update is opened at once
        grown, ids = _state(client)
        assert grown == before[0] + 1 and "new-1" in ids
        served = client.get("/v1/index").json()["served"]
        assert served["reloads"] == 1 and served["failures"] == 0 and served["last_error"] is None


def test_a_service_with_no_requests_follows_the_updates_of_its_index(tmp_path: Path) -> None:
    """Its own thread looks every reload_seconds: an idle replica never falls behind (a Lance export removes the
    versions it replaced after --keep-hours, which one that only looked at requests could still be reading)."""
    root = _index(tmp_path)
    said: list[str] = []
    settings = ServerSettings(access_log=False, reload_seconds=0.05)
    with TestClient(create_app(Gearag.open(root), settings, announce=said.append)) as client:
        live = client.app.state.live  # type: ignore[attr-defined]
        passages = len(live.get().index.passages)
        add_documents(root, [NEW])
        grown = f"index {root} updated: now serving {passages + 1} passages"
        deadline = time.monotonic() + 120  # a bound for a loaded machine, not a timing: it normally takes ~0.1 s
        while grown not in said and time.monotonic() < deadline:  # said once the update is served
            time.sleep(0.05)
        # The first add commits the index converted to shards, then the add: the service may serve both.
        assert said[-1] == grown and len(live.get().index.passages) == passages + 1
    assert live.watching is None  # the service stopped looking when it shut down


def test_an_update_committed_while_the_service_opened_its_index_is_served(tmp_path: Path) -> None:
    """The stamp the service compares is the one of the index it read, not of what is there once it started."""
    root = _index(tmp_path)
    opened = Gearag.open(root)
    add_documents(root, [NEW])  # committed after the open, before the service starts
    with TestClient(create_app(opened, ServerSettings(access_log=False, reload_seconds=3600))) as client:
        passages, ids = _state(client)
    assert passages == len(opened.index.passages) + 1 and "new-1" in ids


def test_an_index_is_warmed_before_it_is_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At start (before the first request) and after an update (before the service swaps to it), the methods of
    --warm-methods run once, so that no request pays their first-call loads."""
    from gearag.server import app as app_module

    root = _index(tmp_path)
    warmed: list[tuple[int, list[str], int]] = []  # (passages of the index warmed, methods, passages served then)

    def spy(gearag: Gearag, names: list[str], config_of: object = None) -> None:
        served = live.get() if live is not None else gearag
        warmed.append((len(gearag.index.passages), list(names), len(served.index.passages)))

    live = None
    monkeypatch.setattr(app_module, "warm_methods", spy)
    settings = ServerSettings(access_log=False, reload_seconds=3600, warm_methods="bm25, gear")
    with TestClient(create_app(Gearag.open(root), settings)) as client:
        live = client.app.state.live  # type: ignore[attr-defined]
        n = len(live.get().index.passages)
        assert warmed == [(n, ["bm25", "gear"], n)]  # at start
        add_documents(root, [NEW])
        assert live.refresh()
        assert warmed[-1] == (n + 1, ["bm25", "gear"], n)  # the update was warmed while the old one was served
    with pytest.raises(ConfigError, match="--warm-methods: unknown method 'nope'"):
        ServerSettings(warm_methods="bm25,nope")


def test_a_method_that_fails_to_warm_is_logged_and_the_index_served(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    from gearag.server.live import warm_methods

    class Failing:
        def method(self, name: str) -> object:
            raise RuntimeError("no model here")

    with caplog.at_level(logging.WARNING, logger="gearag.server"):
        warm_methods(Failing(), ["dense"])  # type: ignore[arg-type]
    assert any("warming method dense failed" in r.getMessage() for r in caplog.records)


def test_a_look_that_raises_an_error_of_its_own_type_is_reported_and_the_service_keeps_looking(
        tmp_path: Path) -> None:
    """An object store's client may raise its own exception types: a look that fails with one is a failure the
    service reports, not the end of the thread that follows the index."""
    from gearag.server.live import LiveGearag, manifest_stamp

    class StoreUnreachableError(Exception):
        pass

    root = _index(tmp_path)
    looks: list[str] = []

    def stamp() -> str | None:
        looks.append("look")
        if len(looks) == 1:
            raise StoreUnreachableError("connection reset by the object store")
        return manifest_stamp(root)

    live = LiveGearag(Gearag.open(root), lambda: Gearag.open(root), 3600, root, stamp=stamp)
    passages = len(live.get().index.passages)
    add_documents(root, [NEW])
    assert not live.refresh()
    assert live.status()["failures"] == 1 and "connection reset" in live.status()["last_error"]
    assert live.refresh() and len(live.get().index.passages) == passages + 1
    assert live.status()["failures"] == 0 and live.status()["reloads"] == 1
