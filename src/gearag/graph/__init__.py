"""Graph algorithms shared by the graph-based methods (Personalized PageRank, ...)."""
