"""Run files: one JSON line per question, written resumably.

Row contract (the CLI's ``retrieve`` output)::

    {"id", "question", "passages": [{"id", "title", "text", "score"}, ...]}

best first; later methods add fields (``answer``, ``trace``). Rows go to
``RUN.jsonl.partial`` as they are produced, each flushed, and the file is
renamed to ``RUN.jsonl`` when every question is done. Rerunning the same
command after an interruption skips questions already in the partial file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from gearag.data.jsonio import read_text
from gearag.errors import DataError


def read_run(path: str | Path) -> list[dict[str, Any]]:
    """Read a run file; malformed lines are an error naming the line."""
    path = Path(path)
    rows = []
    for lineno, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
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


class RunWriter:
    """Append rows to ``<out>.partial``; ``finish()`` renames it to ``out``.

    ``settings`` (method, index, options...) are stored beside the partial
    file; a resumed run with different settings starts over rather than mix
    rows of two configurations.
    """

    def __init__(self, out: str | Path, *, resume: bool = True, settings: dict[str, Any] | None = None) -> None:
        self.out = Path(out)
        self.partial = self.out.with_name(self.out.name + ".partial")
        self.meta = self.out.with_name(self.out.name + ".partial.settings.json")
        self.done: dict[str, dict[str, Any]] = {}
        self.discarded = 0
        settings = json.loads(json.dumps(settings or {}, default=str))
        # A partial file without settings (written by hand, or by an older gearag) is trusted.
        same = not self.meta.exists() or _read_json(self.meta) == settings
        if resume and self.partial.exists() and same:
            self._recover()
        elif self.partial.exists():
            self.discarded = sum(1 for _ in self.partial.open("rb"))
            self.partial.unlink()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.meta.write_text(json.dumps(settings), encoding="utf-8")
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
        tmp = self.out.with_name(self.out.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.out)
        self.partial.unlink(missing_ok=True)
        self.meta.unlink(missing_ok=True)
        return rows

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()
