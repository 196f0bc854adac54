'''Every prompt gearag sends, as named templates the user can override.

The prompts follow the structure and output formats of GEAR's Appendix K
(triple extraction; reader with and without gist memory; answerability
reasoning; query rewriting; concise answer generation) and SiReRAG's
Appendix G (summary, coreference rewrite, entities, propositions), and of
the peer baselines (IRCoT's one-sentence reasoning step, HippoRAG's query
NER and HippoRAG 2's fact filter), written
afresh for this project with our own demonstrations.

Templates use ``{name}`` placeholders. Only the names a prompt declares are
substituted, so literal braces (JSON in demonstrations) need no escaping.

Override any prompt from a dict, or a JSON or TOML file::

    prompts = PromptSet.load("my_prompts.toml")   # or PromptSet({"reason": "..."})

    # my_prompts.toml
    [reason]
    system = "You are a meticulous fact checker."
    user = """Question: {question}
    Facts: {facts}
    Reply with 'Answerable: Yes' and 'Answer: ...', or 'Answerable: No' and 'Why: ...'."""

A plain string replaces the user message; a table may set ``system`` and
``user``. An override must keep every placeholder the prompt requires (the
table in :data:`REQUIRED`), otherwise :class:`~gearag.errors.ConfigError`.
The environment variable ``GEARAG_PROMPTS`` names an override file used by
:meth:`PromptSet.from_env`.
'''

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gearag.errors import ConfigError

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt: an optional system message and a user message template."""

    name: str
    user: str
    system: str | None = None

    @property
    def placeholders(self) -> set[str]:
        text = self.user + (self.system or "")
        return set(_PLACEHOLDER.findall(text))

    def render(self, **values: Any) -> list[dict[str, str]]:
        """Chat messages with ``{name}`` placeholders filled; unknown braces are left alone."""
        expected = AVAILABLE.get(self.name, REQUIRED.get(self.name, set()))
        missing = (expected & self.placeholders) - set(values)
        if missing:
            raise ConfigError(f"prompt {self.name!r} needs value(s) for {', '.join(sorted(missing))}")
        messages = []
        if self.system:
            messages.append({"role": "system", "content": _fill(self.system, values)})
        messages.append({"role": "user", "content": _fill(self.user, values)})
        return messages

    def fingerprint(self) -> str:
        """Short hash of the template text: part of checkpoint keys, so edits start fresh."""
        blob = json.dumps([self.name, self.system, self.user], ensure_ascii=False)
        return hashlib.blake2b(blob.encode(), digest_size=6).hexdigest()


def _fill(template: str, values: Mapping[str, Any]) -> str:
    def sub(match: re.Match[str]) -> str:
        key = match.group(1)
        return str(values[key]) if key in values else match.group(0)

    return _PLACEHOLDER.sub(sub, template)


# Prompt texts keep one paragraph per line: the text is exactly what the model
# reads (and its hash keys the checkpoints), so wrapping it would change
# results. Each template is marked `noqa: E501 - prompt text` instead.

# ---------------------------------------------------------------------------
# GEAR, offline: joint named entities + triples (Appendix K.1 structure)
# ---------------------------------------------------------------------------

EXTRACT_TRIPLES = """# Task
Turn the passage into a small knowledge graph. First list the named entities that appear in it; then write every fact the passage states as a (subject, predicate, object) triple connecting those entities.

Requirements:
- Each triple must contain at least one entity from your list, and preferably two.
- Replace pronouns and vague references ("she", "the company", "the city") with the specific name they stand for.
- Keep predicates short relation phrases; dates, numbers and quantities may be objects.
- Reply with one JSON object with two keys: "named_entities", a list of strings, and "triples", a list of [subject, predicate, object] lists. Write nothing else.

# Example 1
Passage:
```
Rosalind Franklin
Rosalind Franklin was a British chemist whose X-ray diffraction images of DNA, taken at King's College London in 1952, were central to understanding the double helix. She later led pioneering work on the tobacco mosaic virus at Birkbeck College.
```
{"named_entities": ["Rosalind Franklin", "British", "X-ray diffraction", "DNA", "King's College London", "1952", "double helix", "tobacco mosaic virus", "Birkbeck College"],
 "triples": [
  ["Rosalind Franklin", "nationality", "British"],
  ["Rosalind Franklin", "occupation", "chemist"],
  ["Rosalind Franklin", "took X-ray diffraction images of", "DNA"],
  ["Rosalind Franklin", "worked at", "King's College London"],
  ["Rosalind Franklin's DNA images", "taken in", "1952"],
  ["Rosalind Franklin's DNA images", "helped understand", "double helix"],
  ["Rosalind Franklin", "researched", "tobacco mosaic virus"],
  ["Rosalind Franklin", "worked at", "Birkbeck College"]
 ]}

