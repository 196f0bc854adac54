"""Index construction: a pipeline of stages (extract → graph → bm25 → embed) and one atomic commit."""

from gearag.indexing.pipeline import DEFAULT_STAGES, build_index, work_dir_for, write_index

__all__ = ["DEFAULT_STAGES", "build_index", "work_dir_for", "write_index"]
