"""The benchmark datasets: the three shared sets, or any corpus + questions pair."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gearag.errors import ConfigError


@dataclass(frozen=True)
class Dataset:
    name: str
    corpus: Path
    questions: Path
    #: HippoRAG's GPT-3.5 OpenIE triples for exactly this corpus, where published.
    openie: Path | None = None
    #: The GEAR paper's maximum agent iterations for this dataset (App. B.1); IRCoT gets the same.
    max_steps: int = 2


def data_dir() -> Path:
    """``$GEARAG_DATA``, else ``../shared/data`` beside the working directory or beside the checkout."""
    env = os.environ.get("GEARAG_DATA")
    if env:
        return Path(env)
    for base in (Path.cwd(), Path(__file__).resolve().parents[3]):
        candidate = base.parent / "shared" / "data"
        if candidate.is_dir():
            return candidate
    return Path.cwd().parent / "shared" / "data"


def shared_datasets(root: Path | None = None) -> dict[str, Dataset]:
    """MuSiQue (100 q), HotpotQA (100 q) and 2Wiki (1,000 q) as in ``../shared/data/README.md``."""
    d = root or data_dir()
    mus = d / "musique_train"
    return {
        "musique": Dataset("musique", mus / "musique_train_corpus.json", mus / "musique_train.json",
                           mus / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json", max_steps=4),
        "2wiki": Dataset("2wiki", d / "2wikimultihopqa" / "2wikimultihopqa_corpus.json",
                         d / "2wikimultihopqa" / "2wikimultihopqa.json"),
        "hotpotqa": Dataset("hotpotqa", d / "hotpotqa_train" / "hotpotqa_train_corpus.json",
                            d / "hotpotqa_train" / "hotpotqa_train.json"),
    }


def pick_datasets(names: str | None, corpus: Path | None, questions: Path | None,
                  max_steps: int | None = None) -> list[Dataset]:
    """The datasets a bench run covers (a ``--corpus``/``--questions`` pair replaces the shared sets)."""
    if (corpus is None) != (questions is None):
        raise ConfigError("--corpus and --questions go together")
    if corpus is not None and questions is not None:
        for path in (corpus, questions):
            if not path.is_file():
                raise ConfigError(f"{path}: no such file")
        return [Dataset(corpus.stem.removesuffix("_corpus"), corpus, questions, max_steps=max_steps or 2)]
    table = shared_datasets()
    chosen = [n.strip() for n in (names or ",".join(table)).split(",") if n.strip()]
    out = []
    for name in chosen:
        if name not in table:
            raise ConfigError(f"unknown dataset {name!r} (choose from {', '.join(table)})")
        ds = table[name]
        if not ds.corpus.is_file():
            raise ConfigError(f"{ds.corpus}: dataset {name!r} not found (set GEARAG_DATA)")
        if max_steps:
            ds = Dataset(ds.name, ds.corpus, ds.questions, ds.openie, max_steps)
        out.append(ds)
    return out
