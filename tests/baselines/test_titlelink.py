"""The title-mention baseline: BM25 plus the pages whose titles the top passages mention."""

from __future__ import annotations

from gearag.baselines.titlelink import TitleMentions


def test_title_mentions_are_verbatim_and_skip_self() -> None:
    titles = ["Akron, Ohio", "Stephen Curry", "Home"]
    texts = ["Akron is in Ohio.", "Stephen Curry was born in Akron, Ohio and went home.", "Home is a film."]
    tm = TitleMentions(titles, texts)
    assert tm.links(1) == [0]  # "home" is not "Home"
    assert tm.links(0) == [] and tm.links(2) == []


def test_titlelink_method_on_a_tiny_index(tiny_index) -> None:
    from gearag.methods import make_method
    from gearag.retrieve import make_retriever

    run = make_method(tiny_index, "titlelink")
    q = tiny_index.passages[0].title
    result = run(q, 5)
    base = [h.idx for h in make_retriever(tiny_index, "bm25", "passages").retrieve(q, 10)]
    linked = list(dict.fromkeys(t for r in base[:5] for t in TitleMentions(
        [p.title for p in tiny_index.passages], [p.text for p in tiny_index.passages]).links(r)))
    from gearag.retrieve.fusion import rrf

    assert [h.idx for h in result.passages] == [i for i, _ in rrf([base, linked])][:5]
