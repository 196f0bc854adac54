"""A :class:`~gearag.indexing.executor.BatchExecutor` on Ray Data (``gearag index --ray``).

Each stage's rows become a Ray Data dataset (one block per batch) mapped with
``map_batches`` over a pool of actors (``concurrency`` = workers, one CPU
each). An actor loads its extractor (spaCy's pipeline) or embedder once and
keeps it for every batch it is given. Results stream back to the driver as
batches finish, keyed by row: the extraction stage appends them to the
build's checkpoint as they arrive, and both stages merge them in row order,
so the index is the one a single process builds.

Failures (docs/distributed.md):

* an exception in a batch is retried in the same worker, ``retries`` times
  (Ray Data's ``retried_map_errors`` / ``max_map_retries``);
* a worker that dies (killed, out of memory, node lost) is restarted and its
  batch retried on it, ``retries`` times (Ray's ``max_restarts`` /
  ``max_task_retries`` of the actor);
* an error in the input (:class:`~gearag.errors.GearagError`: a passage missing
  from an OpenIE file, an LLM endpoint that failed after its own retries) is
  not retried: it stops the build at once with one line naming the batch;
* a batch that still fails stops the build with one line naming the batch's
  rows and first passage (:class:`~gearag.errors.ExecutorError`); the rows
  finished before it stay in the checkpoint and a rerun skips them.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from gearag.distributed.config import LOCAL, RayConfig
from gearag.errors import ConfigError, ExecutorError, GearagError
from gearag.extract.base import TripleExtractor
from gearag.model import Fact, Passage
from gearag.progress import track

#: At most this many blocks per dataset (larger inputs get larger blocks, batches stay ``batch_size``).
MAX_BLOCKS = 10_000


def require_ray() -> ModuleType:
    """Import and return the ``ray`` module (with ``ray.data`` loaded); a one-line error naming the extra when it
    is not installed."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'gearag[ray]'") from None
    return ray


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


class _ExtractWorker:
    """A Ray Data actor: one extractor per worker process, one batch of passages per call."""

    def __init__(self, extractor: TripleExtractor) -> None:
        self.extractor = extractor

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows = batch["row"]
        passages = [Passage(str(i), str(t), str(x)) for i, t, x in zip(batch["id"], batch["title"], batch["text"],
                                                                      strict=True)]
        where = f"extraction batch of rows {int(rows[0])}-{int(rows[-1])} (first passage {passages[0].title!r})"
        try:
            results = list(self.extractor.extract(passages))
            if len(results) != len(passages):
                raise RuntimeError(f"the extractor returned {len(results)} results for {len(passages)} passages")
        except GearagError as exc:
            # Bad input (a passage missing from an OpenIE file, an LLM endpoint that failed for good
            # after its own retries): the same on every attempt, so it is reported, not retried.
            errors = np.full(len(passages), "", dtype=object)
            errors[0] = f"{where}: {_first_line(exc)}"
            return {"row": rows, "triples": np.full(len(passages), "[]", dtype=object),
                    "report": np.full(len(passages), "", dtype=object), "error": errors}
        except Exception as exc:
            raise ExecutorError(f"{where} failed: {_first_line(exc)}") from exc
        triples = np.empty(len(results), dtype=object)
        triples[:] = [json.dumps([list(t)[:3] for t in facts], ensure_ascii=False) for facts in results]
        # Counts the driver's extractor reports (an LLM's token usage): the worker's since its last batch.
        reports = np.full(len(results), "", dtype=object)
        take_report = getattr(self.extractor, "take_report", None)
        if take_report is not None:
            reports[0] = json.dumps(take_report())
        return {"row": rows, "triples": triples, "report": reports,
                "error": np.full(len(results), "", dtype=object)}


class _EmbedWorker:
    """A Ray Data actor: the embedder loaded once per worker process.

    Each input row is one chunk of ``--embed-batch`` texts, cut where a local
    build cuts them, with ``first``: the flat row of its first text. A neural
    embedder thus pads the same texts together as it does in one process.
    """

    def __init__(self, embedder: str) -> None:
        from gearag.embed import make_embedder

        self.embedder = make_embedder(embedder)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from gearag.indexing.executor import embed_chunk

        rows, vectors, weights = [], [], []
        for first, texts in zip(batch["first"], batch["texts"], strict=True):
            start = int(first)
            try:
                chunk_vectors, chunk_weights = embed_chunk(self.embedder, [str(t) for t in texts])
            except Exception as exc:
                raise ExecutorError(f"embedding batch of rows {start}-{start + len(texts) - 1} failed: "
                                    f"{_first_line(exc)}") from exc
            rows.append(np.arange(start, start + len(texts), dtype=np.int64))
            vectors.append(chunk_vectors)
            if chunk_weights is not None:
                weights.append(chunk_weights)
        out = {"row": np.concatenate(rows), "vector": np.concatenate(vectors)}
        if weights:
            out["weight"] = np.concatenate(weights)
        return out


