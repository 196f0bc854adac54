"""Offline SiReRAG pools on the three dev sets: sizes, build time and memory per stage, answer recall.

Usage::

    PYTHONPATH=src python benchmarks/sirerag_dev.py [--sets musique,hotpotqa,2wiki] [--out RESULTS.json]

Per set: embed the leaves (wordllama), extract sentence-level propositions
offline (spaCy), build the proposition aggregates, the similarity tree (also
the RAPTOR baseline) and the relatedness tree with extractive summaries, and
flatten the pools ``chunks``, ``raptor``, ``sirerag`` and the Table-5
ablations. Retrieval is a dense cosine top-k over the pool embeddings
(collapsed tree). Metrics, over questions whose answer is not yes/no:

* answer recall@k — the SQuAD-normalised gold answer or an alias occurs (as
  whole words) in the normalised text of one of the top-k nodes;
* source recall@k — the fraction of gold passages among the passages the
  top-k nodes cover (a summary covers all its descendants' passages, so this
  favours pools with summaries: read it as provenance, not as passage recall);
* words@5 — mean words of the top-5 texts (long nodes make answer recall easier);
* top5_share — percentage of the top-5 slots taken by each kind of node.

Wall times on a shared machine vary with load; CPU seconds are printed too.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from gearag.bench.memory import peak_mb, reset_peak
from gearag.data.corpus import load_corpus
from gearag.data.questions import GoldMatcher, load_questions
from gearag.embed import make_embedder
from gearag.evaluation import normalize_answer
from gearag.sirerag.pipeline import build_sirerag_trees, leaf_texts, single_propositions
from gearag.sirerag.pool import VARIANTS, build_pool, search
from gearag.sirerag.propositions import OfflinePropositionConfig, offline_propositions
from gearag.sirerag.summarise import ExtractiveSummariser

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SETS = {
    "musique": ("musique_train/musique_train_corpus.json", "musique_train/musique_train.json"),
    "hotpotqa": ("hotpotqa_train/hotpotqa_train_corpus.json", "hotpotqa_train/hotpotqa_train.json"),
    "2wiki": ("2wikimultihopqa/2wikimultihopqa_corpus.json", "2wikimultihopqa/2wikimultihopqa.json"),
}
KS = (5, 20)


class Stage:
    def __init__(self, log: dict, name: str) -> None:
        self.log, self.name = log, name

    def __enter__(self) -> Stage:
        reset_peak()
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.log[self.name] = {
            "wall_s": round(time.perf_counter() - self.wall, 1),
            "cpu_s": round(time.process_time() - self.cpu, 1),
            "peak_mb": round(peak_mb()),
        }
        print(f"  {self.name:<18} {self.log[self.name]}", flush=True)


def _contains(text_norm: str, answers: list[str]) -> bool:
    padded = f" {text_norm} "
    return any(a and f" {a} " in padded for a in answers)


def evaluate(pool, q_emb, answers, golds, k_max: int = 20) -> dict[str, float]:
    rows, _ = search(pool, q_emb, k=k_max)
    norm_cache: dict[int, str] = {}
    out: dict[str, float] = {}
    for k in KS:
        hits, src = [], []
        for qi, ans in enumerate(answers):
            top = [int(r) for r in rows[qi, :k]]
            for r in top:
                if r not in norm_cache:
                    norm_cache[r] = normalize_answer(pool.texts[r])
            hits.append(any(_contains(norm_cache[r], ans) for r in top))
            covered = set().union(*(set(pool.sources(r).tolist()) for r in top))
            gold = golds[qi]
            src.append(sum(1 for g in gold if g & covered) / len(gold) if gold else 0.0)
        out[f"answer_recall@{k}"] = round(100 * float(np.mean(hits)), 1)
        out[f"source_recall@{k}"] = round(100 * float(np.mean(src)), 1)
    kinds: dict[str, int] = {}
    for r in rows[:, :5].ravel():
        key = pool.kinds[int(r)] if pool.kinds[int(r)] != "summary" else f"{pool.trees[int(r)]}_summary"
        kinds[key] = kinds.get(key, 0) + 1
    out["top5_share"] = {k: round(100 * v / rows[:, :5].size, 1) for k, v in sorted(kinds.items())}
    out["words@5"] = round(float(np.mean([len(pool.texts[int(r)].split()) for r in rows[:, :5].ravel()])), 1)
    return out


def run_set(name: str, embedder) -> dict:
    corpus_path, questions_path = (DATA / p for p in SETS[name])
    passages = load_corpus(corpus_path)
    questions = load_questions(questions_path)
    matcher = GoldMatcher(passages)
    log: dict = {"passages": len(passages)}
    print(f"{name}: {len(passages)} passages, {len(questions)} questions", flush=True)
    with Stage(log, "embed_leaves"):
        emb = embedder.encode(leaf_texts(passages))
    with Stage(log, "propositions"):
        facts = offline_propositions(
            passages, OfflinePropositionConfig(processes=2 if len(passages) >= 1000 else 1))
    summariser = ExtractiveSummariser(embedder.encode)
    with Stage(log, "trees"):
        trees = build_sirerag_trees(passages, emb, facts, encode=embedder.encode, summariser=summariser)
    with Stage(log, "single_props"):
        props = single_propositions(facts, embedder.encode)
    log["tree_timings"] = {k: round(v, 1) for k, v in trees.timings.items()}
    log["similarity_levels"] = trees.similarity.level_sizes()
    log["relatedness_levels"] = trees.relatedness.level_sizes()
    st = trees.aggregate_stats
    log["facts"] = st.facts_in
    log["facts_without_entities"] = st.facts_without_entities
    log["aggregates"] = len(trees.aggregates)
    log["aggregate_max_facts"] = max(st.per_entity, default=0)
    # Questions with a non-yes/no answer.
    keep = [q for q in questions if q.answer and normalize_answer(q.answer) not in ("yes", "no")]
    answers = [[normalize_answer(a) for a in [q.answer, *q.answer_aliases] if a] for q in keep]
    golds = [matcher.resolve(q) for q in keep]
    q_emb = embedder.encode([q.question for q in keep])
    log["questions_scored"] = len(keep)
    log["pools"] = {}
    for variant in ("chunks", "raptor", "sirerag", *[v for v in VARIANTS if v not in ("chunks", "raptor", "sirerag")]):
        pool = build_pool(trees.similarity, trees.relatedness, variant=variant, propositions=props)
        t = time.perf_counter()
        res = evaluate(pool, q_emb, answers, golds)
        res["ms_per_query"] = round(1000 * (time.perf_counter() - t) / max(1, len(keep)), 2)
        res["size"] = len(pool)
        log["pools"][variant] = res
        print(f"  {variant:<27} {res}", flush=True)
    return log


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="musique,hotpotqa,2wiki")
    ap.add_argument("--out")
    args = ap.parse_args()
    reset_peak()
    t = time.perf_counter()
    embedder = make_embedder("wordllama")
    embedder.encode(["warm up"])
    print(f"embedder loaded in {time.perf_counter() - t:.1f}s", flush=True)
    results = {name: run_set(name, embedder) for name in args.sets.split(",")}
    print("\n| set | pool | size | answer R@5 | answer R@20 | source R@5 | words@5 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, log in results.items():
        for variant in ("chunks", "raptor", "sirerag"):
            r = log["pools"][variant]
            print(f"| {name} | {variant} | {r['size']} | {r['answer_recall@5']} | {r['answer_recall@20']} | "
                  f"{r['source_recall@5']} | {r['words@5']} |")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
