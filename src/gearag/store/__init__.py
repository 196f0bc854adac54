"""On-disk stores: the index directory, the triple graph and resumable checkpoints."""

# A sharded index is read through the layout its module registers (gearag.store.index.LAYOUTS): importing any
# part of gearag.store makes every layout readable.
from gearag.store import shards as _shards  # noqa: F401
