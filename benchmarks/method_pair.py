"""Two indexes side by side under every retrieval method: the same passages, rank by rank, or not.

    PYTHONPATH=src python benchmarks/method_pair.py --a IDX_A --b IDX_B --questions Q.json [--n 100] [--slow 30] \
        [--methods gear,syncge]

For each registered method (or each of ``--methods``), each question's top 10 passages (by passage id, so
that two indexes whose rows differ compare) on both indexes. The iterative methods (IRCoT and HippoRAG +
IRCoT) take the first ``--slow`` questions only. Prints, per method, how many of its rankings differ and
the first two that do. Where two indexes hold the same passages and triples but number their entities
differently (a delta add against a full add of the same passages), every ranking should be equal.
"""

from __future__ import annotations

from gearag.api import Gearag
from gearag.registry import REGISTRY
from rank_pair import pair_args, questions_of

#: Methods that run several retrieval rounds per question.
ITERATIVE = ("ircot", "hipporag-ircot")


def top_ids(g: Gearag, question: str, method: str) -> list[str]:
    return [g.index.passages[h.idx].id for h in g.retrieve(question, method, 10).passages]


def main() -> None:
    args = pair_args(__doc__, "a", "b", extra=(("--slow", 30),), names=("--methods",))
    a, b = Gearag.open(args.a), Gearag.open(args.b)
    questions = questions_of(args)
    differ_total = 0
    for method in args.methods.split(",") if args.methods else REGISTRY.names("method"):
        asked = questions[: args.slow] if method in ITERATIVE else questions
        differ = [(q, x, y) for q in asked if (x := top_ids(a, q, method)) != (y := top_ids(b, q, method))]
        differ_total += len(differ)
        print(f"{method}: {len(asked) - len(differ)} of {len(asked)} equal", flush=True)
        for q, x, y in differ[:2]:
            print(f"  {q[:70]!r}: a {x[:5]} b {y[:5]}")
    print(f"rankings that differ: {differ_total}")


if __name__ == "__main__":
    main()
