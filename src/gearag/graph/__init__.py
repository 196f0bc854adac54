"""Graph algorithms: entity resolution, the passage-aware graph and the shared PPR.

* :mod:`gearag.graph.trie` — token trie: every known name found in a text in one pass;
* :mod:`gearag.graph.resolve` — mentions → the passages *about* them (index time);
* :mod:`gearag.graph.ppr` — weighted Personalized PageRank (scipy.sparse), also used by the HippoRAG baselines;
* :mod:`gearag.graph.passage_graph` — entity + passage nodes, seeding, PPR ranking;
* :mod:`gearag.graph.prepared` — what a PPR query reads, prepared at index time and memory-mapped;
* :mod:`gearag.graph.hubs` — which triple endpoints become entities (the hub cut).
"""
