"""Retrieval and QA metrics.

* Recall@k (GEAR §6, App. D; HippoRAG): per question, the fraction of its
  gold passages found in the top ``k`` retrieved passages, averaged over
  questions. GEAR reports k ∈ {5, 10, 15}; we add k = 2 (HippoRAG's).
* Answer recall@k (SiReRAG's retrieval view, for pools whose nodes are not
  passages): whether the normalised gold answer or one of its aliases occurs,
  as whole words, in the normalised title + text of one of the top ``k``
  entries. Questions whose answer is yes/no are left out (the words occur
  everywhere), as are questions without an answer; both are counted.
* Passage recall of a pool run (entries with ``sources``): the gold passages
  among the passages the top ``k`` nodes cover ("via sources"). A summary
  covers all its descendants' passages, so read it as provenance.
* EM and F1 with the SQuAD answer normalisation (lower-case, strip
  punctuation, articles and extra whitespace), maximised over the gold answer
  and its aliases (Trivedi et al., 2023).

A question a metric cannot score — recall without gold passages, EM/F1
without a gold answer (or without the run's answer), answer recall without a
usable answer — is left out of that metric's mean and counted, never scored
0: a 0 would pull the mean down for a question nobody can answer right. Its
per-question value is ``None`` (``null`` in JSON, ``n/a`` in tables), and a
mean over no question at all is ``None`` too.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gearag.data.questions import gold_matches
from gearag.errors import DataError
from gearag.model import GoldRef, Question

DEFAULT_KS = (2, 5, 10, 15)

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower-case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, answers: Iterable[str]) -> float:
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(a) for a in answers))


def _f1(prediction: str, answer: str) -> float:
    pred = normalize_answer(prediction).split()
    gold = normalize_answer(answer).split()
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if not pred or not gold:
        return float(pred == gold)
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, answers: Iterable[str]) -> float:
    return max((_f1(prediction, a) for a in answers), default=0.0)


def recall_at_k(retrieved: Sequence[tuple[str, str | None]], gold: Sequence[GoldRef], k: int) -> float:
    """Fraction of ``gold`` found among the first ``k`` retrieved ``(title, text)`` pairs.

    A ``None`` text (a pool node's source known by id and title only) matches by title.
    """
    if not gold:
        raise ValueError("recall needs at least one gold passage")
    top = retrieved[:k]
    found = sum(
        1 for ref in gold if any(ref.title == t if x is None else gold_matches(ref, t, x) for t, x in top)
    )
    return found / len(gold)


#: Answers that answer recall leaves out: they occur in almost any text.
YES_NO = frozenset({"yes", "no"})


def answer_keys(question: Question) -> list[str]:
    """The normalised answers answer recall looks for; empty for yes/no and unanswered questions."""
    keys = [normalize_answer(a) for a in question.answers]
    if not keys or keys[0] in YES_NO:
        return []
    return [a for a in dict.fromkeys(keys) if a]


def contains_answer(text: str, answers: Sequence[str]) -> bool:
    """Whether one of the normalised ``answers`` occurs as whole words in ``text`` (normalised here)."""
    padded = f" {normalize_answer(text)} "
    return any(f" {a} " in padded for a in answers)


def covered_passages(
    entries: Sequence[dict[str, Any]], k: int, passages_by_id: dict[str, tuple[str, str]] | None = None
) -> list[tuple[str, str | None]]:
    """The ``(title, text)`` of the passages the first ``k`` entries stand for.

    A passage entry stands for itself; a pool node (an entry with
    ``sources``) for each of its source passages, with the text from
    ``passages_by_id`` when given (else matched by title only).
    """
    out: list[tuple[str, str | None]] = []
    for entry in entries[:k]:
        sources = entry.get("sources")
        if sources is None:
            out.append((entry.get("title", ""), entry.get("text", "")))
            continue
        for src in sources:
            known = passages_by_id.get(src.get("id", "")) if passages_by_id else None
            out.append(known if known is not None else (src.get("title", ""), None))
    return out


def _pct(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(100 * value, digits)


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


@dataclass
class EvalReport:
    """Mean metrics over the questions each can score, plus per-question values (None: not scored)."""

    ks: tuple[int, ...]
    n_questions: int
    #: Mean recall@k over the questions with gold passages; None when no question has any.
    recall: dict[int, float | None]
    #: Mean EM and F1 over the rows with an answer whose question has a gold answer (None: no such row).
    em: float | None = None
    f1: float | None = None
    per_question: list[dict[str, Any]] = field(default_factory=list)
    #: Questions left out of recall because they have no gold passages.
    skipped_no_gold: int = 0
    #: Whether the run gives answers (then EM/F1 are reported, ``n/a`` if none could be scored).
    answered: bool = False
    #: Rows scored for EM/F1, and rows with an answer left out because their question has no gold answer.
    n_em_questions: int = 0
    skipped_no_answer: int = 0
    #: Answer recall@k over :attr:`n_answer_questions` (None when no question has a usable answer).
    answer_recall: dict[int, float] | None = None
    n_answer_questions: int = 0
    #: Questions left out of answer recall because their answer is yes/no.
    skipped_yes_no: int = 0
    #: Whether some rows are pool nodes (passage recall is then via their sources).
    pool_rows: bool = False

    @property
    def n_recall_questions(self) -> int:
        return self.n_questions - self.skipped_no_gold

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n_questions": self.n_questions,
            "recall": {f"R@{k}": _pct(v) for k, v in self.recall.items()},
            "recall_questions": self.n_recall_questions,
            "skipped_no_gold": self.skipped_no_gold,
        }
        if self.answer_recall is not None:
            out["answer_recall"] = {f"AR@{k}": round(100 * v, 2) for k, v in self.answer_recall.items()}
            out["answer_recall_questions"] = self.n_answer_questions
            out["answer_recall_skipped_yes_no"] = self.skipped_yes_no
        if self.pool_rows:
            out["passage_recall"] = "via sources"
        if self.answered:
            out["EM"], out["F1"] = _pct(self.em), _pct(self.f1)
            out["em_questions"] = self.n_em_questions
            out["skipped_no_gold_answer"] = self.skipped_no_answer
        out["per_question"] = self.per_question
        return out

    def row(self) -> dict[str, str]:
        """Formatted percentages for a results table."""
        cells = {f"R@{k}": _cell(v) for k, v in self.recall.items()}
        for k, a in (self.answer_recall or {}).items():
            cells[f"AR@{k}"] = _cell(a)
        if self.answered:
            cells["EM"], cells["F1"] = _cell(self.em), _cell(self.f1)
        return cells


def evaluate_run(
    questions: Sequence[Question],
    rows: Sequence[dict[str, Any]],
    ks: Sequence[int] = DEFAULT_KS,
    passages_by_id: dict[str, tuple[str, str]] | None = None,
) -> EvalReport:
    """Score run rows (``{"id", "passages": [{"title", "text"}], "answer"?}``) against questions.

    Rows of a pool run (entries with ``sources``) are scored for passage
    recall via their sources; ``passages_by_id`` (passage id → (title,
    text), from the corpus) makes that exact where titles repeat.

    Every run row must name a known question; questions missing from the run
    are an error (a partial run would silently inflate or deflate means).
    Questions a metric cannot score are left out of its mean and counted,
    with ``None`` per question (see the module docstring).
    """
    by_id = {q.id: q for q in questions}
    seen = set()
    for row in rows:
        if row.get("id") not in by_id:
            raise DataError(f"run row for unknown question id {row.get('id')!r}")
        if row["id"] in seen:
            raise DataError(f"run has two rows for question id {row['id']!r}")
        seen.add(row["id"])
    missing = [q.id for q in questions if q.id not in seen]
    if missing:
        raise DataError(f"run has no row for {len(missing)} question(s), e.g. {missing[0]!r}")
    sums = {k: 0.0 for k in ks}
    n_recall = 0
    em_sum = f1_sum = 0.0
    n_answers = 0
    per_question = []
    skipped = 0
    answered = any(row.get("answer") is not None for row in rows)
    no_gold_answer = 0
    ar_sums = {k: 0.0 for k in ks}
    n_ar = yes_no = 0
    pool_rows = False
    for row in rows:
        q = by_id[row["id"]]
        entries = row.get("passages", [])
        pool_rows = pool_rows or any("sources" in e for e in entries)
        entry: dict[str, Any] = {"id": q.id}
        if q.gold:
            n_recall += 1
            for k in ks:
                covered = covered_passages(entries, k, passages_by_id)
                r = recall_at_k(covered, q.gold, len(covered))
                sums[k] += r
                entry[f"R@{k}"] = r
        else:
            skipped += 1
            entry.update({f"R@{k}": None for k in ks})
        keys = answer_keys(q)
        if keys:
            n_ar += 1
            hit_at = next((i for i, e in enumerate(entries)
                           if contains_answer(f"{e.get('title', '')}\n{e.get('text', '')}", keys)), None)
            for k in ks:
                found = hit_at is not None and hit_at < k
                ar_sums[k] += found
                entry[f"AR@{k}"] = float(found)
        elif q.answers:
            yes_no += 1
        if row.get("answer") is not None and q.answers:
            n_answers += 1
            em = exact_match(row["answer"], q.answers)
            f1 = f1_score(row["answer"], q.answers)
            em_sum += em
            f1_sum += f1
            entry.update(EM=em, F1=f1)
        elif answered:
            no_gold_answer += row.get("answer") is not None
            entry.update(EM=None, F1=None)
        per_question.append(entry)
    if n_ar:  # answer recall is reported: the questions it left out say so
        for entry in per_question:
            for k in ks:
                entry.setdefault(f"AR@{k}", None)
    recall: dict[int, float | None] = {k: (sums[k] / n_recall if n_recall else None) for k in ks}
    return EvalReport(
        ks=tuple(ks),
        n_questions=len(rows),
        recall=recall,
        em=em_sum / n_answers if n_answers else None,
        f1=f1_sum / n_answers if n_answers else None,
        per_question=per_question,
        skipped_no_gold=skipped,
        answered=answered,
        n_em_questions=n_answers,
        skipped_no_answer=no_gold_answer,
        answer_recall={k: ar_sums[k] / n_ar for k in ks} if n_ar else None,
        n_answer_questions=n_ar,
        skipped_yes_no=yes_no,
        pool_rows=pool_rows,
    )


def recall_by_iteration(
    questions: Sequence[Question],
    rows: Sequence[dict[str, Any]],
    passages_by_id: dict[str, tuple[str, str]],
    ks: Sequence[int] = (5, 10, 15),
) -> dict[str, Any]:
    """Recall@k after each agent iteration, cumulative, carried forward (GEAR Fig. 2).

    Uses each row's ``trace.steps[n].ranking`` (passage ids of the agent's
    output had it stopped after step ``n``). A question that stopped at step
    ``m`` keeps step ``m``'s recall for every later iteration. Also returns
    iterations per question and, when the trace has them, tokens per step.
    """
    by_id = {q.id: q for q in questions}
    per_q = []
    max_steps = 0
    for row in rows:
        q = by_id.get(row["id"])
        steps = (row.get("trace") or {}).get("steps") or []
        if q is None or not q.gold or not steps:
            continue
        series = []
        for step in steps:
            retrieved = [passages_by_id[pid] for pid in step.get("ranking", []) if pid in passages_by_id]
            series.append({k: recall_at_k(retrieved, q.gold, k) for k in ks})
        per_q.append((series, [(s.get("tokens_in", 0), s.get("tokens_out", 0)) for s in steps]))
        max_steps = max(max_steps, len(series))
    if not per_q:
        raise DataError("no rows with agent traces (run `gearag retrieve --method gear`)")
    curve = []
    for n in range(max_steps):
        curve.append({
            "iteration": n + 1,
            **{f"R@{k}": round(100 * sum(s[min(n, len(s) - 1)][k] for s, _ in per_q) / len(per_q), 2) for k in ks},
            "still_running": sum(1 for s, _ in per_q if len(s) > n),
        })
    iterations = [len(s) for s, _ in per_q]
    tokens = [sum(a + b for a, b in t) for _, t in per_q]
    by_role: dict[str, float] = {}
    for row in rows:
        for role, used in ((row.get("trace") or {}).get("tokens_by_role") or {}).items():
            by_role[role] = by_role.get(role, 0) + used.get("prompt", 0) + used.get("completion", 0)
    return {
        "mean_tokens_by_role": {r: round(v / len(per_q), 1) for r, v in sorted(by_role.items())},
        "curve": curve,
        "mean_iterations": round(sum(iterations) / len(iterations), 3),
        "iteration_histogram": {str(n): iterations.count(n) for n in sorted(set(iterations))},
        "mean_tokens_per_question": round(sum(tokens) / len(tokens), 1),
    }
