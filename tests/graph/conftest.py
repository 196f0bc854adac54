"""Fixtures of the graph tests: a small stub-extracted 2Wiki index.

``tests/graph`` is a package (``graph.conftest``), so this conftest never shadows the top-level
``conftest`` module that test folders import helpers from.
"""

from __future__ import annotations

import pytest

from conftest import StubExtractor, wiki_slice
from gearag.config import IndexConfig
from gearag.indexing import build_index
from gearag.model import Passage


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory):
    """A 150-passage 2Wiki slice indexed with the stub extractor, and 12 of its questions."""
    rows, questions = wiki_slice(150, 12)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    out = tmp_path_factory.mktemp("graph") / "index"
    index = build_index(passages, out, IndexConfig.of(extractor="stub"), extractor=StubExtractor())
    return index, [q["question"] for q in questions]
