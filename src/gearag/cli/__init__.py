"""The ``gearag`` command line.

Exit codes: 0 success, 2 bad input (one-line error, no traceback),
130 interrupted (rerun the same command to resume).

The app and its shared helpers are :mod:`gearag.cli.common`; the commands
are :mod:`gearag.cli.build` (index, info, export, add, delete, compact, synth) and
:mod:`gearag.cli.query` (retrieve, eval, ask, bench, demo, serve), registered
on import in that order (the order ``gearag --help`` lists them).
"""

from __future__ import annotations

from gearag.cli import build, query  # noqa: F401  (registers the commands)
from gearag.cli.common import _bare_ray, app, main

__all__ = ["_bare_ray", "app", "main"]