class RayExecutor:
    """Runs the extract and embed stages as Ray Data batches; see the module docstring.

    Connects (or starts a local instance) on first use and disconnects in
    :meth:`close` if it did; an already initialised Ray (a test's or a
    notebook's) is used as is and left running.
    """

    name = "ray"

    def __init__(self, config: RayConfig | None = None) -> None:
        self.config = config or RayConfig()
        self._ray: Any = None
        self._owns = False

    # -- connection -------------------------------------------------------------------------
    def start(self) -> RayExecutor:
        """Import Ray and connect; a bad address or an unreachable cluster is a one-line error."""
        if self._ray is not None:
            return self
        ray = require_ray()
        if not ray.is_initialized():
            address = None if self.config.address == LOCAL else self.config.address
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.WARNING,
                "configure_logging": True,
            }
            if address is None:
                kwargs["address"] = "local"
                if self.config.workers is not None:
                    kwargs["num_cpus"] = self.config.workers
            else:
                kwargs["address"] = address
            try:
                ray.init(**kwargs)
            except Exception as exc:  # ConnectionError, ValueError on a malformed address, ...
                raise ConfigError(f"--ray {self.config.address}: cannot start or reach Ray: "
                                  f"{_first_line(exc)}") from None
            self._owns = True
        self._ray = ray
        return self

    def close(self) -> None:
        """Disconnect from Ray (stopping the local instance) if :meth:`start` connected."""
        if self._ray is not None and self._owns:
            self._ray.shutdown()
        self._ray, self._owns = None, False

    def __enter__(self) -> RayExecutor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def workers(self) -> int:
        """Actors per stage: the configured number, else one per CPU of the cluster."""
        if self.config.workers is not None:
            return self.config.workers
        cpus = int(self.start()._ray.cluster_resources().get("CPU", 1))
        return max(1, cpus)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "address": self.config.address, "workers": self.workers(),
                "batch_size": self.config.batch_size, "retries": self.config.retries}

    # -- the generic map ------------------------------------------------------------------
    def _map(
        self,
        columns: Mapping[str, Sequence[Any]],
        worker: type,
        worker_args: tuple[Any, ...],
        batch_size: int,
        what: str,
    ) -> Iterator[dict[str, np.ndarray]]:
        """Map ``worker(*worker_args)`` over ``columns`` (plus a ``row`` column) in batches; yield output blocks."""
        ray = self.start()._ray
        from ray.data import ActorPoolStrategy, DataContext

        n = len(next(iter(columns.values())))
        ctx = DataContext.get_current()
        saved = {key: getattr(ctx, key) for key in _CONTEXT}
        data_log = logging.getLogger("ray.data")
        log_level = data_log.level
        retries = self.config.retries
        try:
            for key, value in _CONTEXT.items():
                setattr(ctx, key, value)
            ctx.max_map_retries = retries
            data_log.setLevel(logging.ERROR)  # Ray Data's per-dataset INFO lines; gearag reports progress
            items = [{"row": i, **{k: v[i] for k, v in columns.items()}} for i in range(n)]
            blocks = max(1, min(MAX_BLOCKS, -(-n // batch_size)))
            ds = ray.data.from_items(items, override_num_blocks=blocks)
            del items
            with warnings.catch_warnings():
                # Ray 2.60 deprecates **ray_remote_args with no named replacement for the actor
                # restart/retry bounds yet (its defaults are unbounded).
                warnings.simplefilter("ignore", DeprecationWarning)
                ds = ds.map_batches(
                    worker,
                    fn_constructor_args=worker_args,
                    batch_size=batch_size,
                    batch_format="numpy",
                    compute=ActorPoolStrategy(size=min(self.workers(), blocks)),
                    num_cpus=1,
                    max_restarts=retries,
                    max_task_retries=retries,
                )
            try:
                yield from ds.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=1)
            except ExecutorError:
                raise
            except Exception as exc:
                raise _one_line_failure(exc, what, retries) from None
        finally:
            for key, value in saved.items():
                setattr(ctx, key, value)
            data_log.setLevel(log_level)

    # -- the two stages ---------------------------------------------------------------------
    def extract(
        self, extractor: TripleExtractor, passages: Sequence[Passage], *, description: str
    ) -> Iterator[tuple[int, list[Fact]]]:
        if not passages:
            return
        for_worker: Callable[[], TripleExtractor] | None = getattr(extractor, "for_worker", None)
        shipped = for_worker() if for_worker is not None else extractor
        self._check_picklable(shipped)
        columns = {"id": [p.id for p in passages], "title": [p.title for p in passages],
                   "text": [p.text for p in passages]}
        blocks = self._map(columns, _ExtractWorker, (shipped,), self.config.batch_size, "extraction")
        merge: Callable[[dict[str, Any]], None] | None = getattr(extractor, "merge_report", None)
        rows = _extracted_rows(blocks, merge)
        yield from track(rows, total=len(passages), description=f"{description} (ray)")

    def embed(
        self, embedder: str, collections: Mapping[str, Sequence[str]], *, batch: int, description: str
    ) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        # Every collection's texts in one flat row space; chunks never cross a collection and are
        # cut where a local build cuts them. One dataset: the workers load the embedder once.
        offsets = np.cumsum([0, *(len(t) for t in collections.values())])
        firsts, chunks = [], []
        for offset, texts in zip(offsets, collections.values(), strict=False):
            for start in range(0, len(texts), batch):
                firsts.append(int(offset) + start)
                chunks.append(list(texts[start : start + batch]))
        total = int(offsets[-1])
        vectors: np.ndarray | None = None
        weights: np.ndarray | None = None
        seen = np.zeros(total, dtype=bool)
        if chunks:
            blocks = self._map({"first": firsts, "texts": chunks}, _EmbedWorker, (embedder,), 1, "embedding")
            for block in track(blocks, total=len(chunks), description=f"{description} (ray, batches)"):
                rows = np.asarray(block["row"], dtype=np.int64)
                chunk = np.asarray(block["vector"], dtype=np.float32)
                if vectors is None:
                    vectors = np.zeros((total, chunk.shape[1]), dtype=np.float32)
                    weights = np.zeros(total, dtype=np.float32) if "weight" in block else None
                vectors[rows] = chunk
                if weights is not None:
                    weights[rows] = np.asarray(block["weight"], dtype=np.float32)
                seen[rows] = True
        if vectors is None:  # no texts at all: ask the embedder its dimension here
            from gearag.embed import make_embedder

            model = make_embedder(embedder)
            vectors = np.zeros((0, model.dim), dtype=np.float32)
            weights = np.zeros(0, dtype=np.float32) if hasattr(model, "token_sums") else None
        if not seen.all():
            raise ExecutorError(f"embedding on Ray lost row {int(np.flatnonzero(~seen)[0])}")
        out: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        for (name, _), lo, hi in zip(collections.items(), offsets[:-1], offsets[1:], strict=True):
            out[name] = (vectors[lo:hi].copy(), None if weights is None else weights[lo:hi].copy())
        return out

    @staticmethod
    def _check_picklable(extractor: object) -> None:
        import ray.cloudpickle as cloudpickle

        try:
            cloudpickle.dumps(extractor)
        except Exception as exc:
            raise ConfigError(f"--ray: extractor {getattr(extractor, 'key', extractor)!r} cannot be sent to Ray "
                              f"workers ({_first_line(exc)})") from None


#: DataContext settings for a build (restored afterwards): Ray Data's own bars and logs
#: off (gearag shows progress), every exception in a batch retried.
_CONTEXT: dict[str, Any] = {
    "enable_progress_bars": False,
    "print_on_execution_start": False,
    "enable_auto_log_stats": False,
    "retried_map_errors": True,
    "max_map_retries": 0,
}


def _extracted_rows(
    blocks: Iterator[dict[str, np.ndarray]], merge_report: Callable[[dict[str, Any]], None] | None
) -> Iterator[tuple[int, list[Fact]]]:
    for block in blocks:
        failed = next((str(e) for e in block["error"] if e), None)
        if failed is not None:
            raise ExecutorError(failed)
        if merge_report is not None:
            for report in block["report"]:
                if report:
                    merge_report(json.loads(str(report)))
        for row, triples in zip(block["row"], block["triples"], strict=True):
            yield int(row), [Fact(*t) for t in json.loads(str(triples))]


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        cur = stack.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        yield cur
        stack.extend([cur.__cause__, cur.__context__, getattr(cur, "cause", None)])


def _one_line_failure(exc: BaseException, what: str, retries: int) -> ExecutorError:
    """The one-line error of a batch that failed for good: the batch's own message when it sent one."""
    for cause in _causes(exc):
        if isinstance(cause, ExecutorError):
            return ExecutorError(f"{_first_line(cause)} (after {retries} retries)")
    for cause in _causes(exc):
        text = str(cause)
        if "ExecutorError: " in text:  # the cause came back as text only
            line = text.split("ExecutorError: ", 1)[1].splitlines()[0]
            return ExecutorError(f"{line} (after {retries} retries)")
    name = type(exc).__name__
    died = "died" in str(exc).lower() or "ActorDied" in name or "WorkerCrashed" in name
    reason = f"a Ray worker died and its batch failed after {retries} retries" if died else "Ray failed"
    return ExecutorError(f"{what} on Ray: {reason}: {name}: {_first_line(exc)}")

