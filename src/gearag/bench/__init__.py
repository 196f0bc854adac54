"""``gearag bench``: every method side by side on the same indices, in the GEAR paper's Table-2 layout.

* :mod:`.datasets` — the shared benchmark sets (or any corpus + questions pair);
* :mod:`.build` — index builds in a child process (wall time, peak RSS), reused when present;
* :mod:`.subset` — with ``--limit N``, an index over those questions' own passages only;
* :mod:`.grid` — which rows run (base retrievers, +NaiveGE, +SyncGE, GEAR, the peers, ablations);
* :mod:`.evaluate` — one index, every row, through :class:`gearag.api.Gearag`;
* :mod:`.report` — the Markdown table, the JSON numbers and the two figures;
* :mod:`.run` — the command's driver; :mod:`.memory` — peak resident memory.
"""
