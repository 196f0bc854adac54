"""A compact keeps the graphs and composes the merged shard's state from the old shards' (gearag.derive.rekey)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from test_incremental import STUB, _passages

from conftest import StubExtractor, use_stub_extractor
from gearag.derive.endpoints import ENDPOINTS_DIR, EndpointTable
from gearag.derive.token_index import RESOLVE_DIR, TokenIndex
from gearag.derive.union_vocab import UNION_DIR, UnionVocab
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents, compact, delete_documents
from gearag.store.index import Index, read_manifest


def test_the_merged_shards_state_is_what_its_rows_would_make(tmp_path: Path) -> None:
    """The endpoint table, the token indices of texts and names and the two vocabularies a compact composes from
    the old shards' (their deleted rows and triples left out, names in several shards once) equal those made from
    the merged shard's own passages and triples."""
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(40, 0)
    root = tmp_path / "idx"
    build_index(passages[:20], root, STUB)
    add_documents(root, passages[20:30])
    add_documents(root, passages[30:])
    delete_documents(root, [passages[i].id for i in (1, 5, 22, 33)])
    compacted = compact(root)
    (ref,) = compacted.manifest["shards"]
    shard = Index.load(root / "shards" / ref["name"])
    gen = root / "generations" / compacted.manifest["generation"]["name"]
    assert read_manifest(gen)["shards"] == [ref["name"]]
    table = EndpointTable.read(gen / ENDPOINTS_DIR / ref["name"], len(shard.triples))
    want = EndpointTable.compute(list(shard.triples.subjects), list(shard.triples.objects))
    assert table is not None and (table.keys, table.names) == (want.keys, want.names)
    for got, expected in ((table.ends, want.ends), (table.named, want.named), (table.name_ends, want.name_ends)):
        np.testing.assert_array_equal(got, expected)
    for rel, index in ((f"{RESOLVE_DIR}/{ref['name']}", TokenIndex.compute([p.text for p in shard.passages])),
                       (f"{UNION_DIR}/name_tokens/{ref['name']}",
                        TokenIndex.compute(want.names, lambda k: k.split(" ")))):
        got_index = TokenIndex.read(gen / rel, len(index.rows) and int(index.rows.max()) + 1)
        assert got_index is not None, rel
        for name in ("hashes", "indptr", "rows"):
            np.testing.assert_array_equal(getattr(got_index, name), getattr(index, name), err_msg=f"{rel} {name}")
    for what, strings in (("keys", want.keys), ("names", want.names)):
        vocab = UnionVocab.read(gen, what, [ref["name"]], [len(strings)])
        made = UnionVocab.extend(None, [strings])
        assert vocab is not None and list(vocab.items) == list(made.items), what
        np.testing.assert_array_equal(vocab.hashes, made.hashes)
        np.testing.assert_array_equal(vocab.hash_ids, made.hash_ids)


def test_composed_ids_follow_first_appearance_over_the_live_triples() -> None:
    from gearag.derive.rekey import _merged_ids

    # shard 0 kept only its second triple, whose subject is union id 2; shard 1 then names 1 and 0
    ends, union_of, new = _merged_ids([np.array([[2, -1]]), np.array([[1, 0], [2, 3]])], 5)
    assert union_of.tolist() == [2, 1, 0, 3] and new.tolist() == [2, 1, 0, 3, -1]
    assert ends.reshape(-1, 2).tolist() == [[0, -1], [1, 2], [0, 3]]


def test_merged_token_indices_are_the_index_of_the_merged_rows() -> None:
    a, b = ["Alpha beta", "beta Gamma", "delta"], ["gamma delta", "alpha"]
    merged = TokenIndex.merged([(TokenIndex.compute(a), np.array([0, -1, 1])),
                                (TokenIndex.compute(b), np.array([2, 3])),
                                (TokenIndex.compute(b), np.array([2, 3]))])  # the same rows twice: once
    want = TokenIndex.compute([a[0], a[2], *b])
    for name in ("hashes", "indptr", "rows"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(want, name), err_msg=name)


def test_the_merged_shards_token_ids_are_its_live_rows_tokens(tmp_path: Path) -> None:
    """The merged shard's BM25 token ids (one vocabulary over the shards', their deleted rows left out) read as
    the same words, document by document, as a build of its passages and triples stores."""
    from gearag.store.collection import PASSAGES, TRIPLES
    from gearag.store.shards import read_tokens

    use_stub_extractor(StubExtractor())
    passages, _ = _passages(30, 0)
    root = tmp_path / "idx"
    build_index(passages[:12], root, STUB)
    add_documents(root, passages[12:])
    delete_documents(root, [passages[i].id for i in (0, 7, 13, 29)])
    (ref,) = compact(root).manifest["shards"]
    merged = root / "shards" / ref["name"]
    shard = Index.load(merged)
    rebuilt = build_index(list(shard.passages), tmp_path / "rebuilt", STUB)
    for coll in (PASSAGES, TRIPLES):
        n = len(shard.passages) if coll == PASSAGES else len(shard.triples)
        got, want = read_tokens(merged, coll, n), read_tokens(rebuilt.path, coll, n)
        assert len(got.indptr) == len(want.indptr) == n + 1
        for doc in range(n):
            assert [got.vocab[i] for i in got.doc(doc)] == [want.vocab[i] for i in want.doc(doc)], (coll, doc)