# Example 2
Passage:
```
Lake Baikal
Lake Baikal is a rift lake in southern Siberia, Russia. It is the deepest lake in the world, reaching 1,642 metres, and holds roughly a fifth of the world's fresh surface water. The Selenga River is its largest tributary.
```
{"named_entities": ["Lake Baikal", "Siberia", "Russia", "1,642 metres", "Selenga River"],
 "triples": [
  ["Lake Baikal", "instance of", "rift lake"],
  ["Lake Baikal", "located in", "Siberia"],
  ["Lake Baikal", "country", "Russia"],
  ["Lake Baikal", "distinction", "deepest lake in the world"],
  ["Lake Baikal", "maximum depth", "1,642 metres"],
  ["Lake Baikal", "share of world fresh surface water", "about one fifth"],
  ["Selenga River", "largest tributary of", "Lake Baikal"]
 ]}

# Your passage
Return the JSON object with "named_entities" and "triples" for this passage.
Passage:
```
{title}
{passage}
```
"""  # noqa: E501 - prompt text

# ---------------------------------------------------------------------------
# GEAR, online: reader (§4.1, §5.1), reasoner (§5.2), rewriter (§5.3)
# ---------------------------------------------------------------------------

_READ_HEAD = """Your job is to pick out facts that help answer a question and write them as knowledge triples of the form ("subject", "predicate", "object").

Example:
Question: In which year was the university where Alan Turing earned his PhD founded?
Facts: ("Alan Turing", "doctorate from", "Princeton University"), ("Princeton University", "founded in", "1746")

Here are the documents you can use:
{documents}
"""  # noqa: E501 - prompt text

READ = _READ_HEAD + """
From these documents, write the facts that help answer the question below. If the documents do not hold everything needed, write only the relevant facts you can find; never invent facts.

Question: {question}
Facts:"""  # noqa: E501 - prompt text

READ_WITH_MEMORY = _READ_HEAD + """
Some facts are already known; they start the Facts line below. From the documents, add further facts that help answer the question, building on the known ones. If the documents do not hold everything needed, write only the relevant facts you can find; never invent facts. Reply with the new facts only, in the same format.

Question: {question}
Facts: {memory}"""  # noqa: E501 - prompt text

REASON = """# Task
Decide whether the known facts below are enough to answer the question.

Question: {question}
Facts: {facts}

Reply in exactly one of these two formats.
1. If the facts contain the answer:
Answerable: Yes
Answer: <the answer>
2. If they do not, say what is missing:
Answerable: No
Why: <what is missing>

# Your reply:"""

REWRITE = """# Task
You are given a question, the facts known so far and the reason they are not yet enough to answer it. Work out which piece of information is still missing and write the next question to search for: a simpler question asking for exactly that piece.

# Example
Question: What is the official language of the country where the inventor of the Rubik's Cube was born?
Facts: ("Erno Rubik", "invented", "Rubik's Cube"), ("Erno Rubik", "born in", "Budapest")
Reason: The facts say Erno Rubik invented the cube and was born in Budapest, but not which country Budapest is in or what language is official there.
Next Question: What is the official language of the country whose capital is Budapest?

# Your task
Question: {question}
Facts: {facts}
Reason: {reason}
Next Question:"""  # noqa: E501 - prompt text

# ---------------------------------------------------------------------------
# GEAR, QA (Appendix K.3): concise answers, one in-context example
# ---------------------------------------------------------------------------

ANSWER = """You are a careful reading-comprehension assistant: study the passages and the question, then give the correct answer.

=== Example ===
Title: Vinland Saga (manga)
Vinland Saga is a Japanese historical manga series written and illustrated by Makoto Yukimura. It follows a young Icelandic warrior in the early eleventh century.

Title: Makoto Yukimura
Makoto Yukimura (born May 8, 1976) is a Japanese manga artist from Yokohama. Before Vinland Saga he created Planetes.

Title: Planetes
Planetes is a Japanese hard science fiction manga series by Makoto Yukimura, serialised from 1999 to 2004.

Question: When was the author of Vinland Saga born?
Answer: May 8, 1976

=== Your task ===
Given the passages and the question below, give a short, definite answer with no explanation, at most 6 words.

{passages}

Question: {question}
Answer:"""  # noqa: E501 - prompt text

