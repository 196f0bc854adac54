"""On-disk stores: the index directory, the triple graph and resumable checkpoints.

What the rest of gearag reads from a loaded index, on either backend, is :class:`IndexStore`
(:mod:`gearag.store.interface`), its collections :class:`CollectionStore` and its triple graph
:class:`TripleGraphStore`.
"""

# A sharded index is read through the layout its module registers (gearag.store.index.LAYOUTS): importing any
# part of gearag.store makes every layout readable.
from gearag.store import shards as _shards  # noqa: F401
from gearag.store.collection import CollectionStore
from gearag.store.graph import TripleGraphStore
from gearag.store.interface import IndexStore

__all__ = ["CollectionStore", "IndexStore", "TripleGraphStore"]
