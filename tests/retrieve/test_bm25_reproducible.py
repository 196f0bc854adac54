"""BM25 files are a function of the texts alone (not of the process's string-hash seed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from conftest import TINY
from gearag.retrieve.bm25 import build_bm25

_BUILD = """
import sys
from conftest import TINY
from gearag.retrieve.bm25 import build_bm25, save_bm25
from pathlib import Path
save_bm25(build_bm25([f"{t} {x}" for t, x in TINY]), Path(sys.argv[1]))
"""


def test_bm25_files_do_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    tests = str(Path(__file__).resolve().parents[1])
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed,
               "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
        subprocess.run([sys.executable, "-c", _BUILD, str(tmp_path / seed)], check=True, env=env, timeout=120)
    files = sorted(p.name for p in (tmp_path / "1").iterdir())
    assert files and files == sorted(p.name for p in (tmp_path / "2").iterdir())
    assert [f for f in files if (tmp_path / "1" / f).read_bytes() != (tmp_path / "2" / f).read_bytes()] == []


def test_sorted_term_ids_keep_the_scores() -> None:
    import bm25s

    from gearag.tokenizer import stemmer as _stemmer

    texts = [f"{t} {x}" for t, x in TINY]
    ours = build_bm25(texts)
    plain = bm25s.BM25()
    plain.index(bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer(), show_progress=False), show_progress=False)
    terms = [t for t, _ in sorted(ours.vocab_dict.items(), key=lambda kv: kv[1]) if t]  # bm25s adds ""
    assert terms == sorted(terms) and len(terms) > 20  # ids in term order
    for query in (["basketbal", "father"], ["liverpool"], ["volcano", "lava", "earth"]):
        np.testing.assert_array_equal(ours.get_scores(query), plain.get_scores(query))