ANSWER_CLOSED_BOOK = """Given the question below, give a short, definite answer with no explanation, at most 6 words.

Question: {question}
Answer:"""

# ---------------------------------------------------------------------------
# SiReRAG (Appendix G): summaries, coreference rewrite, entities, propositions
# ---------------------------------------------------------------------------

SUMMARIZE = """Summarise the text below. Keep as many of its key details (names, dates, numbers and how things relate) as are needed to stay faithful to it.

Text:
{text}

Summary:"""  # noqa: E501 - prompt text

COREF_REWRITE = """Rewrite a paragraph so that every entity reference is resolved, using the paragraph that precedes it in the same document for context.

Rules:
- Replace every pronoun that points to something in another sentence with the name it refers to.
- Make each sentence name its own entities, so it can be understood on its own.
- Add entity names wherever a sentence would otherwise be ambiguous.
- Use the single most informative name for each entity, and use it consistently.
- Output only the rewritten paragraph.

Example
Preceding paragraph:
The Hubble Space Telescope was launched into low Earth orbit in 1990 aboard the Space Shuttle Discovery.
Paragraph:
Its main mirror turned out to be flawed soon after launch. In 1993 a servicing mission installed corrective optics, and its astronauts needed five spacewalks to finish the work.
Rewritten:
The Hubble Space Telescope's main mirror turned out to be flawed soon after the Hubble Space Telescope's launch. In 1993 a servicing mission installed corrective optics on the Hubble Space Telescope, and the servicing mission's astronauts needed five spacewalks to finish the work.

Now rewrite this paragraph.
Preceding paragraph:
{previous}
Paragraph:
{paragraph}
Rewritten:"""  # noqa: E501 - prompt text

EXTRACT_ENTITIES = """List every named entity in the document, each with a type.

Instructions:
- Give only the most informative name of each entity: if "J. Parker", "Parker" and "John Parker" are the same person, write only "John Parker".
- Choose entity types that fit the document's domain.
- Reply in this JSON format and nothing else:
{"n1": {"name": "entity name", "type": "entity type"}, "n2": {"name": "...", "type": "..."}}

Example
Document:
In March 2019 SpaceX's Crew Dragon capsule docked autonomously with the International Space Station during the uncrewed Demo-1 flight, after launching on a Falcon 9 rocket from Kennedy Space Center.
Output:
{"n1": {"name": "SpaceX", "type": "Organization"},
 "n2": {"name": "Crew Dragon", "type": "Spacecraft"},
 "n3": {"name": "International Space Station", "type": "Space station"},
 "n4": {"name": "Demo-1", "type": "Test flight"},
 "n5": {"name": "Falcon 9", "type": "Rocket"},
 "n6": {"name": "Kennedy Space Center", "type": "Launch site"},
 "n7": {"name": "March 2019", "type": "Date"}}

Document:
{passage}
Output:"""  # noqa: E501 - prompt text

EXTRACT_PROPOSITIONS = """Extract every fact stated in the document. A fact is a short, self-contained statement of important information, preferably about the listed entities. For each fact, also give all of its semantic triplets.

Instructions:
- Always use the most informative name of an entity, in facts and triplets alike.
- No pronouns or vague references: name the entities in every fact.
- Every triplet is [head entity, predicate, tail entity].
- At least one entity of each triplet, preferably both, should come from the entity list.
- Reply in this JSON format and nothing else:
{"f1": {"fact": "a factual statement from the document", "triplets": [["entity 1", "predicate", "entity 2"]]}, "f2": {...}}

Example
Document:
In March 2019 SpaceX's Crew Dragon capsule docked autonomously with the International Space Station during the uncrewed Demo-1 flight. The capsule had been launched on a Falcon 9 rocket from Kennedy Space Center. In May 2020, Crew Dragon carried NASA astronauts Doug Hurley and Bob Behnken to the station on Demo-2.
Entities: SpaceX, Crew Dragon, International Space Station, Demo-1, Falcon 9, Kennedy Space Center, NASA, Doug Hurley, Bob Behnken, Demo-2
Output:
{"f1": {"fact": "In March 2019, SpaceX's Crew Dragon docked autonomously with the International Space Station during the uncrewed Demo-1 flight.",
        "triplets": [["Crew Dragon", "built by", "SpaceX"], ["Crew Dragon", "docked with", "International Space Station"], ["Demo-1", "flown by", "Crew Dragon"], ["Demo-1", "took place in", "March 2019"]]},
 "f2": {"fact": "For Demo-1, Crew Dragon was launched on a Falcon 9 rocket from Kennedy Space Center.",
        "triplets": [["Crew Dragon", "launched on", "Falcon 9"], ["Demo-1", "launched from", "Kennedy Space Center"]]},
 "f3": {"fact": "In May 2020, Crew Dragon carried NASA astronauts Doug Hurley and Bob Behnken to the International Space Station on Demo-2.",
        "triplets": [["Crew Dragon", "carried", "Doug Hurley"], ["Crew Dragon", "carried", "Bob Behnken"], ["Doug Hurley", "astronaut of", "NASA"], ["Bob Behnken", "astronaut of", "NASA"], ["Demo-2", "destination", "International Space Station"], ["Demo-2", "took place in", "May 2020"]]}}

Document:
{passage}
Entities: {entities}
Output:"""  # noqa: E501 - prompt text

