"""Chat completions use the conversation: a follow-up is retrieved with the earlier user questions."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from gearag.server.conversation import is_follow_up, retrieval_question


def test_a_follow_up_refers_back_or_names_nothing() -> None:
    for text in ("Where was he born?", "What is its population?", "And who coached them?", "Tell me more.",
                 "Which team drafted him?", "What about there?"):
        assert is_follow_up(text), text
    for text in ("Who directed Inception?", "Where was Dell Curry born?", "What happened in 1982?",
                 'Who wrote "the castle"?', "Thanks. Where is Akron?"):
        assert not is_follow_up(text), text


def test_the_retrieval_question_goes_back_to_the_question_the_thread_started_from() -> None:
    assert retrieval_question(["Who directed Inception?"], 2000) == "Who directed Inception?"
    assert retrieval_question(["Who directed Inception?", "Where was he born?"], 2000) == (
        "Who directed Inception? Where was he born?")
    # A self-contained question starts over; a chain of follow-ups goes back to its start, no further.
    assert retrieval_question(["Who directed Inception?", "Where is Akron?"], 2000) == "Where is Akron?"
    turns = ["Who is Dell Curry?", "Who directed Inception?", "Where was he born?", "And when?"]
    assert retrieval_question(turns, 2000) == "Who directed Inception? Where was he born? And when?"
    # Within the server's bound: whole earlier questions, the most recent first, while they fit.
    assert retrieval_question(turns, len("Where was he born? And when?")) == "Where was he born? And when?"
    assert retrieval_question(turns, 10) == "And when?"
    assert retrieval_question(["", "  "], 100) == ""


def test_chat_completions_resolve_a_follow_up_against_the_earlier_user_turns(
        make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    messages = [{"role": "system", "content": "be brief"},
                {"role": "user", "content": "Who is the father of Stephen Curry?"},
                {"role": "assistant", "content": "Sonya Curry (a wrong answer the retrieval must not read)"},
                {"role": "user", "content": [{"type": "text", "text": "Which team drafted him?"}]}]
    body = client.post("/v1/chat/completions", json={"model": "gearag-bm25", "messages": messages}).json()
    assert body["gearag"]["question"] == "Who is the father of Stephen Curry? Which team drafted him?"
    titles = [c["title"] for c in body["gearag"]["citations"]]
    assert "Dell Curry" in titles[:3]
    # The last message alone: a self-contained question is retrieved as it is.
    alone = client.post("/v1/chat/completions", json={"model": "gearag-bm25", "messages": [
        *messages[:3], {"role": "user", "content": "Where is the Utah Jazz based?"}]}).json()
    assert alone["gearag"]["question"] == "Where is the Utah Jazz based?"
    # The bound is the server's: the earlier question is left out when it does not fit, the message itself is not.
    short = make_client(max_question_chars=40)
    body = short.post("/v1/chat/completions", json={"model": "gearag-bm25", "messages": messages}).json()
    assert body["gearag"]["question"] == "Which team drafted him?"
