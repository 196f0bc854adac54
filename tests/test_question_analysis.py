"""Question analysis and the offline engine's reasoner and rewriter on hand-made gist memories."""

from __future__ import annotations

import pytest

from gearag.agent.offline import OfflineReasoner, OfflineRewriter
from gearag.model import Fact as T
from gearag.question_analysis import analyse
from gearag.text import date_key

SONG = "I Can't See Myself Leaving You"
PERFORMED = T(SONG, "performed by", "Aretha Franklin")
DIED = T("Aretha Franklin", "died in", "Detroit")
BORN = T("Aretha Franklin", "born on", "March 25, 1942")
UNRELATED = T("Pearl Lust", "directed by", "A. R. Harwood")


# --------------------------------------------------------------------------- answer types


@pytest.mark.parametrize(
    ("question", "answer_type"),
    [
        ("When did John Farrow die?", "date"),
        ("What year was Pearl Lust released?", "date"),
        ("Where did Aretha Franklin die?", "place"),
        ("What is the place of birth of the director of film West Of Shanghai?", "place"),
        ("Who is the spouse of John Farrow?", "person"),
        ("Who directed West of Shanghai?", "person"),
        ("How many children did Aretha Franklin have?", "number"),
        ("Are both Pearl Lust and On Body And Soul from the same country?", "yesno"),
        ("Is Detroit in Michigan?", "yesno"),
    ],
)
def test_answer_types(question: str, answer_type: str) -> None:
    info = analyse(question)
    assert info.answer_type == answer_type
    assert info.options == ()


def test_comparison_question_has_two_options() -> None:
    info = analyse("Which film came out first, Pearl Lust or On Body And Soul?")
    assert info.options == ("Pearl Lust", "On Body And Soul")
    # "Which ... first" asks for one of the options, not a date.
    assert info.answer_type != "date"


def test_question_terms_are_stemmed_content_words() -> None:
    info = analyse("Who is the spouse of John Farrow?")
    assert "spous" in info.terms and "farrow" in info.terms
    assert "the" not in info.terms and "of" not in info.terms


def test_date_key_parses_and_orders_dates() -> None:
    assert date_key("16 August 2018") == (2018, 8, 16)
    assert date_key("March 25, 1942") == (1942, 3, 25)
    assert date_key("10 February 1904") == (1904, 2, 10)
    assert date_key("1936") == (1936, 0, 0)
    assert date_key("no date here") is None
    values = ["16 August 2018", "1936", "March 25, 1942", "March 1936", "10 February 1904", "2 March 1936"]
    ordered = sorted(values, key=date_key)
    assert ordered == ["10 February 1904", "1936", "March 1936", "2 March 1936", "March 25, 1942", "16 August 2018"]


# --------------------------------------------------------------------------- reasoner


def test_two_hop_chain_to_a_place_is_answerable() -> None:
    question = f"Where did the performer of {SONG} die?"
    reasoning = OfflineReasoner().reason(question, [UNRELATED, PERFORMED, DIED])
    assert reasoning.answerable
    assert reasoning.answer == "Detroit"
    # The evidence is the chain, from the question's entity to the answer.
    assert len(reasoning.evidence) == 2
    assert SONG in reasoning.evidence[0] and "Detroit" in reasoning.evidence[1]


def test_chain_order_in_memory_does_not_matter() -> None:
    question = f"Where did the performer of {SONG} die?"
    reasoning = OfflineReasoner().reason(question, [DIED, PERFORMED])
    assert reasoning.answerable and reasoning.answer == "Detroit"


def test_two_hop_chain_to_a_date_answers_a_when_question() -> None:
    question = f"When was the performer of {SONG} born?"
    reasoning = OfflineReasoner().reason(question, [PERFORMED, DIED, BORN])
    assert reasoning.answerable
    assert reasoning.answer == "March 25, 1942"


def test_one_hop_chain_ending_in_a_person_does_not_answer_where() -> None:
    question = f"Where did the performer of {SONG} die?"
    reasoning = OfflineReasoner().reason(question, [PERFORMED])
    assert not reasoning.answerable
    assert reasoning.answer is None
    assert "Aretha Franklin" in reasoning.text  # it says how far it got


def test_chain_ending_in_a_place_does_not_answer_when() -> None:
    question = f"When did the performer of {SONG} die?"
    reasoning = OfflineReasoner().reason(question, [PERFORMED, DIED])
    assert not reasoning.answerable
    assert reasoning.answer is None


def test_memory_without_question_entities_is_not_answerable() -> None:
    reasoning = OfflineReasoner().reason(f"Where did the performer of {SONG} die?", [UNRELATED, DIED])
    assert not reasoning.answerable
    assert reasoning.answer is None


def test_date_comparison_picks_the_earlier_option() -> None:
    memory = [T("On Body and Soul", "is", "2017 Hungarian drama film"), T("Pearl Lust", "is", "1936 Australian film")]
    reasoning = OfflineReasoner().reason("Which film came out first, On Body And Soul or Pearl Lust?", memory)
    assert reasoning.answerable
    assert reasoning.answer == "Pearl Lust"


def test_date_comparison_picks_the_later_option_when_asked() -> None:
    memory = [T("On Body and Soul", "is", "2017 Hungarian drama film"), T("Pearl Lust", "is", "1936 Australian film")]
    reasoning = OfflineReasoner().reason("Which film came out later, On Body And Soul or Pearl Lust?", memory)
    assert reasoning.answerable
    assert reasoning.answer == "On Body And Soul"


def test_date_comparison_uses_full_dates() -> None:
    memory = [T("Alpha Film", "released on", "12 May 1950"), T("Beta Film", "released on", "3 February 1950")]
    reasoning = OfflineReasoner().reason("Which film came out first, Alpha Film or Beta Film?", memory)
    assert reasoning.answerable and reasoning.answer == "Beta Film"


def test_date_comparison_with_one_date_is_not_answerable() -> None:
    memory = [T("Pearl Lust", "is", "1936 Australian film")]
    reasoning = OfflineReasoner().reason("Which film came out first, On Body And Soul or Pearl Lust?", memory)
    assert not reasoning.answerable
    assert reasoning.answer is None


# --------------------------------------------------------------------------- rewriter


def test_rewriter_substitutes_the_bridge_entity() -> None:
    question = f"Where did the performer of {SONG} die?"
    reasoner = OfflineReasoner()
    memory = [PERFORMED]
    rewritten = OfflineRewriter(reasoner).rewrite(question, memory, reasoner.reason(question, memory))
    assert "Aretha Franklin" in rewritten
    assert SONG not in rewritten and "performer" not in rewritten
    assert "die" in rewritten  # the unresolved part of the question stays


def test_rewriter_keeps_the_question_without_a_bridge() -> None:
    question = f"Where did the performer of {SONG} die?"
    reasoner = OfflineReasoner()
    rewritten = OfflineRewriter(reasoner).rewrite(question, [UNRELATED], reasoner.reason(question, [UNRELATED]))
    assert rewritten == question


def test_rewriter_asks_about_the_option_missing_a_fact() -> None:
    question = "Which film came out first, On Body And Soul or Pearl Lust?"
    reasoner = OfflineReasoner()
    memory = [T("Pearl Lust", "is", "1936 Australian film")]
    rewritten = OfflineRewriter(reasoner).rewrite(question, memory, reasoner.reason(question, memory))
    assert "On Body And Soul" in rewritten
    assert "Pearl Lust" not in rewritten
