"""The GEAR agent (§5): multi-step retrieval with gist memory, reasoning and query rewriting."""
