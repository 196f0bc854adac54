"""Baselines over gearag's index: the base retrievers as methods, title-link, HippoRAG (v1 and 2) and IRCoT.

* :mod:`.base_method` — ``bm25``, ``dense`` and ``hybrid`` as methods; :mod:`.qa` — their answers (SiReRAG §5);
* :mod:`.titlelink` — BM25 plus the pages whose titles the top passages mention;
* :mod:`.phrases` — phrase nodes, passage×phrase counts, node specificity, synonym edges;
* :mod:`.hipporag` — the HippoRAG graphs (v1: phrases; v2: phrases and passages), built once per index;
* :mod:`.hipporag_method` — the ``hipporag`` and ``hipporag2`` methods;
* :mod:`.ircot` — the ``ircot`` and ``hipporag-ircot`` methods;
* :mod:`.config` — their typed configs; :mod:`.trace` — their typed traces.
"""
