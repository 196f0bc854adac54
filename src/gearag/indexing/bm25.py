"""Stage 3 — BM25 over every collection (bm25s, Lucene variant), and the BM25 token ids a shard keeps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from gearag.data.jsonio import load_json
from gearag.errors import IndexFormatError
from gearag.indexing.stage import Build
from gearag.retrieve.bm25 import bm25_from_sorted_tokens, build_bm25, save_bm25, token_ids
from gearag.retrieve.bm25_postings import POSTINGS_FILES, postings_from_tokens
from gearag.store.npy import load_npy
from gearag.store.shards import SHARDED_COLLECTIONS, tokens_rel
from gearag.store.writer import IndexWriter

#: The token-list files of ``tokens/<collection>/`` (the postings are derived from them).
TOKEN_FILES = ("vocab.json", "ids.npy", "indptr.npy")


def write_tokens(writer: IndexWriter, collection: str, texts: Sequence[str]) -> None:
    """Store ``texts``' BM25 token ids and postings as ``tokens/<collection>/`` of the index being written."""
    write_token_ids(writer, collection, *token_ids(texts))


def write_token_ids(writer: IndexWriter, collection: str, vocab: list[str], ids: np.ndarray,
                    indptr: np.ndarray) -> None:
    """Store token ids (document ``i``: ``ids[indptr[i]:indptr[i+1]]`` into ``vocab``) and their postings.

    The postings (term → documents, term frequencies) are what BM25 scores
    from at query time (:class:`~gearag.retrieve.bm25_postings.PostingsBM25`).
    """
    write_token_lists(writer, collection, vocab, ids, indptr)
    write_postings(writer, collection, ids, indptr, len(vocab))


def write_token_lists(writer: IndexWriter, collection: str, vocab: list[str], ids: np.ndarray,
                      indptr: np.ndarray) -> None:
    """The token ids alone (:data:`TOKEN_FILES`)."""
    rel = tokens_rel(collection)
    writer.write_json(f"{rel}/vocab.json", list(vocab))
    writer.write_array(f"{rel}/ids.npy", np.asarray(ids, dtype=np.int32))
    writer.write_array(f"{rel}/indptr.npy", np.asarray(indptr, dtype=np.int64))


def write_postings(writer: IndexWriter, collection: str, ids: np.ndarray, indptr: np.ndarray, n_vocab: int) -> None:
    """The postings of the token ids (:data:`~gearag.retrieve.bm25_postings.POSTINGS_FILES`)."""
    rel = tokens_rel(collection)
    for name, array in zip(POSTINGS_FILES, postings_from_tokens(ids, indptr, n_vocab), strict=True):
        writer.write_array(f"{rel}/{name}", array)


class BM25Stage:
    """A bm25s model per collection. The passages' and triples' token ids are kept too
    (``tokens/<collection>/``, 4 bytes per token, postings not included): they are what a shard
    keeps, so the first ``gearag add`` converts the index without tokenising the corpus again
    (at a million passages that was 12 of its 27 minutes)."""

    name = "bm25"

    def run(self, build: Build) -> None:
        cfg = build.config.bm25
        for name, coll in build.collections.items():
            rel = f"bm25/{name}"
            if name in SHARDED_COLLECTIONS and len(coll.texts):
                terms, ids, indptr = token_ids(coll.texts)
                write_token_lists(build.writer, name, terms, ids, indptr)
                model = bm25_from_sorted_tokens(terms, ids, indptr, cfg.k1, cfg.b)
                del ids, indptr
            else:  # bm25s needs at least one document; an empty collection gets a placeholder.
                model = build_bm25(coll.texts if len(coll.texts) else [""], cfg.k1, cfg.b)
            save_bm25(model, build.writer.path(rel))
            coll.spec = replace(coll.spec, bm25=rel)


def shard_tokens(w: IndexWriter, root: Path, listed: dict[str, Any], collection: str, texts: Sequence[str]) -> None:
    """A converted shard's token ids and postings for ``collection``: from those its plain build kept, else made
    from ``texts`` (built before indices kept their token ids)."""
    stored = kept_token_ids(root, listed, collection, len(texts))
    if stored is None:
        write_tokens(w, collection, texts)
    else:
        write_postings(w, collection, *stored)


def kept_token_ids(root: Path, listed: dict[str, Any], collection: str,
                   n_docs: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The token ids (ids, indptr, vocabulary size) a plain build kept for ``collection``; None if it kept none."""
    rel = tokens_rel(collection)
    if not all(f"{rel}/{name}" in listed for name in TOKEN_FILES):
        return None
    vocab = load_json(root / rel / "vocab.json")
    ids, indptr = load_npy(root / rel / "ids.npy"), load_npy(root / rel / "indptr.npy", mmap=False)
    if len(indptr) != n_docs + 1 or int(indptr[-1]) != len(ids):
        raise IndexFormatError(f"{root / rel}: token ids do not fit the {collection} collection")
    return ids, indptr, len(vocab)
