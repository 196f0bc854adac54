"""Run files: one JSON line per question, written resumably.

Row contract (the CLI's ``retrieve`` output)::

    {"id", "question", "passages": [{"id", "title", "text", "score"}, ...]}

best first; later methods add fields (``answer``, ``trace``). Rows go to
``RUN.jsonl.partial`` as they are produced, each flushed, and the file is
renamed to ``RUN.jsonl`` when every question is done. Rerunning the same
command after an interruption skips questions already in the partial file,
unless the settings recorded beside it (``RUN.jsonl.partial.settings.json``:
method, options, questions and the index's identity, i.e. its manifest
checksum) differ: then the run restarts and :attr:`RunWriter.restart_reason`
says why. Files are read by ``\n`` only (JSON Lines), so any valid Unicode
in a row, U+2028 included, round-trips.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from gearag.data.jsonio import json_lines, read_text
from gearag.errors import DataError
from gearag.outputs import atomic_write, check_output_file


def read_run(path: str | Path) -> list[dict[str, Any]]:
    """Read a run file; malformed lines are an error naming the line."""
    path = Path(path)
    rows: list[dict[str, Any]] = []
    for lineno, line in json_lines(read_text(path)):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            if not rows and line.strip() in ("[", "{"):  # one JSON document over many lines: not a run
                raise DataError(f"{path}: not a run file (JSON Lines of one object per question, as gearag "
                                "retrieve writes); a questions file? gearag eval takes QUESTIONS then RUN") from None
            raise DataError(f"{path}: line {lineno}: invalid JSON ({exc.msg})") from None
        if not isinstance(row, dict) or "id" not in row or not isinstance(row.get("passages"), list):
            raise DataError(f"{path}: line {lineno}: expected an object with 'id' and a 'passages' list")
        rows.append(row)
    return rows


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _what_changed(old: Any, new: dict[str, Any]) -> str:
    """Why a partial run with settings ``old`` cannot continue under ``new``."""
    if not isinstance(old, dict):
        return "its settings file is unreadable"
    if old.get("index_identity") != new.get("index_identity") and "index_identity" in new:
        return f"the index at {new.get('index', 'the same path')} was rebuilt or changed since it was written"
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return f"it was written with other settings ({', '.join(keys)})"


class RunWriter:
    """Append rows to ``<out>.partial``; ``finish()`` renames it to ``out``.

    ``settings`` (method, index, options...) are stored beside the partial
    file; a resumed run with different settings starts over rather than mix
    rows of two configurations.
    """

    def __init__(
        self, out: str | Path, *, resume: bool = True, settings: dict[str, Any] | None = None,
        inputs: tuple[str | Path | None, ...] = (),
    ) -> None:
        self.out = check_output_file(out, inputs=inputs)
        self.partial = check_output_file(self.out.with_name(self.out.name + ".partial"), inputs=inputs)
        self.meta = check_output_file(self.out.with_name(self.out.name + ".partial.settings.json"), inputs=inputs)
        self.done: dict[str, dict[str, Any]] = {}
        self.discarded = 0
        #: Why an interrupted run's rows were discarded (None: resumed, or nothing to resume).
        self.restart_reason: str | None = None
        settings = json.loads(json.dumps(settings or {}, default=str))
        # A partial file without settings (written by hand, or by an older gearag) is trusted.
        old = _read_json(self.meta) if self.meta.exists() else settings
        if self.partial.exists():
            if not resume:
                self.restart_reason = "--no-resume was given"
            elif old != settings:
                self.restart_reason = _what_changed(old, settings)
            if self.restart_reason is None:
                self._recover()
            else:
                self.discarded = sum(1 for _ in self.partial.open("rb"))
                self.partial.unlink()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(self.meta) as fh:
            fh.write(json.dumps(settings))
        self._fh: IO[str] = self.partial.open("a", encoding="utf-8")

    def _recover(self) -> None:
        good = 0
        with self.partial.open("rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break
                try:
                    row = json.loads(raw)
                    key = str(row["id"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    break
                self.done[key] = row
                good += len(raw)
        with self.partial.open("r+b") as fh:
            fh.truncate(good)

    def write(self, row: dict[str, Any]) -> None:
        self._fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._fh.flush()
        self.done[str(row["id"])] = row

    def finish(self, order: list[str]) -> list[dict[str, Any]]:
        """Write the final file in question order and remove the partial one."""
        self._fh.close()
        rows = [self.done[i] for i in order if i in self.done]
        with atomic_write(self.out) as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.partial.unlink(missing_ok=True)
        self.meta.unlink(missing_ok=True)
        return rows

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()
