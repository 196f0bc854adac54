"""A synthetic corpus that grows a real one to N passages and keeps its multi-hop structure.

Copy 0 is the source corpus as it is; copy ``k >= 1`` renames its *name
tokens* through one bijection per copy, applied alike to titles, texts,
questions, answers, gold titles and extracted triples. A passage's mention
of another passage's title therefore still names that passage inside the
copy, and since every renamed word is new (unique to its copy and absent
from the source vocabulary) and every title holds at least one renamed
word, no title or passage of one copy equals one of another. Questions are
*planted*: each source question renamed into copy ``k``, its gold passages
the renamed gold passages of copy ``k``. The last copy may be partial (the
first ``r`` source passages); it plants only the questions whose gold
passages it holds.

Name tokens are derived from the data, with no rule keyed to a dataset's
wording: a word (a maximal ``\\w+`` run) that starts with a capital and
whose lower-case form never occurs lower-case anywhere in the source
(titles, texts, questions, answers, triples) — proper names, not
sentence-initial common words. A title without one ("The Night of
Nights") adds its rarest word to the set, so every title is renamed.

New words are pronounceable strings of consonant–vowel syllables (three,
then four, ... as codes run out) numbered by (copy, token): copy ``k``
takes codes ``(k-1)·V ..  k·V-1`` (``V`` name tokens) in an order shuffled
by ``(seed, k)``; a word that happens to be a source word gets an ``x``
appended (regular words never contain ``x``). The syllable table is
shuffled by the seed, so the output is a pure function of the inputs and
the seed, and any copy can be made without making the others.

Output (:func:`synthesise`), streamed copy by copy — only the source
corpus, its per-passage templates and one copy's names are in memory:

* ``corpus.jsonl`` — ``{id, title, text}`` (id ``c<k>:<source id>``);
* ``questions.json`` — ``{id, question, answer, answer_aliases, gold:
  [title | [title, text]], copy, source_id}`` (id ``c<k>:<source id>``);
* ``triples.json`` (with source triples) — the ``openie:FILE`` format,
  ``{"docs": [{title, text, extracted_triples}]}``, one doc per passage;
* ``synth.json`` — what was made, from what, with which seed; written last.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gearag.data.corpus import load_corpus
from gearag.data.questions import GoldMatcher, load_questions
from gearag.errors import DataError, OutputError
from gearag.model import Passage, Question
from gearag.outputs import RECORD, OutputFolder

FORMAT = "gearag-synth"
FORMAT_VERSION = 1
MANIFEST = "synth.json"
CORPUS, QUESTIONS, TRIPLES = "corpus.jsonl", "questions.json", "triples.json"
OUTPUTS = (CORPUS, QUESTIONS, TRIPLES, MANIFEST)

_WORD = re.compile(r"\w+")
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_MIN_SYLLABLES = 3

#: A string as literal parts around name-token slots: ``parts[0] + name[slots[0]] + parts[1] + ...``.
Template = tuple[tuple[str, ...], tuple[int, ...]]


def _tokens(texts: Sequence[str]) -> Iterator[str]:
    for text in texts:
        yield from _WORD.findall(text)


def name_tokens(texts: Sequence[str], titles: Sequence[str]) -> list[str]:
    """The words to rename (see the module docstring), sorted; a title with no word at all is a DataError."""
    counts: Counter[str] = Counter()
    lower: set[str] = set()
    for word in _tokens([*titles, *texts]):
        counts[word] += 1
        if word.islower():
            lower.add(word)
    names = {w for w in counts if w[0].isupper() and len(w) > 1 and w.lower() not in lower}
    for row, title in enumerate(titles):
        words = _WORD.findall(title)
        if not title.strip() or any(w in names for w in words):
            continue
        if not words:
            raise DataError(f"source passage {row} (title {title!r}): the title has no word to rename, "
                            "so its copies would collide")
        capitalised = [w for w in words if w[0].isupper()] or words
        names.add(min(capitalised, key=lambda w: (counts[w], w)))
    return sorted(names)


def template(text: str, slot: dict[str, int]) -> Template:
    parts, slots, start = [], [], 0
    for m in _WORD.finditer(text):
        idx = slot.get(m.group())
        if idx is not None:
            parts.append(text[start:m.start()])
            slots.append(idx)
            start = m.end()
    parts.append(text[start:])
    return tuple(parts), tuple(slots)


def render(tpl: Template, names: Sequence[str]) -> str:
    parts, slots = tpl
    if not slots:
        return parts[0]
    out = [parts[0]]
    for idx, part in zip(slots, parts[1:], strict=True):
        out.append(names[idx])
        out.append(part)
    return "".join(out)


class Namer:
    """Copy ``k``'s names for the ``V`` name tokens: a bijection onto words no other copy and no source text uses."""

    def __init__(self, tokens: Sequence[str], vocabulary: set[str], seed: int) -> None:
        self.tokens = list(tokens)
        self.vocabulary = vocabulary  # lower-cased source words
        syllables = [c + v for c in _CONSONANTS for v in _VOWELS]
        random.Random(f"gearag-synth/{seed}/syllables").shuffle(syllables)
        self.syllables = syllables
        self.seed = seed

    def word(self, code: int) -> str:
        """The ``code``-th generated word: 3 syllables for the first S³ codes, then 4, ..."""
        s, length = len(self.syllables), _MIN_SYLLABLES
        while code >= s**length:
            code -= s**length
            length += 1
        parts = []
        for _ in range(length):
            code, digit = divmod(code, s)
            parts.append(self.syllables[digit])
        word = "".join(reversed(parts)).capitalize()
        while word.lower() in self.vocabulary:
            word += "x"
        return word

    def names(self, copy: int) -> list[str]:
        if copy == 0:
            return self.tokens
        n = len(self.tokens)
        order = list(range(n))
        random.Random(f"gearag-synth/{self.seed}/copy/{copy}").shuffle(order)
        base = (copy - 1) * n
        return [self.word(base + order[j]) for j in range(n)]


