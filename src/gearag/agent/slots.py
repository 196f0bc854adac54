"""A multi-hop question's parts, read without a model: its names, its open slot, and what a page is about.

A compositional question nests descriptions of its bridge entities around a
name it gives: "Where was *the band of the songwriter who created Maria*
formed?". The offline agent (:mod:`gearag.agent.offline`) follows a chain of
facts from the name; once the chain reaches a bridge (Maria → Counting
Crows), the next query is the question with the bridge in the *open slot* —
the description the bridge resolves — "Where was Counting Crows formed?"
(GEAR §5.2, Eq. 7: the rewrite asks for what is still missing).

Which description a bridge resolves is read two ways:

* the words the chain's facts express ("created", "songwriter" in
  ``(Maria; written by; Adam Duritz)``), and
* the *kind* of the bridge: the head noun of the first sentence of the page
  it resolves to ("Counting Crows is an American rock band formed in ..." →
  "band"). Questions describe bridges by their kind ("the band of", "the team
  that"), which facts seldom state.

The span from the first to the last word so resolved is replaced by the
bridge's name, with the article before it ("the Counting Crows" is never
written). English only; the words are :class:`gearag.words.WordLists`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from gearag.model import Fact
from gearag.retrieve.bm25 import tokenize
from gearag.text import is_named, normalise_entity
from gearag.words import DEFAULT_WORDS, WordLists

#: A quoted title in a question ("Dear Brother").
_QUOTED = re.compile(r"[\"“”]([^\"“”]+)[\"“”]")
#: Lower-case words that may join the capitalised words of one name ("Bank of America", "Géza von Cziffra").
_JOINERS = frozenset({"&", "of", "the", "de", "von", "van", "der", "du", "la", "le", "da", "di", "del"})
#: Words that open a question without naming anything ("Are King Vidor and ...", "In which ...").
_OPENERS = frozenset({"who", "whom", "whose", "what", "which", "where", "when", "why", "how", "in", "on", "at", "for",
                      "from", "of", "the", "a", "an", "both", "besides", "during", "after", "before", "since", "by",
                      "with", "to", "as", "name", "if", "between", "among"})
#: A possessive ending a name ("Stephen Curry's father").
_POSSESSIVE = re.compile(r"['’]s?$")
#: A parenthesis in a page's first sentence (dates, pronunciations): not part of its definition.
_PAREN = re.compile(r"\s*\([^()]*\)")
#: The verb that opens a definition ("X is a ...").
_COPULA = re.compile(r"\b(?:is|are|was|were)\s+(?:(?:a|an|the|one of the)\s+)?", re.IGNORECASE)


@lru_cache(maxsize=1 << 14)
def stems(text: str) -> frozenset[str]:
    """Stemmed content words (the BM25 tokeniser's; no stop words)."""
    return frozenset(tokenize([text])[0])


def _capitalised(word: str) -> bool:
    w = word.lstrip("\"“”'(")
    return bool(w) and (w[0].isupper() or w[0].isdigit())


@lru_cache(maxsize=4096)
def question_names(question: str) -> tuple[str, ...]:
    """The names a question gives: quoted titles, and runs of capitalised words (joined by "of", "von", ...).

    The question's first word starts the sentence, so it begins a name only when the next word is capitalised
    too and it is not a question word ("Barrier Device starred ...", not "Notable speakers ..." or "Are King ...").
    """
    openers = _OPENERS | set(DEFAULT_WORDS.aux_words)
    names = [m.group(1).strip() for m in _QUOTED.finditer(question)]
    words = _QUOTED.sub(" ", question).rstrip("?").split()
    follows = words[2] if len(words) > 2 and words[1].lower() in _JOINERS else words[1] if len(words) > 1 else ""
    run: list[str] = []
    for i, word in enumerate(words):
        starts_name = _capitalised(word) and (i > 0 or (_capitalised(follows) and word.lower() not in openers))
        if starts_name or (run and word.lower() in _JOINERS and i + 1 < len(words) and _capitalised(words[i + 1])):
            run.append(word)
            continue
        if run:
            names.append(" ".join(run))
        run = []
    if run:
        names.append(" ".join(run))
    return tuple(n for n in (_POSSESSIVE.sub("", n) for n in names) if n)


def name_stems(question: str) -> frozenset[str]:
    """Stems of the names a question gives (they anchor a chain; they are not relations to cover)."""
    return frozenset().union(*(stems(n) for n in question_names(question)))


_ASKED = re.compile(r"\b(?:[Ww]hat|[Ww]hich|[Hh]ow many)\s+((?:[A-Z][\w'-]*\s+)*)([a-z][a-z'-]*)")


def asked_kind(question: str, words: WordLists = DEFAULT_WORDS) -> frozenset[str]:
    """Stems of the noun a question asks its answer to be: "what position", "which Canadian actress" → actress.

    That noun is the answer's kind, not a relation on the way to it (names before it are skipped; "what is",
    "which of" ask no kind).
    """
    m = _ASKED.search(question)
    if m is None or m.group(2) in words.aux_words or m.group(2) in _OPENERS:
        return frozenset()
    return stems(m.group(2))


def asked_noun(question: str, words: WordLists = DEFAULT_WORDS) -> str | None:
    """The place noun a question asks for ("In which county ..." → "county"), if one of ``words.name_nouns``."""
    m = re.search(r"\b(?:which|what)\s+(\w+)", question.lower())
    if m and m.group(1) in words.name_nouns:
        return m.group(1)
    return None


def first_sentence(text: str) -> str:
    """A passage's first sentence, parentheses removed."""
    text = _PAREN.sub("", text)
    m = re.search(r"(?<=[a-z0-9)\"”])\.\s+(?=[A-Z])", text)
    return text[: m.start()] if m else text


def head_noun(text: str, words: WordLists = DEFAULT_WORDS) -> str | None:
    """The head noun of a page's definition: "X is an American rock band formed in ..." → "band".

    The words after the first "is a / are an / was the" up to the first word that ends the noun phrase (a
    preposition, a conjunction, a relative pronoun, a participle after a noun, punctuation); the last of them.
    ``None`` when the first sentence defines nothing that way.
    """
    sentence = first_sentence(text)
    m = _COPULA.search(sentence)
    if m is None:
        return None
    taken: list[str] = []
    for raw in sentence[m.end():].split():
        word = raw.lower()
        ends = raw[-1] in ",;:" or raw.endswith(".")
        bare = word.strip(",;:.\"'“”")
        if (bare in words.definition_ends or (taken and bare.endswith("ed"))
                or not bare.replace("'", "").replace("-", "").isalpha()):
            break
        taken.append(bare)
        if ends or len(taken) >= 6:
            break
    return taken[-1] if taken else None


def resolved_span(question: str, covered: Callable[[frozenset[str]], bool]) -> list[str]:
    """The question's words from the first to the last whose stems ``covered`` says are resolved (none: [])."""
    words = question.rstrip("?").split()
    marked = [bool(s) and covered(s) for s in (stems(w) for w in words)]
    if not any(marked):
        return []
    first = marked.index(True)
    last = len(marked) - 1 - marked[::-1].index(True)
    return words[first:last + 1]


def page_kind(title: str, text: str, words: WordLists = DEFAULT_WORDS) -> frozenset[str]:
    """Stems of what a page is about: its definition's head noun (:func:`head_noun`), its title's
    disambiguation ("Brother (Pearl Jam song)" → song) and a lower-case last title word ("Duke Blue Devils men's
    basketball" → basketball)."""
    out: set[str] = set()
    noun = head_noun(text, words)
    if noun:
        out |= stems(noun)
    m = re.search(r"\(([^()]*)\)\s*$", title)
    if m:
        out |= stems(m.group(1))
    last = title.split("(")[0].split()
    if last and last[-1][:1].islower():
        out |= stems(last[-1])
    return frozenset(out)


#: Words that open a relative clause: "the city *where* Stephen Curry was born" describes the city.
_RELATIVES = frozenset({"where", "who", "whom", "whose", "which", "that", "when"})


def substitute(question: str, covered: Callable[[frozenset[str]], bool], name: str,
               words_: WordLists = DEFAULT_WORDS) -> str:
    """Replace the question's span whose words ``covered`` says are resolved by ``name``.

    The span runs from the first to the last resolved word (:func:`resolved_span`); the noun the question asks
    for ("What county ...") is never part of it. A span that starts a relative clause takes the noun phrase the
    clause describes with it ("the city where Stephen Curry was born" → "Akron, Ohio"), and a span takes the
    article before it ("the band of ... Maria" → "Counting Crows", never "the Counting Crows"). With no resolved
    word the name is put before the question.
    """
    words = question.rstrip("?").split()
    asked = _asked_position(words, words_)
    marked = [i != asked and bool(s) and covered(s) for i, s in enumerate(stems(w) for w in words)]
    if not any(marked):
        return f"{name} {question}"
    first = marked.index(True)
    last = len(marked) - 1 - marked[::-1].index(True)
    if first > 1 and words[first - 1].lower() in _RELATIVES:
        # "the city where <span>": back over the clause's noun phrase to its article (at most three words).
        for j in range(first - 2, max(first - 5, asked, -1), -1):
            if words[j].lower() in ("the", "a", "an"):
                first = j
                break
    while first > 0 and words[first - 1].lower() in ("the", "a", "an"):
        first -= 1
    head, tail = words[:first], words[last + 1:]
    return " ".join([*head, name, *tail]).strip() + "?"


def _asked_position(words: list[str], lists: WordLists) -> int:
    """The index of the noun a question asks for ("What *county* ..."; see :func:`asked_kind`), else -1."""
    for i, w in enumerate(words[:-1]):
        if w.lower() in ("what", "which"):
            j = i + 1
            while j < len(words) and _capitalised(words[j]):
                j += 1
            if j < len(words) and words[j].lower() not in lists.aux_words and words[j].lower() not in _OPENERS:
                return j
            return -1
    return -1


def in_question(entity: str, qnorm: str) -> bool:
    """Whether a named entity occurs in the (normalised) question; common nouns never anchor."""
    if not is_named(entity):
        return False
    e = normalise_entity(entity)
    return len(e) >= 3 and f" {e} " in f" {qnorm} "


def same_entity(a: str, b: str) -> bool:
    """Normalised names of one entity: equal, or one a whole-word prefix of the other ("akron" / "akron ohio")."""
    if a == b:
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    if len(short) >= 4 and long.startswith(short + " "):
        return True
    # A name of two or more words ending a longer one: "blue devils" / "duke blue devils".
    return " " in short and long.endswith(" " + short)


def connected(question: str, memory: Sequence[Fact]) -> list[Fact]:
    """The facts of ``memory`` joined to a name the question gives, directly or through other such facts.

    A fact about an entity no chain from the question reaches ("List of songs recorded by Metallica; formed
    in; Los Angeles" for a question about Maria) is what a rewritten query happened to read, not a step
    toward the answer; seeding the output ranking with every memory fact pulled such pages up
    (``AgentConfig.memory_seeds``; docs/benchmarks-log.md, ``--memory-seeds all``).
    """
    qnorm = normalise_entity(question)
    ends = [[normalise_entity(e) for e in (t.subject, t.object) if is_named(e)] for t in memory]
    reached = {normalise_entity(e) for t in memory for e in (t.subject, t.object) if in_question(e, qnorm)}
    chosen: set[int] = set()
    grew = True
    while grew:
        grew = False
        for i, names in enumerate(ends):
            if i not in chosen and any(same_entity(e, r) for e in names for r in reached):
                chosen.add(i)
                reached.update(names)
                grew = True
    return [t for i, t in enumerate(memory) if i in chosen]
