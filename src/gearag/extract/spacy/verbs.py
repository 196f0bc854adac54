"""Rules on verbs: subject–verb–object, copulas, and prepositional objects.

``"X was directed by Y"`` → ``(X, directed by, Y)``; ``"X is a Y"`` →
``(X, is, Y)``; ``"X was countess of Y"`` → ``(X, was countess of, Y)``;
``"X is located in Y"`` → ``(X, is located in, Y)``.
"""

from __future__ import annotations

from typing import Any

from gearag.extract.spacy.context import RuleContext
from gearag.extract.spacy.vocab import COMMON_TAGS, COPULAS, OBJ_DEPS, PREP_DEPS, SUBJ_DEPS


class VerbRules(RuleContext):
    """Triples from a verb, its subjects, objects, attributes and prepositions."""

    def verb_preps(self, v: Any) -> list[Any]:
        """Prepositions on a verb ("sold to" is parsed as a dative "to" with its own object)."""
        return [
            c
            for c in v.children
            if (c.dep_ in PREP_DEPS or (c.dep_ == "dative" and c.tag_ in ("IN", "TO"))) and not self.inside_name(c)
        ]

    def do_verb(self, v: Any) -> None:
        """Triples from verb ``v`` for each of its subjects."""
        subjects = self.subjects(v)
        if not subjects:
            return
        base = self.verb_words(v)
        copula = base[-1] in COPULAS
        attrs: list[Any] = []
        has_object = False
        for c in v.children:
            if c.dep_ in OBJ_DEPS and c.tag_ not in ("IN", "TO"):
                has_object = True
                pred = base if c.dep_ != "dative" else [*base, "to"]
                for o in self.objects(c):
                    if c.dep_ == "attr":
                        attrs.append(o)
                    for s in subjects:
                        self.emit_object(s, pred, o)
            elif c.dep_ == "acomp" and copula:
                # "X is located in Y", "X was married to Y".
                for p in self.verb_preps(c):
                    self.prep_objects(subjects, [base[-1], c.lower_, p.lower_], p)
        preps = self.verb_preps(v)
        if not preps and not has_object:
            # "directed and written by X": the first verb shares the second's objects.
            for c in v.children:
                if c.dep_ == "conj" and c.tag_.startswith("VB") and not any(
                    g.dep_ in SUBJ_DEPS for g in c.children
                ):
                    for p in self.verb_preps(c):
                        self.prep_objects(subjects, [*base, p.lower_], p)
                    break
        acomps = [c for c in v.children if c.dep_ == "acomp"] if copula else []
        for p in preps:
            if copula and attrs and attrs[0].tag_ in COMMON_TAGS:
                pred = [base[-1], attrs[0].lower_, p.lower_]  # "was countess of X" with "of" on the verb
            elif acomps:
                pred = [base[-1], acomps[0].lower_, p.lower_]  # "was married to X"
            else:
                pred = [*base, p.lower_]
            self.prep_objects(subjects, pred, p)

    def prep_objects(self, subjects: list[str], pred: list[str], prep: Any) -> None:
        for q in prep.children:
            if q.dep_ != "pobj":
                continue
            for o in self.objects(q):
                if not self.has_descent(o):
                    for s in subjects:
                        self.add(s, " ".join(pred), self.expand(o))
                if o.tag_ in COMMON_TAGS and o.i not in self.spans:
                    # "as the first spouse of King X" → (S, spouse of, X)
                    for p2 in o.children:
                        if p2.dep_ == "prep" and not self.inside_name(p2):
                            for q2 in p2.children:
                                if q2.dep_ == "pobj":
                                    for o2 in self.objects(q2):
                                        for s in subjects:
                                            self.add(s, f"{o.lower_} {p2.lower_}", self.expand(o2))

