"""The offline engine's English word lists are a typed, replaceable config (gearag.words)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, assert_clean_error
from gearag.agent.offline import asked_noun
from gearag.errors import ConfigError
from gearag.question_analysis import analyse
from gearag.words import DEFAULT_WORDS, WordLists, word_lists_for


def test_defaults_are_the_built_in_lists() -> None:
    assert word_lists_for(None) is DEFAULT_WORDS and word_lists_for("") is DEFAULT_WORDS
    assert "county" in DEFAULT_WORDS.name_nouns
    assert DEFAULT_WORDS.related_map["spous"][0] == "marri"
    assert analyse("In which county is Akron?").answer_type == "place"
    assert analyse("When was Akron founded?").answer_type == "date"
    assert analyse("How many people live in Akron?").answer_type == "number"
    assert analyse("Is Akron in Ohio?").answer_type == "yesno"


def test_a_custom_list_changes_question_analysis() -> None:
    question = "Which prefecture contains Kyoto?"
    assert asked_noun(question) is None
    assert analyse(question).answer_type == "entity"
    words = WordLists.from_dict({"name_nouns": ["prefecture"], "place_words": ["prefecture"]})
    assert asked_noun(question, words) == "prefecture"
    assert analyse(question, words).answer_type == "place"
    assert words.person_words == DEFAULT_WORDS.person_words  # lists not given keep their defaults


def test_from_file_reads_json_and_names_the_file_in_errors(tmp_path: Path) -> None:
    good = tmp_path / "words.json"
    good.write_text(json.dumps({"related": {"coach": ["coach", "manag"]}, "latest_words": ["later"]}))
    words = WordLists.from_file(good)
    assert words.related_map == {"coach": ("coach", "manag")} and words.latest_words == ("later",)
    for body, message in ((json.dumps({"name_noun": ["x"]}), "unknown word list 'name_noun'"),
                          (json.dumps({"name_nouns": "county"}), "must be a list of non-empty strings"),
                          (json.dumps({"related": ["x"]}), "must map a stem"),
                          ("{not json", "not JSON")):
        bad = tmp_path / "bad.json"
        bad.write_text(body)
        with pytest.raises(ConfigError, match=message) as err:
            WordLists.from_file(bad)
        assert str(bad) in str(err.value)
    with pytest.raises(ConfigError, match="cannot read"):
        WordLists.from_file(tmp_path / "missing.json")


def test_word_lists_option_changes_the_agent(tmp_path: Path) -> None:
    """With "later" removed from the latest words, "died later" compares for the earlier death."""
    from gearag.indexing import build_index
    from gearag.methods import make_method
    from gearag.model import Passage

    films = [
        ("Moonlight Harbor", "Moonlight Harbor is a 1951 American drama film directed by Arthur Penwick."),
        ("Silent Orchard", "Silent Orchard is a 1960 British film directed by Clara Dunmore."),
        ("Arthur Penwick", "Arthur Penwick (12 March 1902 – 3 May 1970) was an American film director."),
        ("Clara Dunmore", "Clara Dunmore (4 June 1898 – 9 July 1981) was a British film director and writer."),
    ]
    index = build_index([Passage(f"p{i}", t, x) for i, (t, x) in enumerate(films)], tmp_path / "index")
    question = "Which film has the director who died later, Moonlight Harbor or Silent Orchard?"
    assert make_method(index, "gear", max_steps=2)(question, 4).answer == "Silent Orchard"  # Dunmore died 1981
    lists = tmp_path / "words.json"
    lists.write_text(json.dumps({"latest_words": ["most recent"]}))
    custom = make_method(index, "gear", max_steps=2, word_lists=str(lists))(question, 4)
    assert custom.answer == "Moonlight Harbor"  # Penwick died 1970: the earlier date wins without "later"


def test_the_readers_question_analysis_uses_the_custom_lists(tiny_index, tmp_path: Path, monkeypatch) -> None:
    """``--word-lists`` reaches every offline role, the triple readers included (not only the reasoner)."""
    from gearag.agent.config import AgentEngineConfig
    from gearag.agent.offline import offline_engine
    from gearag.expand import reader as reader_module

    lists = tmp_path / "words.json"
    lists.write_text(json.dumps({"latest_words": ["most recent"]}))
    engine = offline_engine(tiny_index, AgentEngineConfig(word_lists=str(lists)))
    seen: list[object] = []
    real = reader_module.analyse
    monkeypatch.setattr(reader_module, "analyse", lambda q, words: seen.append(words) or real(q, words))
    engine.reader.read("Where was the band formed?", [0, 1], [])
    assert seen and all(w.latest_words == ("most recent",) for w in seen)  # type: ignore[attr-defined]


def test_a_word_lists_file_that_is_not_utf8_json_is_one_line_naming_it(tmp_path: Path, cli, tiny_index) -> None:
    binary = tmp_path / "words.bin"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 10)
    with pytest.raises(ConfigError, match=r"words\.bin: word lists are not UTF-8 text \(byte 0 "):
        WordLists.from_file(binary)
    assert_clean_error(cli("ask", tiny_index.path, "Who played for Davidson?", "--method", "gear",
                           "--word-lists", binary), "words.bin", "not UTF-8")


@pytest.mark.parametrize("kind", ["directory", "fifo", "device", "too large"])
def test_word_lists_must_be_a_small_regular_file_checked_before_reading(tmp_path: Path, kind: str) -> None:
    """A FIFO would block the read (an open without O_NONBLOCK too), /dev/zero never ends: refused unread.

    Run in a child process: a regression hangs there, and the timeout fails the test instead of the run."""
    path = {"directory": tmp_path, "fifo": tmp_path / "words.fifo", "device": Path("/dev/zero"),
            "too large": tmp_path / "big.json"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    if kind == "too large":
        path.write_text(json.dumps({"name_nouns": ["county"] * 500_000}))  # ~5 MB
    script = ("import sys\nfrom gearag.words import WordLists\nfrom gearag.errors import ConfigError\n"
              "try:\n    WordLists.from_file(sys.argv[1])\nexcept ConfigError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr
    expected = {"directory": "this is a directory", "fifo": "not a regular file", "device": "not a regular file",
                "too large": "over 4 MB"}[kind]
    assert done.stdout.startswith(f"{path}: word lists") and expected in done.stdout, done.stdout
