"""Passage ids: the one rule every id that comes in must pass, and the ``p<n>`` ids of records without one.

An id is how a user names a passage later: ``gearag delete`` reads them one
per line with surrounding whitespace stripped and blank lines skipped, and
the HTTP API reads one from a URL path (``/v1/passages/{id}``). An id that
neither can say — empty, with leading or trailing whitespace, with a line
break, tab or other control character, or too long for a request line — was
accepted by ``index`` and ``add`` and could then never be deleted. So every
place ids come in (a corpus record, the ids ``delete`` reads) checks them with
:func:`check_id`, which refuses them with a one-line error naming the file and
record or line.

A record without an id is numbered ``p<start + row>`` (``start`` is 0 for
``gearag index``; ``gearag add`` continues the index's numbering,
:func:`gearag.indexing.incremental.next_auto_id`), so a corpus that has no
ids gets the same ids on every build. Where that id is taken — another
record's own id, or (for ``add``) a passage the index holds — the record gets
the first ``p<n>`` past the corpus's rows that is free (:func:`number_missing`):
one rule for ``index`` and ``add``, where ``index`` used to refuse such a corpus
as holding a duplicate id.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path

from gearag.errors import DataError

#: The longest id accepted, in characters: an id must fit a URL path (percent-encoded, up to 12 bytes a
#: character, under the 16 KB an HTTP server reads of a request line) and be readable in an error message.
MAX_ID_CHARS = 1024

#: Characters no id may hold: C0 and C1 controls and DEL (newline, tab, ...), the Unicode line and paragraph
#: separators (``str.splitlines`` breaks a line at each of these) and lone surrogates (not encodable as UTF-8).
_UNNAMEABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NUMBERED = re.compile(r"p(0|[1-9][0-9]*)")


def id_problem(pid: str) -> str | None:
    """What keeps ``pid`` from being named to ``gearag delete`` or the HTTP API; None if nothing does."""
    if not pid:
        return "is empty"
    if pid != pid.strip():
        return "has leading or trailing whitespace"
    bad = _UNNAMEABLE.search(pid)
    if bad is not None:
        return f"contains the control character U+{ord(bad.group()):04X}"
    if len(pid) > MAX_ID_CHARS:
        return f"is {len(pid):,} characters long (at most {MAX_ID_CHARS:,})"
    return None


def check_id(pid: str, where: str) -> str:
    """``pid`` if it is a valid passage id (:func:`id_problem`), else a one-line DataError naming ``where``."""
    problem = id_problem(pid)
    if problem is None:
        return pid
    shown = repr(pid) if len(pid) <= 80 else f"{pid[:60]!r}…"
    raise DataError(f"{where}: passage id {shown} {problem}; an id must be one that gearag delete and the "
                    "HTTP API can name (give the record another id, or none to have one made)")


def number_missing(ids: Sequence[str | None], start: int,
                   taken: Callable[[list[str]], Collection[str]] | None = None) -> list[str]:
    """``ids`` (one per record, None where a record has none) with each None replaced by a free ``p<n>`` id.

    Record ``row`` gets ``p<start + row>`` unless another record's id, or one ``taken`` returns (the ids of a
    list that are in use elsewhere: an index's passages), is that; then the first free ``p<n>`` with ``n`` past
    ``start + len(ids)``.
    """
    missing = [row for row, pid in enumerate(ids) if pid is None]
    given = {pid for pid in ids if pid is not None}
    made: dict[int, str] = {}
    wanted = [f"p{start + row}" for row in missing]
    held = set(taken(wanted)) if taken is not None and wanted else set()
    clash = []
    for row, pid in zip(missing, wanted, strict=True):
        if pid in given or pid in held:
            clash.append(row)
        else:
            made[row] = pid
    n = start + len(ids)
    while clash:
        batch: list[str] = []
        while len(batch) < len(clash):
            if f"p{n}" not in given:
                batch.append(f"p{n}")
            n += 1
        held = set(taken(batch)) if taken is not None else set()
        free = [pid for pid in batch if pid not in held]
        made.update(zip(clash, free, strict=False))
        clash = clash[len(free):]
    return [made[row] if pid is None else pid for row, pid in enumerate(ids)]


def numbered_after(ids: Iterable[str]) -> int:
    """One past the largest ``n`` of the ids that read ``p<n>`` (0 if none): where numbering can go on
    without meeting any of them."""
    return max((int(m.group(1)) + 1 for pid in ids if (m := _NUMBERED.fullmatch(pid))), default=0)


#: The longest line :func:`read_ids` reads: an id of :data:`MAX_ID_CHARS` with room for the spaces around it.
_LINE_CHARS = 4 * MAX_ID_CHARS


def read_ids(path: str | Path) -> list[str]:
    """Passage ids to delete: one per line (surrounding whitespace and blank lines ignored), each one an id
    :func:`check_id` accepts (an error names the line).

    Read line by line with each line bounded (an id is at most :data:`MAX_ID_CHARS`), so a pipe such as
    ``<(cut -f1 ids.tsv)`` works and ``/dev/zero`` or a binary file is an error at its first long line,
    not a read that never ends."""
    path = Path(path)
    ids = []
    try:
        with path.open(encoding="utf-8", newline=None) as fh:
            for n in itertools.count(1):
                line = fh.readline(_LINE_CHARS + 1)  # one more than a line may hold, to see it is too long
                if not line:
                    break
                if len(line) > _LINE_CHARS:
                    raise DataError(f"{path}: line {n}: longer than an id may be ({MAX_ID_CHARS} characters, "
                                    "with spaces around it)")
                if line.strip():
                    ids.append(check_id(line.strip(), f"{path}: line {n}"))
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, not a file of passage ids") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None
    if not ids:
        raise DataError(f"{path}: no passage ids (expected one per line)")
    return ids


__all__ = ["MAX_ID_CHARS", "check_id", "id_problem", "number_missing", "numbered_after", "read_ids"]
