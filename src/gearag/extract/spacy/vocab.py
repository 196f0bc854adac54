"""Tag, dependency and word sets shared by the span finder and the rules.

Tags and dependency labels are those of spaCy's English models (Penn
Treebank tags, ClearNLP dependencies).
"""

from __future__ import annotations

#: A span of tokens ``(start, end, label)``, ``end`` exclusive.
Span = tuple[int, int, str]

NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
COMMON_TAGS = frozenset({"NN", "NNS"})
PROPER_TAGS = frozenset({"NNP", "NNPS"})
PRONOUN_TAGS = frozenset({"PRP", "PRP$"})
REL_TAGS = frozenset({"WDT", "WP", "WP$"})
DASHES = frozenset({"-", "–", "—", "--"})
#: Lower-case words allowed inside a proper-noun run ("Adalbert II of Tuscany").
NAME_LINKS = frozenset(
    {"of", "de", "von", "van", "der", "den", "du", "la", "le", "da", "di", "del", "zu", "af", "bin", "ibn", "bint",
     "al", "el", "no", "'s", "’s"}
)
COPULAS = frozenset({"is", "was", "are", "were", "be", "been", "being", "am", "'s"})
SUBJ_DEPS = frozenset({"nsubj", "nsubjpass"})
OBJ_DEPS = frozenset({"dobj", "attr", "oprd", "dative"})
PREP_DEPS = frozenset({"prep", "agent"})
