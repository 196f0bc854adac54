"""Peer baselines over gearag's triple index: HippoRAG (v1 and 2, Personalized PageRank) and IRCoT.

* :mod:`.phrases` — phrase nodes, passage×phrase counts, node specificity, synonym edges;
* :mod:`.hipporag` — the HippoRAG graphs (v1: phrases; v2: phrases and passages), built once per index;
* :mod:`.hipporag_method` — the ``hipporag`` and ``hipporag2`` methods;
* :mod:`.ircot` — the ``ircot`` and ``hipporag-ircot`` methods;
* :mod:`.config` — their typed configs; :mod:`.trace` — their typed traces.
"""
