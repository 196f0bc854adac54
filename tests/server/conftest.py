"""Fixtures for the service tests: the demo index, an app factory with settings, a real `gearag serve`.

``tests/server`` is a package (``server.conftest``), so this conftest never shadows the
top-level ``conftest`` module that other test folders import helpers from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from gearag.api import Gearag
from gearag.store.index import Index
from server.servehelp import Served


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    """The index `make demo` builds (12 passages, spaCy triples, wordllama)."""
    from gearag.data import load_corpus
    from gearag.demo import write_demo_data
    from gearag.indexing import build_index

    directory = tmp_path_factory.mktemp("demo")
    corpus, _ = write_demo_data(directory)
    return build_index(load_corpus(corpus), directory / "index")


@pytest.fixture(scope="session")
def demo_gearag(demo_index: Index) -> Gearag:
    return Gearag(demo_index)


@pytest.fixture
def make_client(demo_gearag: Gearag) -> Iterator[Callable[..., TestClient]]:
    """``make_client(**settings)``: a TestClient over the demo index with those ServerSettings."""
    from gearag.server import ServerSettings, create_app

    clients: list[TestClient] = []

    def make(gearag: Gearag | None = None, **settings: object) -> TestClient:
        settings.setdefault("access_log", False)
        if gearag is not None:  # a test double: no warm-up calls before the test's own
            settings.setdefault("warm_methods", "")
        client = TestClient(create_app(gearag or demo_gearag, ServerSettings(**settings)),  # type: ignore[arg-type]
                            raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client()


@pytest.fixture(scope="module")
def served(demo_index: Index) -> Iterator[Served]:
    server = Served(demo_index.path)
    yield server
    server.stop()
