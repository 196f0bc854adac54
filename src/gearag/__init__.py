"""gearag: multi-hop retrieval-augmented generation (GEAR and SiReRAG).

The library's main entry points::

    from gearag import build_index, Index, make_retriever
    index = build_index(load_corpus("corpus.json"), "my-index")
    hits = make_retriever(index, "hybrid").retrieve("Who ...?", k=10)
"""

from gearag.data import load_corpus, load_questions
from gearag.model import Hit, Passage, Question, Triple
from gearag.version import __version__

__all__ = ["Hit", "Index", "Passage", "Question", "Triple", "__version__", "build_index", "load_corpus",
           "load_questions", "make_retriever"]


def __getattr__(name: str):  # lazy: keep `import gearag` light
    if name == "Index":
        from gearag.store.index import Index

        return Index
    if name == "build_index":
        from gearag.indexing import build_index

        return build_index
    if name == "make_retriever":
        from gearag.retrieve import make_retriever

        return make_retriever
    raise AttributeError(name)
