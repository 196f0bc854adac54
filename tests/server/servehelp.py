"""Fixtures and helpers for the service tests: the demo index, an app factory with settings, a real `gearag serve`.

Not a ``conftest.py``: a second package-less conftest would replace the top-level one
in ``sys.modules`` and break ``from conftest import ...`` in the tests collected after
this folder. Test modules import the fixtures they use from here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from gearag.api import Gearag
from gearag.store.index import Index

#: The demo question the offline engine answers right (answer 1982, three gold passages).
DEMO_QUESTION = ("In what year did Stephen Curry's father join the team from which he started his college "
                 "basketball career?")
DEMO_ANSWER = "1982"
SRC = Path(__file__).resolve().parents[2] / "src"


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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """A real ``gearag serve`` subprocess on 127.0.0.1."""

    def __init__(self, index: Path, env: dict[str, str] | None = None, *args: str) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        environ = {**os.environ, "PYTHONPATH": str(SRC), "GEARAG_PROGRESS": "0", **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gearag.cli", "serve", str(index), "--port", str(self.port), *args],
            env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gearag serve exited: {self.proc.communicate()[1]}")
            try:
                if httpx.get(self.base_url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("gearag serve did not come up within 60 s")

    def stop(self, timeout: float = 30) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: uvicorn's graceful shutdown
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, err


@pytest.fixture(scope="module")
def served(demo_index: Index) -> Iterator[Served]:
    server = Served(demo_index.path)
    yield server
    server.stop()
