"""Precomputed OpenIE triples in HippoRAG's JSON format (spec ``openie:FILE``).

HippoRAG publishes its LLM OpenIE output as::

    {"docs": [{"title": ..., "text": ..., "passage": "<title>\\n<text>",
               "extracted_entities": [...],
               "extracted_triples": [[s, p, o], ...]}, ...],
     "ents_by_doc": [...], ...}

Older files may lack ``title``/``text`` and carry only ``passage``. Docs are
matched to passages by content, never by position: first ``(title, text)``,
then ``passage`` against the passage's ``title + "\\n" + text`` or its bare
text, each also with whitespace collapsed. A passage without a matching doc is
an error unless the extractor is built with ``missing="empty"``.

Triples that are not exactly three non-empty strings (HippoRAG files contain
some two- and four-element ones) are dropped and counted in ``skipped``;
exact duplicates within a doc are dropped silently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gearag.data.jsonstream import ArrayNotFoundError, JSONStreamError, iter_array
from gearag.errors import ConfigError, DataError
from gearag.model import Fact, Passage

#: Version of the import logic; part of the key together with the file's hash.
KEY_VERSION = "openie-v1"
MISSING_MODES = ("error", "empty")


def _squash(text: str) -> str:
    return " ".join(text.split())


def _clean_triple(raw: Any, pool: dict[str, str]) -> Fact | None:
    """A well-formed triple as a Fact of whitespace-squashed strings, each string stored once (``pool``):
    names and predicates repeat across a file, and one string object per distinct value saves memory."""
    if not isinstance(raw, (list, tuple)) or len(raw) != 3:
        return None
    if not all(isinstance(x, str) and x.strip() for x in raw):
        return None
    s, p, o = (pool.setdefault(v, v) for v in (_squash(x) for x in raw))
    return Fact(s, p, o)


def _key(*parts: str) -> bytes:
    """A 128-bit digest of texts, the lookup key of a doc (its texts are not kept: 1M docs would hold
    their whole corpus, several times, only to be matched)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.digest()


