"""The application layer: an index loaded once, answering retrieve and ask calls.

The CLI, the demo, the benchmarks and the HTTP service all use
:class:`Gearag`::

    from gearag.api import Gearag
    app = Gearag.open("my-index")
    result = app.retrieve("Who coached ...?", method="syncge", top_k=10, beam_width=5)
    row = app.row(result, question="Who coached ...?")

Methods are built once per (name, config) and shared; a :class:`Gearag` may
be used from several threads (index artefacts and methods are built under
the index's lock; a method call keeps its state local to the call).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gearag.methods import Method, make_method, method_config
from gearag.results import Result, result_row
from gearag.store.interface import IndexStore

if TYPE_CHECKING:
    from gearag.store.lance.collection import LanceSearchConfig


class Gearag:
    """One index and the retrieval methods over it."""

    def __init__(self, index: IndexStore, *, llm_roles: object | None = None) -> None:
        self.index = index
        self.llm_roles = llm_roles

    @classmethod
    def open(cls, path: str | Path, *, verify: bool = False, llm_roles: object | None = None,
             lance: LanceSearchConfig | None = None) -> Gearag:
        """Load the index at ``path``: a directory, or a Lance location (``s3://...``; extra ``lance``).

        ``verify`` also checks every file's checksum (every table's readability for Lance). ``lance``:
        a Lance index's query-time settings (ANN probes, caches, the local file cache; ignored for a
        directory index).
        """
        from gearag.store.backend import open_index

        return cls(open_index(path, verify=verify, lance=lance), llm_roles=llm_roles)

    def method(self, name: str, config: Any = None, **options: Any) -> Method:
        """The method ``name`` with ``config`` (or ``options``), built once and cached."""
        if config is None:
            config = method_config(name, options)
        elif options:
            raise TypeError("pass either a config or options, not both")
        return self.index.cached(f"method:{name}", lambda: make_method(self.index, name, config,
                                                                       llm_roles=self.llm_roles),
                                 variant=repr(config))

    def retrieve(self, question: str, method: str = "bm25", top_k: int = 10, **options: Any) -> Result:
        """The top ``top_k`` passages for ``question`` (with the method's trace and answer, if any)."""
        return self.method(method, **options)(question, top_k)

    def ask(self, question: str, method: str = "gear", top_k: int = 5, **options: Any) -> Result:
        """Answer ``question``: the agent by default, which also writes an answer."""
        return self.retrieve(question, method, top_k, **options)

    def row(self, result: Result, *, qid: str | None = None, question: str | None = None) -> dict[str, Any]:
        """The run-file row of a result (see :func:`gearag.results.result_row`)."""
        return result_row(self.index, result, qid=qid, question=question)