# SiReRAG §5 (implementation details): every method answers from its top-20 retrieval candidates
# with GPT-4o and the same instruction, "answer this question in as fewer number of words as possible".
SIRERAG_ANSWER = """{passages}

Question: {question}
Answer this question in as few words as possible.
Answer:"""

# ---------------------------------------------------------------------------
# Peer baselines: IRCoT's one-thought step, HippoRAG's query NER and fact filter
# ---------------------------------------------------------------------------

IRCOT_THOUGHT = """You help answer questions that need several documents, reasoning one step at a time. Given the documents retrieved so far, the question and the reasoning written so far, write only the NEXT single sentence of reasoning. Do not write the whole chain at once. When that sentence reaches the final answer, begin it with "So the answer is:".

=== Example ===
Title: Lake Bled
Lake Bled is a glacial lake in the Julian Alps in north-western Slovenia, next to the town of Bled.

Title: Slovenia
Slovenia is a country in Central Europe. Its capital and largest city is Ljubljana.

Question: What is the capital of the country where Lake Bled lies?
Reasoning: Lake Bled lies in Slovenia. The capital of Slovenia is Ljubljana. So the answer is: Ljubljana.

=== Your task ===
{documents}

Question: {question}
Reasoning: {thoughts}"""  # noqa: E501 - prompt text

HIPPORAG_NER = """List the named entities (people, places, organisations, works, events, dates and other proper names) that appear in the question below. Reply with JSON only: {"named_entities": ["...", "..."]}.

Question: Which university did the director of the film "Ex Machina" attend?
{"named_entities": ["Ex Machina"]}

Question: {question}
"""  # noqa: E501 - prompt text

HIPPORAG_FILTER = """A search system found the candidate facts below for a question. Keep only the facts that help answer the question (at most four), copied exactly, and drop the rest. Reply with JSON only: {"fact": [["subject", "predicate", "object"], ...]}; reply {"fact": []} if none helps.

Question: {question}
Candidate facts: {facts}
"""  # noqa: E501 - prompt text

#: The built-in prompts by name.
DEFAULTS: dict[str, Prompt] = {
    p.name: p
    for p in (
        Prompt("extract_triples", EXTRACT_TRIPLES),
        Prompt("read", READ),
        Prompt("read_with_memory", READ_WITH_MEMORY),
        Prompt("reason", REASON),
        Prompt("rewrite", REWRITE),
        Prompt("answer", ANSWER),
        Prompt("answer_closed_book", ANSWER_CLOSED_BOOK),
        Prompt("summarize", SUMMARIZE),
        Prompt("coref_rewrite", COREF_REWRITE),
        Prompt("extract_entities", EXTRACT_ENTITIES),
        Prompt("extract_propositions", EXTRACT_PROPOSITIONS),
        Prompt("sirerag_answer", SIRERAG_ANSWER),
        Prompt("ircot_thought", IRCOT_THOUGHT),
        Prompt("hipporag_ner", HIPPORAG_NER),
        Prompt("hipporag_filter", HIPPORAG_FILTER),
    )
}

#: Placeholders each prompt must contain (an override that drops one is rejected).
REQUIRED: dict[str, set[str]] = {
    "extract_triples": {"passage"},
    "read": {"documents", "question"},
    "read_with_memory": {"documents", "question", "memory"},
    "reason": {"question", "facts"},
    "rewrite": {"question", "facts", "reason"},
    "answer": {"passages", "question"},
    "answer_closed_book": {"question"},
    "summarize": {"text"},
    "coref_rewrite": {"previous", "paragraph"},
    "extract_entities": {"passage"},
    "extract_propositions": {"passage"},
    "sirerag_answer": {"passages", "question"},
    "ircot_thought": {"documents", "question", "thoughts"},
    "hipporag_ner": {"question"},
    "hipporag_filter": {"question", "facts"},
}