class OpenIEExtractor:
    """Serves triples from a HippoRAG OpenIE results file.

    ``skipped`` is the number of malformed triples in the whole file (counted
    when it is loaded); ``path`` is the file and ``key`` names the file's
    content, so a different file gets a different extraction checkpoint.
    """

    def __init__(self, path: str | Path, *, missing: str = "error") -> None:
        if missing not in MISSING_MODES:
            raise ConfigError(f"openie extractor: missing must be one of {', '.join(MISSING_MODES)}, got {missing!r}")
        self.path = Path(path).expanduser()
        self.missing = missing
        self.skipped = 0
        self.n_docs = 0
        self._triples: list[list[Fact]] = []
        self._by_title_text: dict[bytes, int] = {}  # _key(title, text) -> doc row
        self._by_passage: dict[bytes, int] = {}  # _key(passage) -> doc row
        self._released = False  # release() dropped the file's triples: read again on next use
        digest = hashlib.blake2b(digest_size=12)
        self._load(self._docs(digest))
        self.key = f"{KEY_VERSION}-{digest.hexdigest()}"  # the whole file's bytes, hashed as they were read

    # -- loading -------------------------------------------------------------

    def _docs(self, digest: Any) -> Iterator[Any]:
        """The file's docs one at a time (:func:`~gearag.data.jsonstream.iter_array`: never the whole file parsed)."""
        try:
            with self.path.open("rb") as fh:
                yield from iter_array(fh, "docs", digest=digest)
        except FileNotFoundError:
            raise DataError(f"{self.path}: OpenIE file not found") from None
        except IsADirectoryError:
            raise DataError(f"{self.path}: OpenIE file is a directory") from None
        except OSError as exc:
            raise DataError(f"{self.path}: cannot read OpenIE file ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise DataError(f"{self.path}: OpenIE file is not UTF-8 text ({exc.reason})") from None
        except JSONStreamError as exc:
            raise DataError(f"{self.path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
        except ArrayNotFoundError:
            raise DataError(
                f"{self.path}: expected HippoRAG OpenIE results, a JSON object with a 'docs' list") from None

    def _load(self, docs: Iterator[Any]) -> None:
        """Keep each doc's cleaned triples and its lookup keys; each parsed doc is dropped once read."""
        pool: dict[str, str] = {}
        for n, doc in enumerate(docs):
            if not isinstance(doc, dict):
                raise DataError(f"{self.path}: docs[{n}] is not a JSON object")
            triples = doc.get("extracted_triples", [])
            if triples is None:
                triples = []
            if not isinstance(triples, list):
                raise DataError(f"{self.path}: docs[{n}].extracted_triples is not a list")
            kept: list[Fact] = []
            seen: set[Fact] = set()
            for raw_triple in triples:
                triple = _clean_triple(raw_triple, pool)
                if triple is None:
                    self.skipped += 1
                elif triple not in seen:
                    seen.add(triple)
                    kept.append(triple)
            idx = len(self._triples)
            self._triples.append(kept)
            self._index(doc, idx, n)
        self.n_docs = len(self._triples)

    def _index(self, doc: dict[str, Any], idx: int, n: int) -> None:
        title, text, passage = doc.get("title"), doc.get("text"), doc.get("passage")
        has_any = False
        if isinstance(title, str) and isinstance(text, str):
            has_any = True
            for pair in ((title, text), (_squash(title), _squash(text))):
                self._by_title_text.setdefault(_key(*pair), idx)
        if isinstance(passage, str):
            has_any = True
            for key in (passage, _squash(passage)):
                self._by_passage.setdefault(_key(key), idx)
        elif isinstance(text, str):
            has_any = True
            for key in (text, _squash(text)):
                self._by_passage.setdefault(_key(key), idx)
        if not has_any:
            raise DataError(f"{self.path}: docs[{n}] has no 'passage' or 'text' to match it to a passage")

    # -- matching ------------------------------------------------------------

    def release(self) -> None:
        """Drop the file's triples and lookup keys (a build calls this once extraction is checkpointed);
        they are read from the file again if this extractor is used again."""
        self._triples, self._by_title_text, self._by_passage = [], {}, {}
        self._released = True

    def _reload(self) -> None:
        if self._released:
            self._released = False
            self.skipped = 0
            digest = hashlib.blake2b(digest_size=12)
            self._load(self._docs(digest))
            if f"{KEY_VERSION}-{digest.hexdigest()}" != self.key:  # its triples would not be those keyed
                self.release()
                raise DataError(f"{self.path}: OpenIE file changed while gearag was using it; run the command again")

    def find(self, passage: Passage) -> int | None:
        """Row of the doc holding this passage's triples, or None."""
        self._reload()
        title, text = passage.title, passage.text
        for pair in ((title, text), (_squash(title), _squash(text))):
            idx = self._by_title_text.get(_key(*pair))
            if idx is not None:
                return idx
        for candidate in (passage.content, text):
            for key in (candidate, _squash(candidate)):
                idx = self._by_passage.get(_key(key))
                if idx is not None:
                    return idx
        return None

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[Fact]]:
        for passage in passages:
            idx = self.find(passage)
            if idx is None:
                if self.missing == "empty":
                    yield []
                    continue
                label = repr(passage.title) if passage.title else f"{passage.text[:60]!r}..."
                raise DataError(
                    f"{self.path}: no OpenIE result for passage {label} (id {passage.id}); "
                    "the file must come from the same corpus (pass missing='empty' to allow gaps)"
                )
            yield list(self._triples[idx])


def make_openie_extractor(arg: str, options: dict[str, object]) -> OpenIEExtractor:
    if not arg:
        raise ConfigError("the openie extractor needs a file: --extractor openie:PATH/TO/openie_results.json")
    missing = options.get("missing") or "error"
    if not isinstance(missing, str):
        raise ConfigError(f"openie extractor: missing must be a string, got {missing!r}")
    return OpenIEExtractor(arg, missing=missing)