@dataclass
class _SourceQuestion:
    question: Question
    rows: list[frozenset[int]]
    text: Template
    answer: Template | None
    aliases: list[Template]
    gold_titles: list[Template]
    gold_texts: list[Template | None]


def read_source_triples(source: Path, passages: Sequence[Passage]) -> list[list[tuple[str, str, str]]]:
    """Triples per source passage from a built index directory or an ``openie:FILE`` results file."""
    source = Path(source)
    if source.is_dir():
        import numpy as np

        files = [source / name for name in ("passages.jsonl", "triples.jsonl", "arrays/passage_triple_indptr.npy")]
        for f in files:
            if not f.is_file():
                raise DataError(f"{source}: not a gearag index ({f.name} missing)")
        indptr = np.load(files[2])
        with files[1].open(encoding="utf-8") as fh:
            triples: list[tuple[str, str, str]] = [tuple(json.loads(line)) for line in fh if line.strip()]
        by_content: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
        with files[0].open(encoding="utf-8") as fh:
            for row, line in enumerate(fh):
                rec = json.loads(line)
                lo, hi = int(indptr[row]), int(indptr[row + 1])
                by_content.setdefault((rec["title"], rec["text"]), triples[lo:hi])
        out = []
        for p in passages:
            found = by_content.get((p.title, p.text))
            if found is None:
                raise DataError(f"{source}: the index has no passage {p.title!r} (id {p.id}); "
                                "build it from the same source corpus")
            out.append(found)
        return out
    from gearag.extract.openie import OpenIEExtractor

    return [[f.as_tuple() if hasattr(f, "as_tuple") else tuple(f) for f in facts]  # type: ignore[misc]
            for facts in OpenIEExtractor(source).extract(passages)]


def _check_out_dir(out: Path, overwrite: bool, inputs: Sequence[str | Path | None]) -> OutputFolder:
    """The output folder, before any work: holding only what synth writes, each file of those written by gearag
    there (:class:`~gearag.outputs.OutputFolder`: not the user's own ``corpus.jsonl``), none of them an input."""
    folder = OutputFolder.claim(out, OUTPUTS, inputs=inputs)
    if not out.exists():
        return folder
    present = [p.name for p in out.iterdir()]
    ours = [n for n in present if n in (*OUTPUTS, RECORD) or any(n.startswith(f".{o}.") for o in OUTPUTS)]
    if len(ours) < len(present):
        foreign = sorted(set(present) - set(ours))[0]
        raise OutputError(f"--out {out}: holds {foreign!r}, which gearag synth did not write; choose a new directory")
    if MANIFEST in present and not overwrite:
        raise OutputError(f"--out {out}: a synthetic corpus exists there (pass --overwrite to replace it)")
    return folder


@dataclass(frozen=True)
class SynthResult:
    out: Path
    manifest: dict[str, Any]


