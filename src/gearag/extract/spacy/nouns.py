"""Rules on nouns: possessives, appositions, and prepositions on names.

``"his father, Y"`` → ``(T, father, Y)``; ``"Hucbert, the lay-abbot of X"``
→ ``(Hucbert, is, lay-abbot)``; ``"Y from Z"`` → ``(Y, from, Z)``.
"""

from __future__ import annotations

from typing import Any

from gearag.extract.spacy.context import RuleContext
from gearag.extract.spacy.vocab import COMMON_TAGS, COPULAS, PRONOUN_TAGS, SUBJ_DEPS
from gearag.text import normalise_entity


class NounRules(RuleContext):
    """Triples from a noun: its owner, what it is in apposition to, the names it is linked to."""

    def do_noun(self, n: Any) -> None:
        """Triples from noun ``n``: as a possessed common noun, an apposition, a name with prepositions."""
        if n.tag_ in COMMON_TAGS and n.i not in self.spans:
            self.possessive(n)
        if n.dep_ == "appos" and n.head.i != n.i:
            self.apposition(n)
        if self.is_name(n):
            self.name_preps(n)

    def possessive(self, n: Any) -> None:
        """``"his father, John Smith"`` → ``(T, father, John Smith)``."""
        owners = [c for c in n.children if c.dep_ == "poss"]
        if not owners:
            return
        owner = self.referent(owners[0]) if owners[0].tag_ in PRONOUN_TAGS else self.expand(owners[0])
        if not owner:
            return
        rel = [c.lower_ for c in n.lefts if c.dep_ == "compound" and c.tag_ in COMMON_TAGS]
        rel.append(n.lower_)
        names = self.appos_names(n)
        if n.dep_ == "compound" and self.is_name(n.head):
            names.append(n.head)
        if n.dep_ in SUBJ_DEPS and n.head.lower_ in COPULAS:
            names += [c for c in n.head.children if c.dep_ == "attr" and self.is_name(c)]
        if n.dep_ == "attr" and n.head.lower_ in COPULAS:
            names += [c for c in n.head.children if c.dep_ in SUBJ_DEPS and self.is_name(c)]
        for name in names:
            for t in self.with_conjuncts(name):
                if self.is_name(t):
                    self.add(owner, " ".join(rel), self.expand(t))

    def apposition(self, n: Any) -> None:
        """``"Hucbert, the lay-abbot of X"`` → ``(Hucbert, is, lay-abbot)``, ``(Hucbert, is abbot of, X)``."""
        head = n.head
        if head.i in self.spans and self.spans.get(n.i) == self.spans[head.i]:
            return
        if self.is_name(head) or head.tag_ in PRONOUN_TAGS:
            who = self.referent(head) if head.tag_ in PRONOUN_TAGS else self.referent(head) or self.expand(head)
            if who:
                if self.is_name(n):
                    self.add(who, "is", self.expand(n))
                elif n.tag_ in COMMON_TAGS:
                    self.emit_object(who, ["is"], n)
        elif (
            self.is_name(n)
            and head.tag_ in COMMON_TAGS
            and head.i not in self.spans
            and n in self.appos_names(head)
            and not any(c.dep_ == "poss" for c in head.children)
        ):
            self.add(self.expand(n), "is", self.expand(head))

    def name_preps(self, n: Any) -> None:
        """``"Jan Solovej from the University of X"`` → ``(Jan Solovej, from, University of X)``."""
        span = self.spans[n.i]
        own = normalise_entity(self.expand(n))
        for p in n.children:
            if p.dep_ != "prep" or span[0] <= p.i < span[1] or self.inside_name(p):
                continue
            for q in p.children:
                if q.dep_ == "pobj" and q.i in self.spans:
                    for qq in self.with_conjuncts(q):
                        if qq.i in self.spans and normalise_entity(self.expand(qq)) not in own:
                            self.add(self.referent(n) or self.expand(n), p.lower_, self.expand(qq))

