"""The LanceDB backend: an index's collections in Lance tables, local or on object storage.

* :mod:`~gearag.store.lance.storage` — URIs, object-store options (bounded timeouts), connecting;
* :mod:`~gearag.store.lance.export` — ``gearag export INDEX_DIR URI``: a built index into Lance tables;
* :mod:`~gearag.store.lance.collection` — a collection whose rows, vectors and searches live in a table;
* :mod:`~gearag.store.lance.index` — the loaded index (an :class:`~gearag.store.interface.IndexStore`, as
  :class:`gearag.store.index.Index` is);
* :mod:`~gearag.store.lance.files` — graph files read by position: copied once to a local cache, memory-mapped;
* :mod:`~gearag.store.lance.memory` — capping glibc's malloc arenas (what freed scan buffers keep).

Everything here imports ``lancedb``/``lance`` lazily; without the ``lance`` extra a Lance URI is a
one-line error naming ``pip install 'gearag[lance]'``. See docs/lance.md.
"""

from gearag.store.lance.storage import is_lance_location

__all__ = ["is_lance_location"]
