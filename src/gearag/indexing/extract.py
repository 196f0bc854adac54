"""Stage 1 — extract: triples for every passage, resumable (GEAR §3).

The extraction checkpoint (:mod:`gearag.store.checkpoint`) lives in the
build's work directory, so an interrupted build never extracts a passage
twice (nor pays an LLM twice for it). The build's executor runs the
extractor (here, or in batches on Ray workers); finished rows are
appended to the checkpoint here, on the driver, as they arrive.
"""

from __future__ import annotations

from gearag.extract import make_extractor
from gearag.extract.run import extract_with_checkpoint
from gearag.indexing.stage import Build


class ExtractStage:
    name = "extract"

    def run(self, build: Build) -> None:
        extractor = build.extractor or make_extractor(build.config.extract.extractor)
        build.extractor = extractor
        build.extracted = extract_with_checkpoint(build.passages, extractor, build.work, executor=build.executor)
        build.manifest["extractor_key"] = extractor.key
        # The triples are in the checkpoint (and build.extracted): an extractor holding a file's triples
        # (openie) drops its copy rather than keeping it to the end of the build.
        release = getattr(extractor, "release", None)
        if callable(release):
            release()
        ledger = getattr(extractor, "ledger", None)
        if ledger is not None:
            build.manifest["extraction_usage"] = ledger.snapshot(role="extract").to_dict()
        fallbacks = getattr(extractor, "fallbacks", None)
        if callable(fallbacks) and fallbacks():
            # An LLM extractor's replies and how many the spaCy rules replaced (this run's: passages taken
            # from an interrupted build's checkpoint were counted by that run).
            build.manifest["extraction_fallbacks"] = fallbacks()
