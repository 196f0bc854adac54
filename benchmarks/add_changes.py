"""How many about terms one add changes: normalised as stored today, or raw with the normalisation at query time.

    python benchmarks/add_changes.py INDEX_DIR N_NEW

INDEX_DIR is a sharded index right after an add of N_NEW passages (its last rows). An about entry of
an endpoint-only name e is the sum, over the title names x it contains, of ``share(e, x) * w(x, p) /
total(x)`` for each page p of x; a title name's own entries have share 1. Stored normalised, every
entry of x's pages changes when x gains a page (its total changes). Kept raw (``share * w`` per term,
``1 / total(x)`` applied at query time), an add only adds the terms of its own pages. Prints both
counts (BENCHMARKS.md, "What an add changes if about weights were normalised at query time").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from gearag.arrays import ranges
from gearag.store.npy import load_npy


def main(root: Path, n_new: int) -> None:
    manifest = json.loads((root / "manifest.json").read_text())
    g = root / "generations" / manifest["generation"]["name"]

    def array(rel: str) -> np.ndarray:
        return np.asarray(load_npy(g / rel))

    lex_names, lex_rows = array("resolve/lex_names.npy"), array("resolve/lex_rows.npy")
    first, lex = array("union/name_first.npy"), array("union/name_lex.npy")
    ptr, cont_name = array("union/name_cont_ptr.npy"), array("union/name_cont_name.npy")
    n_passages = int(manifest["counts"]["passages"])
    n_names = int(lex_names.max()) + 1
    ep = np.flatnonzero((first >= 0) & (lex < 0))  # endpoint-only names
    per = ptr[ep + 1] - ptr[ep]
    contained = cont_name[ranges(ptr[ep], per)]
    containers = np.bincount(contained, minlength=n_names)  # endpoint-only names containing each title name
    pages = np.bincount(lex_names, minlength=n_names)
    new_pages = np.bincount(lex_names[lex_rows >= n_passages - n_new], minlength=n_names)
    terms = int((pages * (1 + containers)).sum())
    gained = new_pages > 0
    print(f"title names {n_names:,}, endpoint-only names {len(ep):,}, about terms {terms:,}")
    raw = int((new_pages * (1 + containers)).sum())
    normalised = int((pages[gained] * (1 + containers[gained])).sum())
    print(f"changed by the add, normalised as stored: {normalised:,} ({normalised / terms:.2%})")
    print(f"changed by the add, raw terms: {raw:,} ({raw / terms:.2%})")
    owner = np.repeat(ep, per)
    print(f"title names that gained pages {int(gained.sum()):,}; their pages {int(pages[gained].sum()):,}; "
          f"endpoint-only names containing one {len(np.unique(owner[gained[contained]])):,}")
    names = json.loads((g / "resolve" / "names.json").read_text())
    for x in np.flatnonzero(gained)[np.argsort(-(new_pages * (1 + containers))[gained])][:5].tolist():
        print(f"  {names[x]!r}: {pages[x]} pages ({new_pages[x]} new), in {containers[x]:,} endpoint-only names")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