def synthesise(
    corpus: str | Path,
    questions: str | Path,
    out: str | Path,
    passages: int,
    *,
    seed: int = 0,
    triples: str | Path | None = None,
    first_copy: int = 0,
    overwrite: bool = False,
    log: Callable[[str], None] | None = None,
) -> SynthResult:
    """Write ``passages`` passages (copies ``first_copy``, ``first_copy + 1``, ...) and planted questions to ``out``.

    ``triples`` (an index directory built from ``corpus``, or an OpenIE results
    file) adds ``triples.json``. ``first_copy`` > 0 makes a corpus disjoint
    from one started at copy 0 (e.g. passages to add to its index).
    """
    out = Path(out)
    if passages < 1:
        raise DataError(f"--passages must be at least 1, got {passages}")
    if first_copy < 0:
        raise DataError(f"--first-copy must be at least 0, got {first_copy}")
    folder = _check_out_dir(out, overwrite, (corpus, questions, triples))
    src = load_corpus(corpus, max_passage_chars=None)
    if triples is not None and not Path(triples).exists():
        raise DataError(f"--triples {triples}: no such index directory or OpenIE file")
    qs = load_questions(questions)
    matcher = GoldMatcher(src)
    planted_src: list[tuple[Question, list[frozenset[int]]]] = []
    no_gold = 0
    for q in qs:
        if not q.gold:
            no_gold += 1
            continue
        planted_src.append((q, matcher.resolve(q)))
    reach = min(passages, len(src))  # a corpus smaller than the source holds its first passages only
    if not any(all(any(i < reach for i in rows) for rows in gold) for _, gold in planted_src):
        raise DataError(f"{questions}: no question has all its gold passages within the first {reach:,} passages"
                        " of the source corpus; raise --passages")
    src_triples = read_source_triples(Path(triples), src) if triples is not None else None

    texts: list[str] = [p.text for p in src]
    for q, _ in planted_src:
        texts += [q.question, *q.answers, *(r.title for r in q.gold), *(r.text or "" for r in q.gold)]
    for facts in src_triples or []:
        texts += [x for fact in facts for x in fact]
    tokens = name_tokens(texts, [p.title for p in src])
    vocabulary = {w.lower() for w in _tokens([*texts, *(p.title for p in src)])}
    slot = {w: i for i, w in enumerate(tokens)}
    namer = Namer(tokens, vocabulary, seed)
    if log:
        log(f"{len(src):,} source passages, {len(planted_src):,} questions with gold, "
            f"{len(tokens):,} name tokens")

    p_tpl = [(template(p.title, slot), template(p.text, slot)) for p in src]
    t_tpl = [[tuple(template(x, slot) for x in fact) for fact in facts] for facts in src_triples or []]
    q_src = [
        _SourceQuestion(
            q, rows, template(q.question, slot),
            None if q.answer is None else template(q.answer, slot),
            [template(a, slot) for a in q.answer_aliases],
            [template(r.title, slot) for r in q.gold],
            [None if r.text is None else template(r.text, slot) for r in q.gold],
        )
        for q, rows in planted_src
    ]

    n_src = len(src)
    copies = -(-passages // n_src)
    written_q = written_t = 0
    out.mkdir(parents=True, exist_ok=True)
    for stale in (MANIFEST, TRIPLES):  # a crash below must not leave the old manifest vouching for new files
        (out / stale).unlink(missing_ok=True)
    with folder.open(CORPUS) as fc, folder.open(QUESTIONS) as fq, \
            (folder.open(TRIPLES) if src_triples is not None else contextlib.nullcontext()) as ft:
        fq.write("[")
        if ft is not None:
            ft.write('{"docs": [')
        for c in range(copies):
            copy = first_copy + c
            names = namer.names(copy)
            r = min(n_src, passages - c * n_src)
            for row in range(r):
                (title_t, text_t), pid = p_tpl[row], src[row].id
                title, text = render(title_t, names), render(text_t, names)
                fc.write(json.dumps({"id": f"c{copy}:{pid}", "title": title, "text": text}, ensure_ascii=False))
                fc.write("\n")
                if ft is not None:
                    doc = {"title": title, "text": text,
                           "extracted_triples": [[render(x, names) for x in fact] for fact in t_tpl[row]]}
                    ft.write(("," if row or c else "") + "\n" + json.dumps(doc, ensure_ascii=False))
                    written_t += len(t_tpl[row])
            for sq in q_src:
                if r < n_src and not all(any(i < r for i in rows) for rows in sq.rows):
                    continue
                gold: list[Any] = [
                    render(t, names) if x is None else [render(t, names), render(x, names)]
                    for t, x in zip(sq.gold_titles, sq.gold_texts, strict=True)
                ]
                rec = {"id": f"c{copy}:{sq.question.id}", "question": render(sq.text, names),
                       "answer": None if sq.answer is None else render(sq.answer, names),
                       "answer_aliases": [render(a, names) for a in sq.aliases],
                       "gold": gold, "copy": copy, "source_id": sq.question.id}
                fq.write(("," if written_q else "") + "\n" + json.dumps(rec, ensure_ascii=False))
                written_q += 1
            if log:
                log(f"copy {copy}: {r:,} passages")
        fq.write("\n]\n")
        if ft is not None:
            ft.write("\n]}\n")
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "seed": seed,
        "source": {"corpus": str(Path(corpus).resolve()), "questions": str(Path(questions).resolve()),
                   "triples": None if triples is None else str(Path(triples).resolve()),
                   "passages": n_src, "questions_with_gold": len(planted_src), "questions_without_gold": no_gold},
        "name_tokens": len(tokens),
        "copies": {"first": first_copy, "count": copies, "last_partial": passages % n_src != 0},
        "counts": {"passages": passages, "questions": written_q,
                   **({"triples": written_t} if src_triples is not None else {})},
        "files": {"corpus": CORPUS, "questions": QUESTIONS,
                  **({"triples": TRIPLES} if src_triples is not None else {})},
    }
    folder.write_text(MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return SynthResult(out, manifest)
