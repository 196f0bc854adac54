"""Graph expansion (GEAR §4): diverse triple beam search, NaiveGE and SyncGE."""