#: Placeholders each prompt may use (values are always supplied by the caller).
AVAILABLE: dict[str, set[str]] = {
    "extract_triples": {"title", "passage"},
    "read": {"documents", "question"},
    "read_with_memory": {"documents", "question", "memory"},
    "reason": {"question", "facts"},
    "rewrite": {"question", "facts", "reason"},
    "answer": {"passages", "question"},
    "answer_closed_book": {"question"},
    "summarize": {"text"},
    "coref_rewrite": {"previous", "paragraph"},
    "extract_entities": {"passage"},
    "extract_propositions": {"passage", "entities"},
    "sirerag_answer": {"passages", "question"},
    "ircot_thought": {"documents", "question", "thoughts"},
    "hipporag_ner": {"question"},
    "hipporag_filter": {"question", "facts"},
}


class PromptSet:
    """The built-in prompts with user overrides applied."""

    def __init__(self, overrides: Mapping[str, str | Mapping[str, str]] | None = None) -> None:
        self._prompts: dict[str, Prompt] = dict(DEFAULTS)
        for name, value in (overrides or {}).items():
            self._prompts[name] = _override(name, value)

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any]) -> PromptSet:
        """Built-ins overridden from a dict or a ``.json``/``.toml`` file."""
        if isinstance(source, Mapping):
            return cls(source)
        path = Path(source)
        try:
            raw = path.read_bytes()
            data = tomllib.loads(raw.decode("utf-8")) if path.suffix == ".toml" else json.loads(raw)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read prompt overrides {path}: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"prompt overrides {path} must map prompt names to templates")
        return cls(data)

    @classmethod
    def from_env(cls) -> PromptSet:
        """Built-ins, overridden by the file named in ``GEARAG_PROMPTS`` if set."""
        path = os.environ.get("GEARAG_PROMPTS")
        return cls.load(path) if path else cls()

    def __getitem__(self, name: str) -> Prompt:
        try:
            return self._prompts[name]
        except KeyError:
            raise ConfigError(f"unknown prompt {name!r} (known: {', '.join(sorted(self._prompts))})") from None

    def __contains__(self, name: str) -> bool:
        return name in self._prompts

    def names(self) -> list[str]:
        return sorted(self._prompts)

    def render(self, name: str, **values: Any) -> list[dict[str, str]]:
        """The chat messages for prompt ``name`` with ``values`` filled in."""
        return self[name].render(**values)

    def fingerprint(self, name: str) -> str:
        return self[name].fingerprint()

    def is_default(self, name: str) -> bool:
        return self._prompts.get(name) == DEFAULTS.get(name)


def _override(name: str, value: str | Mapping[str, str]) -> Prompt:
    if name not in DEFAULTS:
        raise ConfigError(f"unknown prompt {name!r} in overrides (known: {', '.join(sorted(DEFAULTS))})")
    if isinstance(value, str):
        prompt = Prompt(name, value)
    elif isinstance(value, Mapping) and isinstance(value.get("user"), str):
        system = value.get("system")
        if system is not None and not isinstance(system, str):
            raise ConfigError(f"prompt override {name!r}: 'system' must be a string")
        unknown_keys = set(value) - {"user", "system"}
        if unknown_keys:
            raise ConfigError(f"prompt override {name!r}: unknown key(s) {', '.join(sorted(unknown_keys))}")
        prompt = Prompt(name, value["user"], system)
    else:
        raise ConfigError(f"prompt override {name!r} must be a string or a table with 'user' (and 'system')")
    missing = REQUIRED[name] - prompt.placeholders
    if missing:
        raise ConfigError(
            f"prompt override {name!r} lacks placeholder(s) " + ", ".join("{" + m + "}" for m in sorted(missing))
        )
    unknown = prompt.placeholders - AVAILABLE[name]
    if unknown:
        allowed = ", ".join("{" + m + "}" for m in sorted(AVAILABLE[name]))
        raise ConfigError(
            f"prompt override {name!r} uses unknown placeholder(s) "
            + ", ".join("{" + m + "}" for m in sorted(unknown))
            + f" (available: {allowed})"
        )
    return prompt


#: The built-in prompt set.
DEFAULT_PROMPTS = PromptSet()
