"""SiReRAG (Zhang et al., 2025): similarity and relatedness trees flattened into one retrieval pool.

Modules, one concept each:

* :mod:`~gearag.sirerag.clustering` — RAPTOR soft clustering (UMAP + GMM/BIC);
* :mod:`~gearag.sirerag.propositions` — facts with entities per passage (offline spaCy / LLM);
* :mod:`~gearag.sirerag.aggregates` — proposition aggregates by shared entity;
* :mod:`~gearag.sirerag.summarise` — extractive and LLM cluster summarisers;
* :mod:`~gearag.sirerag.tree` — one recursive-summary tree with provenance;
* :mod:`~gearag.sirerag.pool` — the flattened pool and its Table-5 variants;
* :mod:`~gearag.sirerag.pipeline` — both trees from passages in one call.
"""
