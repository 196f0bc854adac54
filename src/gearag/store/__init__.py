"""On-disk stores: the index directory, the triple graph and resumable checkpoints."""
