"""The shared benchmark datasets: where they live and how to load them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@dataclass(frozen=True)
class Dataset:
    name: str
    corpus: Path
    questions: Path
    #: HippoRAG's GPT-3.5 OpenIE triples for exactly this corpus, where published.
    openie: Path | None = None
    #: The GEAR paper's maximum agent iterations for this dataset (App. B.1).
    max_steps: int = 2


DATASETS = {
    "musique": Dataset(
        "musique",
        DATA / "musique_train" / "musique_train_corpus.json",
        DATA / "musique_train" / "musique_train.json",
        DATA / "musique_train" / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json",
        max_steps=4,
    ),
    "hotpotqa": Dataset(
        "hotpotqa",
        DATA / "hotpotqa_train" / "hotpotqa_train_corpus.json",
        DATA / "hotpotqa_train" / "hotpotqa_train.json",
    ),
    "2wiki": Dataset(
        "2wiki",
        DATA / "2wikimultihopqa" / "2wikimultihopqa_corpus.json",
        DATA / "2wikimultihopqa" / "2wikimultihopqa.json",
    ),
}
