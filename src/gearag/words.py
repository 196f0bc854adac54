"""The English word lists of the offline engine, as one typed, replaceable config.

The model-free agent (:mod:`gearag.agent.offline`) and the question analysis
(:mod:`gearag.question_analysis`) read questions with a few hand-written
English word lists: which words ask for a place or a person, which relation
words a predicate may express them with ("spouse" → "married"), which nouns
English names of places carry ("Summit County"), which words ask for the
later of two dates, and so on. They are English only and incomplete by
nature, so they are data, not code: :class:`WordLists` holds every one with
the built-in defaults, and :meth:`WordLists.from_file` reads a JSON file that
replaces any of them (``--word-lists FILE`` on the CLI)::

    {"name_nouns": ["county", "river", "prefecture"],
     "related": {"spous": ["marri", "wife", "husband", "spous", "wed"]}}

Keys are the field names below; a key left out keeps its default. Lists of
*stems* are compared with the BM25 tokeniser's Snowball stems
(:func:`gearag.tokenizer.tokenize`: "married" → ``marri``), lists of
*words* with lower-cased question text.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from gearag.errors import ConfigError

#: Relation stems → predicate stems that express them without sharing a stem.
RELATED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("death", ("die", "death", "dead", "kill")),
    ("die", ("die", "death", "dead")),
    ("birth", ("born", "birth")),
    ("born", ("born", "birth")),
    ("spous", ("marri", "wife", "husband", "spous", "wed")),
    ("wife", ("marri", "wife", "spous")),
    ("husband", ("marri", "husband", "spous")),
    ("director", ("direct", "director")),
    ("perform", ("perform", "sung", "sing", "record")),
    ("compos", ("compos", "written", "music")),
    ("author", ("written", "wrote", "author")),
    ("father", ("father", "son", "daughter", "child")),
    ("mother", ("mother", "son", "daughter", "child")),
    ("found", ("found", "establish", "creat")),
    ("bury", ("buri", "grave", "interr")),
    ("buri", ("buri", "grave", "interr")),
    ("nation", ("citizen", "nation", "american", "british", "french", "german")),
    ("releas", ("releas", "premier", "publish")),
    ("locat", ("locat", "in", "situat", "base")),
    ("headquart", ("headquart", "base")),
    ("educ", ("educ", "studi", "graduat", "attend", "school", "univers")),
)


def _strings(path: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{path}: word list {key!r} must be a list of non-empty strings")
    return tuple(v.strip().lower() for v in value)


@dataclass(frozen=True)
class WordLists:
    """Every English word list of the offline engine (defaults: the built-in lists)."""

    #: Nouns English names of places carry ("Summit County", "Ohio River"): a question asking
    #: "which county" is answered only by a terminal containing "county".
    name_nouns: tuple[str, ...] = ("county", "river", "university", "college", "school", "district", "province",
                                   "island", "lake", "church", "parish", "borough", "township", "mountain", "airport")
    #: Relation stems → stems of predicates that express them ("spous" → "marri", ...).
    related: tuple[tuple[str, tuple[str, ...]], ...] = RELATED
    #: Stems that name the answer's type rather than a relation (the type check covers them).
    type_stems: tuple[str, ...] = ("year", "date", "time", "day", "month", "citi", "countri", "counti", "place",
                                   "state", "town", "locat", "nation", "mani", "much", "old", "name", "person")
    #: Words of a comparison question that ask for the later / younger / last of two values.
    latest_words: tuple[str, ...] = ("later", "last", "younger", "most recent", "more recent")
    #: Words that make an "A or B" question a comparison of the two options.
    comparison_words: tuple[str, ...] = ("first", "earlier", "later", "older", "younger", "more", "longer",
                                         "born first", "died first", "last")
    #: Words that end the noun phrase of a page's definition ("X is an American rock band *formed* in ..."):
    #: the head noun is the word before (:func:`gearag.agent.slots.head_noun`; participles end it too).
    definition_ends: tuple[str, ...] = ("of", "in", "from", "for", "on", "at", "by", "with", "to", "and", "or", "but",
                                        "that", "which", "who", "whose", "where", "when", "as", "since", "during",
                                        "between", "about", "known", "born", "made", "written", "being",
                                        "consisting", "starring", "featuring", "having", "located", "set")
    #: Word prefixes of a birth and of a death event (the dated fact a comparison follows).
    birth_words: tuple[str, ...] = ("born", "birth")
    death_words: tuple[str, ...] = ("die", "death", "dead")
    #: Stems of the event and ordering words of a comparison (not relations to follow).
    event_stems: tuple[str, ...] = ("born", "birth", "die", "death", "dead", "older", "younger", "earlier", "later",
                                    "first", "last")
    #: Stems of the class nouns of a comparison's options ("Which film ...").
    class_stems: tuple[str, ...] = ("film", "song", "album", "book", "person", "peopl")
    #: Question words: they ask, they are no relation a chain must express (the BM25 tokeniser keeps some).
    question_words: tuple[str, ...] = ("what", "which", "where", "when", "who", "whom", "whose", "how", "why")
    #: Auxiliary verbs that open a yes/no question.
    aux_words: tuple[str, ...] = ("is", "are", "was", "were", "do", "does", "did", "can", "could", "has", "have",
                                  "had", "will")
    #: Words of a question asking for a place.
    place_words: tuple[str, ...] = ("where", "place", "city", "country", "state", "county", "town", "location",
                                    "nationality", "born in", "located", "headquarter", "province", "region",
                                    "continent", "river")
    #: Words of a question asking for a person (``"son "``: a trailing space keeps "son" from matching "sonic").
    person_words: tuple[str, ...] = ("who ", "whom", "whose", "father", "mother", "spouse", "wife", "husband",
                                     "son ", "daughter", "director", "composer", "performer", "author", "founder",
                                     "grandfather", "grandmother", "brother", "sister", "child", "producer",
                                     "writer", "singer", "actor", "actress", "ceo", "leader")
    #: Phrases of a question asking for a date (whole words).
    date_words: tuple[str, ...] = ("when", "what year", "which year", "what date", "date of", "year")
    #: Phrases of a question asking for a number (whole words).
    number_words: tuple[str, ...] = ("how many", "how much", "how old", "how long", "how tall", "population")

    @cached_property
    def related_map(self) -> dict[str, tuple[str, ...]]:
        return dict(self.related)

    @cached_property
    def question_stems(self) -> frozenset[str]:
        """Stems of :attr:`question_words` (as the BM25 tokeniser writes them)."""
        from gearag.tokenizer import tokenize

        return frozenset(t for ts in tokenize(list(self.question_words)) for t in ts)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "word lists") -> WordLists:
        """Defaults with the lists in ``data`` replaced (``source`` names the origin in errors)."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: word lists must be a JSON object of lists")
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise ConfigError(f"{source}: unknown word list {key!r} (known: {', '.join(sorted(known))})")
            if key == "related":
                if not isinstance(value, dict):
                    raise ConfigError(f"{source}: word list 'related' must map a stem to a list of stems")
                values[key] = tuple((str(k).lower(), _strings(source, f"related.{k}", v)) for k, v in value.items())
            else:
                values[key] = _strings(source, key, value)
        return cls(**values)

    @classmethod
    def from_file(cls, path: str | Path) -> WordLists:
        """Defaults with the lists of the JSON file ``path`` replaced (a regular file of at most
        :data:`MAX_WORD_LISTS_BYTES`, UTF-8 JSON; anything else is a one-line ConfigError naming it)."""
        p = Path(path)
        try:
            data = json.loads(_read_small_file(p).decode("utf-8"))
        except OSError as exc:
            raise ConfigError(f"{p}: cannot read word lists ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{p}: word lists are not UTF-8 text (byte {exc.start:,} is not UTF-8)") from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{p}: not JSON (line {exc.lineno}: {exc.msg})") from None
        return cls.from_dict(data, str(p))


#: The largest word-lists file read: the built-in lists are about 3 KB as JSON.
MAX_WORD_LISTS_BYTES = 4 << 20


def _read_small_file(path: Path) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most :data:`MAX_WORD_LISTS_BYTES`.

    Checked on the open file, before reading: a FIFO would block the read (and, opened without
    ``O_NONBLOCK``, the open) until a writer came, ``/dev/zero`` never ends, and a directory cannot be read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a device, FIFO or socket)"
            raise ConfigError(f"{path}: word lists must be a JSON file; this is {kind}")
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        data = fh.read(MAX_WORD_LISTS_BYTES + 1)
    if len(data) > MAX_WORD_LISTS_BYTES:
        raise ConfigError(f"{path}: word lists file is over {MAX_WORD_LISTS_BYTES >> 20} MB; refusing to read it")
    return data


#: The built-in lists.
DEFAULT_WORDS = WordLists()


def word_lists_for(path: str | None) -> WordLists:
    """The lists a config names (``None`` or empty: the built-in ones)."""
    return WordLists.from_file(path) if path else DEFAULT_WORDS
