"""The course grammar's rules: :func:`build_rules` turns the lexicon and the construction
probabilities (:mod:`course.grammar_lexicon`) into a probabilistic context-free grammar, each rule
with its probability, normalised per left-hand side, useless symbols removed.

Conventions: nonterminals are upper case with features after dots ("NP.sg.animal.1" = a singular
animal noun phrase at embedding depth 1); terminals are lower-case words.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from course.grammar_lexicon import (ADJECTIVE_KIND, COPULA, HAS_COLOUR, MAX_DEPTH, NOUN_MODIFIERS, NUMBERS, P,
                                    PRONOUNS, REFLEXIVES, TENSES, Lexicon, kind_of, noun_classes, zipf_weights)


@dataclass(frozen=True)
class Rule:
    lhs: str
    rhs: tuple
    prob: float

    @functools.cached_property
    def logprob(self) -> float:          # asked millions of times when a corpus is written or judged
        return math.log(self.prob)

    def __str__(self) -> str:
        return f"{self.lhs} -> {' '.join(self.rhs) or '<empty>'}  [{self.prob:.4g}]"


def is_nonterminal(symbol: str) -> bool:
    return symbol[:1].isupper()


class _RuleSet:
    """Collects weighted rules; weights are normalised per left-hand side later."""

    def __init__(self):
        self.weights: dict[str, dict[tuple, float]] = {}

    def add(self, lhs: str, rhs, weight: float):
        if weight <= 0:
            return
        rhs = tuple(rhs.split()) if isinstance(rhs, str) else tuple(rhs)
        table = self.weights.setdefault(lhs, {})
        table[rhs] = table.get(rhs, 0.0) + weight

    def add_words(self, lhs: str, words: list[str], zipf: float):
        for word, weight in zip(words, zipf_weights(len(words), zipf)):
            self.add(lhs, (word,), weight)


def build_rules(lexicon: Lexicon, p: dict = P, max_depth: int = MAX_DEPTH) -> dict[str, list[Rule]]:
    """All rules of the grammar, normalised, useless symbols removed.

    Symbols (n = sg|pl, c = noun class, k = noun kind, t = pres|past, d = depth):
      S                 sentence: subject, predicate
      PRED.n.c          main-clause verb phrase(s) in tense t, maybe a time adverb
      VPM.n.c.t         one verb phrase, two joined by "and", or a "that"-clause verb
                        (VE.n.c.t.0.say: say/think/... + "that" + CLAUSE.1)
      VPA.n.c.t         [adverb] verb, its object and maybe an adjunct PP
      CLAUSE.d          embedded "that"-clause (no adjuncts, no coordination)
      VE.n.c.t.d        [adverb] verb + object inside embedded and relative clauses
      SUBJ.n.c.d        subject: pronoun or noun phrase
      NP.n.c.d          noun phrase: name, or determiner [adjective] noun [modifier]
      NPK.k.d           a noun phrase of kind k, any number / gender
      MOD.n.c.d         nothing, a PP, or a relative clause (subject or object gap)
      RCS / RCO         who|which + verb phrase / who|which + subject + verb with a gap
    Preterminals: N.n.c (nouns), NAME.c, PRON.n.c, REFL.n.c, DET.n, ADJ.a, COLOUR,
    ADV, TIME.t, V.frame.n.t (verbs), COP.n.t (is/are/was/were).

    Each part of the grammar is added by one method of :class:`_Builder`, in this order (the
    order of the rules, which sampling follows, and so the shipped corpus, depends on it).
    """
    builder = _Builder(lexicon, p, max_depth)
    builder.main_clauses()
    builder.embedded_clauses()
    builder.noun_phrases()
    builder.gap_verbs()
    builder.words()
    builder.adjective_slots()
    return _finish(builder.rules.weights, "S")


class _Builder:
    """The rules of one grammar while they are built: the lexicon, the construction
    probabilities ``p``, and the weighted rules added so far."""

    def __init__(self, lexicon: Lexicon, p: dict, max_depth: int):
        self.lexicon, self.p, self.max_depth = lexicon, p, max_depth
        self.rules = _RuleSet()
        self.sing = {"sg": p["singular"], "pl": 1 - p["singular"]}
        self.tense = {"pres": 1 - p["past"], "past": p["past"]}
        self.frames = lexicon.frames
        kinds = [k for k in p["subject_kind"] if k in lexicon.kinds]
        self.subject_classes = [(n, c, p["subject_kind"][k] * w) for k in kinds for n, c, w in self.variants(k)]

    # -- what the sections share ------------------------------------------------
    def variants(self, kind):
        """(number, class, probability) of a noun phrase of this kind."""
        out = []
        for n in NUMBERS:
            classes = [c for c in noun_classes(kind, n) if self.lexicon.nouns.get((n, c))]
            for c in classes:
                out.append((n, c, self.sing[n] / len(classes)))
        return out

    def frame_weights(self, kind, allow=lambda f: True):
        """P(frame | subject kind), restricted to the frames that `allow`."""
        weights = {name: f.weight * f.subjects[kind] / sum(f.subjects.values())
                   for name, f in self.frames.items() if kind in f.subjects and allow(f)}
        total = sum(weights.values())
        return {name: w / total for name, w in weights.items()} if total else {}

    def complements(self, frame_name, n, c, d):
        """(right-hand side after the verb, weight) for a verb of this frame."""
        f = self.frames[frame_name]
        if f.objects is None:
            return [((), 1.0)]
        if "ADJ" in f.objects:
            return [((f"ADJ.{ADJECTIVE_KIND[kind_of(c)]}",), 1.0)]
        if "CLAUSE" in f.objects:
            return [(("that", f"CLAUSE.{d + 1}"), 1.0)] if d + 1 <= self.max_depth else []
        total = sum(f.objects.values())
        out = []
        for k, w in f.objects.items():
            if k == "REFL":
                if kind_of(c) == "hum":
                    out.append(((f"REFL.{n}.{c}",), w / total))
            else:
                out.append(((f"NPK.{k}.{d}",), w / total))
        return out

    @staticmethod
    def verb(frame_name, n, t):
        return "COP" + f".{n}.{t}" if frame_name == "be" else f"V.{frame_name}.{n}.{t}"

    def optional_adverb(self, lhs, rest, weight=1.0):
        adverb = 0.0 if rest[0].startswith("COP") else self.p["adverb"]  # not "often is"
        self.rules.add(lhs, ("ADV",) + rest, weight * adverb)
        self.rules.add(lhs, rest, weight * (1 - adverb))

    # -- the sections, in the order build_rules calls them -------------------------
    def main_clauses(self):
        """The sentence and its main clause: subject, predicate (a "that"-clause verb, one verb
        phrase, or two joined by "and"), maybe a time adverb."""
        p, rules, tense = self.p, self.rules, self.tense
        for n, c, w in self.subject_classes:
            rules.add("S", (f"SUBJ.{n}.{c}.0", f"PRED.{n}.{c}"), w)
            for t in TENSES:
                rules.add(f"PRED.{n}.{c}", (f"VPM.{n}.{c}.{t}",), tense[t] * (1 - p["time"]))
                rules.add(f"PRED.{n}.{c}", (f"VPM.{n}.{c}.{t}", f"TIME.{t}"), tense[t] * p["time"])
                say = self.frame_weights(kind_of(c)).get("say", 0.0)
                vpa = f"VPA.{n}.{c}.{t}"
                rules.add(f"VPM.{n}.{c}.{t}", (f"VE.{n}.{c}.{t}.0.say",), say)
                rules.add(f"VPM.{n}.{c}.{t}", (vpa,), (1 - say) * (1 - p["coordination"]))
                rules.add(f"VPM.{n}.{c}.{t}", (vpa, "and", vpa), (1 - say) * p["coordination"])
                self.main_verb_phrase(vpa, n, c, t)

    def main_verb_phrase(self, vpa, n, c, t):
        """A main-clause verb phrase: verb, complement, maybe one adjunct PP."""
        p, frames = self.p, self.frames
        for name, fw in self.frame_weights(kind_of(c), lambda f: f.objects != {"CLAUSE": 1}).items():
            adjuncts = [(prep, k, aw) for prep, k, aw in frames[name].adjuncts
                        if k != "REFL" or kind_of(c) == "hum"]
            total = sum(aw for _, _, aw in adjuncts)
            for rhs, cw in self.complements(name, n, c, 0):
                head = (self.verb(name, n, t),) + rhs
                self.optional_adverb(vpa, head, fw * cw * (1 - p["adjunct"] if adjuncts else 1.0))
                for prep, k, aw in adjuncts:
                    tail = (prep, f"REFL.{n}.{c}") if k == "REFL" else (prep, f"NPK.{k}.0")
                    self.optional_adverb(vpa, head + tail, fw * cw * p["adjunct"] * aw / total)

    def embedded_clauses(self):
        """Embedded clauses and the verb phrases inside them (no adjuncts, no "and")."""
        for d in range(self.max_depth + 1):
            for n, c, w in self.subject_classes:
                for t in TENSES:
                    self.rules.add(f"CLAUSE.{d}", (f"SUBJ.{n}.{c}.{d}", f"VE.{n}.{c}.{t}.{d}"), w * self.tense[t])
            for k in self.lexicon.kinds:
                for n, c, w in self.variants(k):
                    for t in TENSES:
                        ve = f"VE.{n}.{c}.{t}.{d}"
                        for name, fw in self.frame_weights(k).items():
                            for rhs, cw in self.complements(name, n, c, d):
                                self.optional_adverb(ve, (self.verb(name, n, t),) + rhs, fw * cw)
                                if name == "say":
                                    self.optional_adverb(ve + ".say", (self.verb(name, n, t),) + rhs, 1.0)

    def noun_phrases(self):
        """Subjects, noun phrases, their prepositional phrases and relative clauses, at each depth."""
        for d in range(self.max_depth + 1):
            for k in self.lexicon.kinds:
                self.noun_phrase(k, d)
                for prep, k2, w in NOUN_MODIFIERS[k]:
                    self.rules.add(f"PP.{k}.{d}", (prep, f"NPK.{k2}.{d}"), w)
                self.relative_clauses(k, d)

    def noun_phrase(self, k, d):
        """The subjects and noun phrases of kind k at depth d, with their modifier slot."""
        p, rules = self.p, self.rules
        for n, c, w in self.variants(k):
            rules.add(f"NPK.{k}.{d}", (f"NP.{n}.{c}.{d}",), w)
            subj, np_ = f"SUBJ.{n}.{c}.{d}", f"NP.{n}.{c}.{d}"
            pron = p["pronoun"] if (n, c) in PRONOUNS else 0.0
            rules.add(subj, (f"PRON.{n}.{c}",), pron)
            rules.add(subj, (np_,), 1 - pron)
            name = p["name"] if self.lexicon.names.get(c) and n == "sg" else 0.0
            rules.add(np_, (f"NAME.{c}",), name)
            body = (f"DET.{n}", f"ADJS.{k}", f"N.{n}.{c}")
            if d < self.max_depth:
                rules.add(np_, body + (f"MOD.{n}.{c}.{d}",), 1 - name)
                mod = f"MOD.{n}.{c}.{d}"
                pm, kinds_of_mod = p["modifier"][d], p["modifier_kind"]
                rules.add(mod, (), 1 - pm)
                rules.add(mod, (f"PP.{k}.{d + 1}",), pm * kinds_of_mod["pp"])
                rules.add(mod, (f"RCS.{n}.{c}.{d + 1}",), pm * kinds_of_mod["subject_rc"])
                rules.add(mod, (f"RCO.{n}.{c}.{d + 1}",), pm * kinds_of_mod["object_rc"])
            else:
                rules.add(np_, body, 1 - name)

    def relative_clauses(self, k, d):
        """Relative clauses on a noun of kind k: a subject gap ("the boy who eats"), or an object
        gap ("the cake which the boy eats": the verb's object is the head noun)."""
        for n, c, _ in self.variants(k):
            rel = "who" if k == "hum" else "which"
            for t in TENSES:
                self.rules.add(f"RCS.{n}.{c}.{d}", (rel, f"VE.{n}.{c}.{t}.{d}"), self.tense[t])
            for n2, c2, w2 in self.subject_classes:
                for name, fw in self.frame_weights(kind_of(c2)).items():
                    objects = self.frames[name].objects or {}
                    if k in objects:
                        share = objects[k] / sum(objects.values())
                        for t in TENSES:
                            self.rules.add(f"RCO.{n}.{c}.{d}",
                                           (rel, f"SUBJ.{n2}.{c2}.{d}", f"VG.{n2}.{c2}.{k}.{t}"),
                                           w2 * fw * share * self.tense[t])

    def gap_verbs(self):
        """The verb of an object-gap relative clause, given its subject and object kind."""
        for n2, c2, _ in self.subject_classes:
            for name, fw in self.frame_weights(kind_of(c2)).items():
                objects = self.frames[name].objects or {}
                for k in objects:
                    if k in self.lexicon.kinds:
                        for t in TENSES:
                            self.optional_adverb(f"VG.{n2}.{c2}.{k}.{t}", (self.verb(name, n2, t),),
                                                 fw * objects[k] / sum(objects.values()))

    def words(self):
        """The preterminals: each list's words, Zipf-weighted by rank."""
        lexicon, rules, z = self.lexicon, self.rules, self.p["zipf_exponent"]
        for (n, c), words in lexicon.nouns.items():
            rules.add_words(f"N.{n}.{c}", words, z)
        for c, words in lexicon.names.items():
            rules.add_words(f"NAME.{c}", words, z)
        for (n, c), word in PRONOUNS.items():
            rules.add(f"PRON.{n}.{c}", (word,), 1.0)
        for (n, c), word in REFLEXIVES.items():
            rules.add(f"REFL.{n}.{c}", (word,), 1.0)
        for n, words in lexicon.determiners.items():
            rules.add_words(f"DET.{n}", words, z)
        for kind_name, words in lexicon.adjectives.items():
            rules.add_words(f"ADJ.{kind_name}", words, z)
        rules.add_words("COLOUR", lexicon.colours, z)
        rules.add_words("ADV", lexicon.adverbs, z)
        for t, words in lexicon.time_words.items():
            rules.add_words(f"TIME.{t}", words, z)
        for (n, t), word in COPULA.items():
            rules.add(f"COP.{n}.{t}", (word,), 1.0)
        for name, forms in lexicon.verbs.items():
            for n in NUMBERS:
                for t in TENSES:
                    form = "past" if t == "past" else ("3sg" if n == "sg" else "base")
                    rules.add_words(f"V.{name}.{n}.{t}", [f[form] for f in forms], z)

    def adjective_slots(self):
        """What stands before a noun of each kind: nothing, an adjective, a colour, or both."""
        p, rules = self.p, self.rules
        for k in self.lexicon.kinds:
            adj = f"ADJ.{ADJECTIVE_KIND[k]}"
            rules.add(f"ADJS.{k}", (), 1 - p["adjective"] - (p["colour"] if k in HAS_COLOUR else 0))
            rules.add(f"ADJS.{k}", (adj,), p["adjective"] * (0.7 if k in HAS_COLOUR else 1.0))
            if k in HAS_COLOUR:
                rules.add(f"ADJS.{k}", ("COLOUR",), p["colour"])
                rules.add(f"ADJS.{k}", (adj, "COLOUR"), p["adjective"] * 0.3)


def _finish(weights: dict, start: str) -> dict[str, list[Rule]]:
    """Drop symbols that derive no sentence or cannot be reached; normalise."""
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        for lhs, table in weights.items():
            if lhs not in productive and any(
                    all(not is_nonterminal(s) or s in productive for s in rhs) for rhs in table):
                productive.add(lhs)
                changed = True
    if start not in productive:
        raise ValueError("the grammar derives no sentence: the lexicon is too small")
    reachable, todo = {start}, [start]
    while todo:
        for rhs in weights[todo.pop()]:
            if all(not is_nonterminal(s) or s in productive for s in rhs):
                for s in rhs:
                    if is_nonterminal(s) and s not in reachable:
                        reachable.add(s)
                        todo.append(s)
    out = {}
    for lhs in sorted(reachable):
        table = {rhs: w for rhs, w in weights[lhs].items()
                 if all(not is_nonterminal(s) or s in productive for s in rhs)}
        total = math.fsum(table.values())
        out[lhs] = [Rule(lhs, rhs, w / total) for rhs, w in table.items()]
    return out
