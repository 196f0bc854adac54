"""Entity resolution at index time: mentions → the passages *about* them.

GEAR's triple graph joins two triples only when their endpoint strings are
identical after normalisation (§4.2); it never connects the mention
"Duke Blue Devils" in Seth Curry's passage to the passage *about* the team.
On Wikipedia-style corpora that link is what makes a question multi-hop:
HippoRAG's ablations (Gutiérrez et al., 2024, Table 5) lose most of their
2Wiki gain without the entity ↔ passage structure, and LinearRAG (ICLR 2026)
gets it from spaCy entities alone.

Names come from the passages' titles and openings (no model):

==========  =====================================================  ======
tier        how the name is derived                                weight
==========  =====================================================  ======
``title``   the normalised title ("Akron, Ohio" → ``akron ohio``)  1.0
``base``    the title without a disambiguating parenthetical or    0.5
            the part after a comma ("Stephen Curry (comedian)" →
            ``stephen curry``; "Akron, Ohio" → ``akron``)
``alias``   the opening's subject ("Wardell Stephen Curry II (born  0.5
            …) is …"), also with a quoted nickname removed, and
            nickname + surname ("Dell" Curry → ``dell curry``)
``head``    the title's leading proper-name run ("Duke Blue Devils  0.25
            men's basketball" → ``duke blue devils``)
==========  =====================================================  ======

**Ambiguity policy.** A name keeps every passage it may denote; each
candidate's weight is its best tier weight, and the weights of one name are
normalised to sum to 1. "stephen curry" therefore goes to the basketball
player's page (title, 1.0 → 0.67) and to "Stephen Curry (comedian)" (base,
0.5 → 0.33); two passages with the same title (MuSiQue has many) share a
name equally. Nothing is invented: a corpus without titles has no names and
every mention stays unresolved (the graph still has its triple and
passage–entity edges).

**Mentions.** Three sources, all mapped to the same name keys, plus an optional fourth:

* the named endpoints of the passage's triples (the extractor's entity spans);
* every name of the lexicon found in the passage text by the token trie
  (:mod:`gearag.graph.trie`), when written as a name (capitalised);
* an endpoint that is not itself a name but contains one covering at least
  half of its tokens resolves to it, its weight scaled by that share
  ("Duke Blue Devils men's basketball team" → the team's page);
* optionally, named-entity spans of the passage text (spaCy NER, LinearRAG's
  mention source; ``ResolveConfig.ner_mentions``), resolved exactly like a
  triple endpoint (a name the lexicon lacks becomes a new entity, one that
  contains a lexicon name resolves through it). They are kept apart from the
  other mentions (an edge kind of their own, :mod:`gearag.graph.edge_kinds`)
  so the graph can use them or not.

Output: the passage graph's sources (:mod:`gearag.graph.scaled`). This module holds the rules (the lexicon's
tiers, usable keys, the containment share); the resolution is derived as a delta
(:func:`gearag.derive.delta_resolve.resolve_delta`, docs/delta.md), and the tests' oracles (``resolve_corpus``,
``span_entities`` in ``tests/oracles.py``) are the same rules as one plain pass over the corpus.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from gearag.graph.trie import name_key, starts_name, tokens

#: Tier weights (see the module docstring). A title is the strongest evidence
#: that a passage is about a name; derived names are weaker, and the head of a
#: longer title is the weakest (it may name a broader thing: "Duke" teams).
TIER_WEIGHTS = {"title": 1.0, "base": 0.5, "alias": 0.5, "head": 0.25}

#: A name shorter than this (characters of its key) is too ambiguous to link.
MIN_KEY_CHARS = 3

#: Aliases longer than this many tokens are descriptions, not names.
MAX_ALIAS_TOKENS = 8

#: An endpoint resolves through a name it contains when the name covers at
#: least this share of the endpoint's tokens.
MIN_CONTAINED_SHARE = 0.5

_PAREN = re.compile(r"\s*\([^()]*\)\s*$")
_QUOTED = re.compile(r"[\"“”«»]([^\"“”«»]{2,40})[\"“”«»]")
_OPENING = re.compile(r"^(.{3,120}?)\s*(?:\(|,|\bis\b|\bwas\b|\bare\b|\bwere\b|\bhas been\b)")
_FUNCTION = frozenset({"of", "the", "and", "de", "la", "le", "von", "van", "der", "den", "du", "del", "da", "di",
                       "y", "for", "on", "in", "at"})


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """spaCy's English stop words, loaded on first use.

    Read from spaCy's word-list module alone (a plain file without imports):
    importing it through the ``spacy`` package loads spaCy, thinc and torch,
    seconds and ~270 MB of memory for a set of 300 words, in every build and
    query process. Falls back to the package import if the file is not there.
    """
    import importlib.util

    try:
        package = importlib.util.find_spec("spacy")
        if package is None or package.origin is None:
            raise ImportError("spacy not found")
        path = Path(package.origin).parent / "lang" / "en" / "stop_words.py"
        spec = importlib.util.spec_from_file_location("_gearag_spacy_en_stop_words", path)
        if spec is None or spec.loader is None:
            raise ImportError(path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        words = module.STOP_WORDS
    except (ImportError, OSError, AttributeError, SyntaxError):
        from spacy.lang.en.stop_words import STOP_WORDS

        words = STOP_WORDS
    return frozenset(words)


def usable_key(key: str) -> bool:
    """A name key that can link: long enough and not a single stop word."""
    return len(key) >= MIN_KEY_CHARS and key not in stop_words()


def leading_name(title: str) -> str | None:
    """The title's leading proper-name run, when it is shorter than the title.

    Capitalised tokens, with function words allowed between two of them:
    "Duke Blue Devils men's basketball" → "Duke Blue Devils";
    "Bank of America Stadium" has no shorter run.
    """
    toks = tokens(title)
    run = 0
    i = 0
    while i < len(toks):
        if starts_name(toks[i]):
            i += 1
            run = i
        elif toks[i].casefold() in _FUNCTION and i + 1 < len(toks) and starts_name(toks[i + 1]):
            i += 1
        else:
            break
    if 0 < run < len(toks):
        return " ".join(toks[:run])
    return None


def title_names(title: str) -> list[tuple[str, str]]:
    """``(key, tier)`` names a title yields (see the module docstring)."""
    out = [(name_key(title), "title")]
    base = _PAREN.sub("", title).strip()
    if base and base != title:
        out.append((name_key(base), "base"))
    if "," in base:
        out.append((name_key(base.split(",", 1)[0]), "base"))
    head = leading_name(base.split(",", 1)[0])
    if head:
        out.append((name_key(head), "head"))
    return out


def opening_names(title: str, text: str) -> list[str]:
    """Aliases from a passage's opening: its subject phrase and nickname forms.

    The subject phrase must share a word with the title and be written as a
    name; "He was …" or "The film is …" yield nothing.
    """
    m = _OPENING.match(text.lstrip())
    if not m:
        return []
    span = m.group(1).strip()
    title_words = {t.casefold() for t in tokens(title)}
    span_toks = tokens(span)
    if not span_toks or len(span_toks) > MAX_ALIAS_TOKENS or not starts_name(span_toks[0]):
        return []
    if not title_words & {t.casefold() for t in span_toks}:
        return []
    out = [span]
    quoted = _QUOTED.findall(span)
    if quoted:
        out.append(_QUOTED.sub(" ", span))
        surname = tokens(_PAREN.sub("", title))[-1:]
        out.extend(f"{q} {surname[0]}" for q in quoted if surname)
    return [name_key(s) for s in out]


def build_lexicon(titles: Iterable[str], texts: Iterable[str]) -> dict[str, dict[int, float]]:
    """Name key → {passage row: tier weight} over a corpus (best tier per pair), read in one pass."""
    lexicon: dict[str, dict[int, float]] = {}

    def add(key: str, row: int, tier: str) -> None:
        if not usable_key(key):
            return
        cands = lexicon.setdefault(key, {})
        cands[row] = max(cands.get(row, 0.0), TIER_WEIGHTS[tier])

    for row, (title, text) in enumerate(zip(titles, texts, strict=True)):
        if not title or not title.strip():
            continue
        for key, tier in title_names(title):
            add(key, row, tier)
        for key in opening_names(title, text):
            add(key, row, "alias")
    return lexicon
