"""One contract for every registered method and retriever, on a small real slice of 2WikiMultiHopQA.

Adding a method to the registry adds it here: it must return ranked, unique
passage rows, respect ``k``, give a trace that serialises to JSON, turn into a
valid run-file row, and reject options it does not have and bad values of the
ones it has (the imbalanced-learn idea of one shared estimator check).

Every method runs on both storage backends: the embedded index directory and the same index
exported to Lance tables (``gearag export``; skipped when the ``lance`` extra is not installed).
"""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass

import pytest

from conftest import wiki_slice
from gearag.api import Gearag
from gearag.config import IndexConfig
from gearag.errors import ConfigError
from gearag.indexing import build_index
from gearag.methods import method_config
from gearag.model import Passage
from gearag.options import option_specs
from gearag.registry import REGISTRY
from gearag.retrieve import make_retriever
from gearag.trace import TRACE_VERSION

METHODS = REGISTRY.names("method")
RETRIEVERS = REGISTRY.names("retriever")


@pytest.fixture(scope="module")
def embedded_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[Gearag, list[str]]:
    rows, questions = wiki_slice(60, 6)
    passages = [Passage(f"p{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    index = build_index(passages, tmp_path_factory.mktemp("contract") / "index", IndexConfig())
    return Gearag(index), [q["question"] for q in questions]


@pytest.fixture(scope="module", params=["embedded", "lance"])
def app(request: pytest.FixtureRequest, embedded_app: tuple[Gearag, list[str]],
        tmp_path_factory: pytest.TempPathFactory) -> tuple[Gearag, list[str]]:
    """The slice's index on each backend (Lance: the same index exported to a local Lance directory)."""
    if request.param == "embedded":
        return embedded_app
    pytest.importorskip("lancedb", reason="the lance extra is not installed")
    from gearag.indexing.export import export_index

    gearag, questions = embedded_app
    uri = tmp_path_factory.mktemp("contract-lance") / "lance"
    export_index(gearag.index.path, uri)
    return Gearag.open(uri), questions


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("k", [1, 5])
def test_method_ranks_unique_passages_within_k(app: tuple[Gearag, list[str]], name: str, k: int) -> None:
    gearag, questions = app
    n = len(gearag.index.passages)
    for question in questions[:3]:
        result = gearag.retrieve(question, name, k)
        rows = [h.idx for h in result.passages]
        assert 1 <= len(rows) <= k
        assert len(set(rows)) == len(rows)
        assert all(0 <= r < n for r in rows)
        assert all(h.collection == "passages" for h in result.passages)
        scores = [h.score for h in result.passages]
        assert scores == sorted(scores, reverse=True)
        row = gearag.row(result, qid="q", question=question)
        assert [p["id"] for p in row["passages"]] == [gearag.index.passages[r].id for r in rows]
        decoded = json.loads(json.dumps(row))
        if result.trace is not None:
            assert decoded["trace"]["version"] == TRACE_VERSION and decoded["trace"]["kind"]


@pytest.mark.parametrize("name", METHODS)
def test_method_is_deterministic(app: tuple[Gearag, list[str]], name: str) -> None:
    gearag, questions = app
    first = gearag.retrieve(questions[0], name, 5)
    again = gearag.retrieve(questions[0], name, 5)
    assert first.passages == again.passages and first.answer == again.answer


@pytest.mark.parametrize("name", METHODS)
def test_method_rejects_unknown_and_bad_options(app: tuple[Gearag, list[str]], name: str) -> None:
    gearag, _ = app
    with pytest.raises(ConfigError, match="--no-such-option does not apply"):
        gearag.method(name, no_such_option=1)
    specs = option_specs(REGISTRY.entry("method", name).config_class())  # type: ignore[arg-type]
    assert specs, f"{name} has no options"
    for spec in specs.values():
        bad = "not-a-number" if spec.type in (int, float) else ("maybe" if spec.type is bool else 7)
        with pytest.raises(ConfigError, match=spec.flag):
            method_config(name, {spec.name: bad})


@pytest.mark.parametrize("name", METHODS)
def test_method_config_is_frozen_with_documented_defaults(name: str) -> None:
    cls = REGISTRY.entry("method", name).config_class()
    assert cls is not None and is_dataclass(cls)
    config = cls()
    with pytest.raises(AttributeError):
        setattr(config, fields(cls)[0].name, None)
    for spec in option_specs(cls).values():
        assert spec.help, f"{name}: option {spec.name} has no help"


@pytest.mark.parametrize("name", RETRIEVERS)
@pytest.mark.parametrize("collection", ["passages", "triples"])
def test_retriever_works_over_every_collection(app: tuple[Gearag, list[str]], name: str, collection: str) -> None:
    gearag, questions = app
    retriever = make_retriever(gearag.index, name, collection)
    size = len(gearag.index.collection(collection))
    hits = retriever.retrieve(questions[0], 7)
    assert 1 <= len(hits) <= 7 and all(0 <= h.idx < size and h.collection == collection for h in hits)
    assert len({h.idx for h in hits}) == len(hits)
    batched = retriever.retrieve_many(questions[:2], 3)[0]
    assert [h.idx for h in batched] == [h.idx for h in retriever.retrieve(questions[0], 3)]
