"""The course corpus: a probabilistic grammar of English-like sentences.

The course trains language models on text drawn from this grammar, so the true
distribution of the text is known. Three long-distance phenomena from the
tutorial chapter (section 6.1) are built in:

* subject-verb number agreement across prepositional phrases and relative
  clauses, often with "attractor" nouns of the other number in between
  ("the key near the cabinets is old");
* pronoun-reflexive agreement ("he ... himself", "she ... herself"),
  the reflexive bound by the subject of its own clause;
* selectional preferences of verbs and prepositions ("ate the salad with a
  fork" or "with a friend", never "with a backpack").

The grammar is a probabilistic context-free grammar (PCFG), in three modules:

* :mod:`course.grammar_lexicon`, its data: a lexicon (word lists, most frequent
  first, so word frequencies follow a Zipf curve), the verb frames (who does
  what to what, with which prepositional phrases), the noun modifiers and the
  construction probabilities `P`;
* :mod:`course.grammar_rules`, its rules, built from those tables by
  `build_rules`;
* this module, :class:`Grammar`: sampling, parsing, exact scoring, the
  agreements of a sentence, the exact entropy, and the corpus's splits.

Exact probabilities. The grammar is unambiguous by construction, so the
probability of a sentence is the probability of its single derivation, the
product of its rule probabilities. The reasons:

1. every word belongs to one lexical category (checked when the lexicon is
   built; adjectives may serve several noun classes, which the noun then
   resolves);
2. a noun phrase takes at most one modifier (a PP or a relative clause), so a
   modifier always belongs to the nearest noun before it;
3. the prepositions that modify nouns (near, of, from, ...) and those that
   modify verbs (with, for, in, at, to) are disjoint;
4. only the main clause takes verb adjuncts, a final time adverb and "and"
   coordination; relative and complement clauses take none.

`Grammar.parse` does not rely on this argument: it follows every derivation
of a sentence and raises `AmbiguityError` if it ever finds two. The tests
parse sampled sentences and check that the parse is the sampled derivation.

Conventions: nonterminals are upper case with features after dots
("NP.sg.animal.1" = a singular animal noun phrase at embedding depth 1);
terminals are lower-case words. The indefinite article is sampled as "a"
and spelled "an" before a vowel (`spell`), so every string still has one
derivation. Log-probabilities are natural logs; a sentence's log-probability
includes the end of sentence, as in the course's perplexity convention
(tokens = words + one </s> per sentence).
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from course.files import read_text
from course.grammar_lexicon import FRAMES, MAX_DEPTH, NAMES, NOUNS, PRONOUNS, VOWELS, P, Lexicon, noun_forms
from course.grammar_rules import Rule, build_rules, is_nonterminal


# --------------------------------------------------------------------------
# Sampling, parsing and scoring
# --------------------------------------------------------------------------

END = "</s>"


class AmbiguityError(RuntimeError):
    """A sentence with two derivations: the grammar is not unambiguous."""


@dataclass(frozen=True)
class Derivation:
    """A sentence (as written) and the rules that derived it, leftmost first."""

    words: tuple
    rules: tuple

    @property
    def logprob(self) -> float:
        """Natural-log probability: the sum of the log-probabilities of its rules."""
        total = 0.0
        for rule in self.rules:
            total += rule.logprob
        return total


@dataclass(frozen=True)
class Agreement:
    """One agreement in a sentence: the cue word decides the target's form.

    task: "number" (subject -> verb: is/are, eats/eat) or "gender" (subject ->
    himself/herself). wrong is the target's other form; attractors counts the
    words between cue and target that carry the other number (nouns, names,
    pronouns) or the other gender (people, names, he/she/his/her/...).
    """

    task: str
    cue_index: int
    target_index: int
    right: str
    wrong: str
    attractors: int

    @property
    def distance(self) -> int:
        return self.target_index - self.cue_index


def spell(words) -> list[str]:
    """Write the article "a" as "an" before a vowel: the only spelling rule."""
    words = list(words)
    return [("an" if w == "a" and i + 1 < len(words) and words[i + 1][0] in VOWELS else w)
            for i, w in enumerate(words)]


def unspell(words) -> list[str] | None:
    """Undo `spell`; None if an article is spelled wrongly ("a apple", "an dog")."""
    deep = ["a" if w == "an" else w for w in words]
    return deep if spell(deep) == list(words) else None


class Grammar:
    """The course grammar: sample sentences, score them exactly, find agreements.

    >>> g = Grammar()
    >>> d = g.sample(random.Random(1))
    >>> g.logprob(d.words) == d.logprob
    True
    """

    def __init__(self, lexicon: Lexicon | None = None, p: dict = P, max_depth: int = MAX_DEPTH):
        self.lexicon = lexicon or Lexicon()
        self.rules = build_rules(self.lexicon, p, max_depth)
        self.start = "S"
        self._expansions = {}      # lhs -> its rules' cumulative probabilities, the rules, each rhs reversed
        for lhs, rules in self.rules.items():
            running, cum = 0.0, []
            for rule in rules:
                running += rule.prob
                cum.append(running)
            self._expansions[lhs] = (cum, rules, [tuple(reversed(r.rhs)) for r in rules])
        self.terminals = sorted({s for rules in self.rules.values() for r in rules
                                 for s in r.rhs if not is_nonterminal(s)})
        spelled = {"an"} if "a" in self.terminals else set()  # "a" is also written "an"
        self.vocabulary = sorted(set(self.terminals) | spelled)
        self._build_parser_tables()
        self._build_word_features()

    # -- sampling -----------------------------------------------------------
    def sample(self, rng: random.Random) -> Derivation:
        """Draw one sentence; rng is a `random.Random` (its only randomness)."""
        stack, words, used = [self.start], [], []
        expansions, draw, pick = self._expansions, rng.random, bisect.bisect_right     # looked up once
        while stack:
            symbol = stack.pop()
            expansion = expansions.get(symbol)
            if expansion is None:
                words.append(symbol)
                continue
            cum, rules, reversed_rhs = expansion
            i = min(pick(cum, draw() * cum[-1]), len(rules) - 1)
            used.append(rules[i])
            stack.extend(reversed_rhs[i])
        return Derivation(tuple(spell(words)), tuple(used))

    # -- parsing ------------------------------------------------------------
    def _build_parser_tables(self):
        """FIRST sets and nullable symbols, to predict only rules that can match."""
        nullable: set[str] = set()
        first: dict[str, set[str]] = {lhs: set() for lhs in self.rules}
        changed = True
        while changed:
            changed = False
            for lhs, rules in self.rules.items():
                for r in rules:
                    if lhs not in nullable and all(s in nullable for s in r.rhs):
                        nullable.add(lhs)
                        changed = True
                    new = self._first_of(r.rhs, first, nullable)
                    if not new <= first[lhs]:
                        first[lhs] |= new
                        changed = True
        self._nullable_rules, self._predict = {}, {}
        for lhs, rules in self.rules.items():
            self._nullable_rules[lhs] = [r for r in rules if all(s in nullable for s in r.rhs)]
            table: dict[str, list[Rule]] = {}
            for r in rules:
                if r not in self._nullable_rules[lhs]:
                    for word in self._first_of(r.rhs, first, nullable):
                        table.setdefault(word, []).append(r)
            self._predict[lhs] = table

    @staticmethod
    def _first_of(symbols, first, nullable) -> set[str]:
        out: set[str] = set()
        for s in symbols:
            if s not in first:  # a terminal
                out.add(s)
                return out
            out |= first[s]
            if s not in nullable:
                return out
        return out

    def parse(self, words) -> Derivation | None:
        """The derivation of a sentence, or None if the grammar cannot derive it.

        A top-down parser that follows all derivations at once (a stack of
        symbols still to derive for each). It raises AmbiguityError if two
        derivations survive: the grammar promises there is at most one.
        """
        deep = unspell(words)
        if deep is None:
            return None
        states = [((self.start, END), None)]  # (symbols to derive, rules used so far, newest first)
        for word in deep + [END]:
            survivors, agenda = [], states
            while agenda:
                stack, used = agenda.pop()
                if not stack:
                    continue
                top, rest = stack[0], stack[1:]
                if top in self.rules:
                    for r in self._predict[top].get(word, ()):
                        agenda.append((r.rhs + rest, (r, used)))
                    for r in self._nullable_rules[top]:
                        agenda.append((r.rhs + rest, (r, used)))
                elif top == word:
                    survivors.append((rest, used))
            states = survivors
            if not states:
                return None
        if len(states) > 1:
            raise AmbiguityError(f"{len(states)} derivations of: {' '.join(words)}")
        used, rules = states[0][1], []
        while used is not None:
            rules.append(used[0])
            used = used[1]
        return Derivation(tuple(words), tuple(reversed(rules)))

    def logprob(self, words) -> float:
        """Exact natural-log probability of a sentence (-inf if impossible)."""
        derivation = self.parse(words)
        return -math.inf if derivation is None else derivation.logprob

    def sentence_logprobs(self, sentences) -> np.ndarray:
        """The scorer protocol: log P(sentence), </s> included, for each sentence."""
        return np.array([self.logprob(s) for s in sentences], dtype=float)

    # -- trees and agreements -------------------------------------------------
    def tree(self, derivation: Derivation):
        """(symbol, children) nested tuples; a word is its position (an int)."""
        rules, position = iter(derivation.rules), [0]

        def build(symbol):
            if symbol not in self.rules:
                position[0] += 1
                return position[0] - 1
            rule = next(rules)
            assert rule.lhs == symbol, "derivation does not match the grammar"
            return (symbol, tuple(build(s) for s in rule.rhs))
        return build(self.start)

    def _build_word_features(self):
        self.number_of, self.gender_of, self.other_form = {}, {}, {}
        for (n, c), words in self.lexicon.nouns.items():
            for w in words:
                self.number_of[w] = n
        for c, words in self.lexicon.names.items():
            for w in words:
                self.number_of[w] = "sg"
                self.gender_of[w] = c[-1]
        for c in ("hum_m", "hum_f"):
            for entry in NOUNS[c].split():
                for w in noun_forms(entry):
                    self.gender_of[w] = c[-1]
        for (n, c), w in PRONOUNS.items():
            self.number_of[w] = n
        for w, g in (("he", "m"), ("his", "m"), ("himself", "m"),
                     ("she", "f"), ("her", "f"), ("herself", "f")):
            self.gender_of[w] = g
        for forms in self.lexicon.verbs.values():
            for f in forms:
                self.other_form[f["3sg"]], self.other_form[f["base"]] = f["base"], f["3sg"]
        for a, b in (("is", "are"), ("was", "were"), ("himself", "herself")):
            self.other_form[a], self.other_form[b] = b, a

    def agreements(self, derivation: Derivation) -> list[Agreement]:
        """Every agreement target in the sentence with its cue (the subject's head)."""
        words, found = derivation.words, []

        def base(node):
            return node[0].split(".", 1)[0]

        def is_word(node):
            return isinstance(node, tuple) and len(node[1]) == 1 and isinstance(node[1][0], int)

        def head(node):
            for child in node[1]:
                if is_word(child) and base(child) in ("N", "NAME", "PRON"):
                    return child[1][0]
                if isinstance(child, tuple) and base(child) in ("SUBJ", "NP", "NPK"):
                    return head(child)
            raise ValueError(f"no head word under {node[0]}")

        def walk(node, subject):
            if isinstance(node, int):
                return
            symbol, children = node
            kind = base(node)
            if is_word(node):
                i = children[0]
                features = symbol.split(".")
                if (kind == "V" and features[-1] == "pres") or kind == "COP":
                    found.append(("number", subject, i))
                elif kind == "REFL" and words[i] in ("himself", "herself"):
                    found.append(("gender", subject, i))
                return
            if kind in ("S", "CLAUSE"):            # subject, then its predicate
                walk(children[0], None)
                walk(children[1], head(children[0]))
            elif kind == "RCO":                      # which + subject + verb
                walk(children[1], None)
                walk(children[2], head(children[1]))
            elif kind == "NP" and len(children) == 4:  # the noun rules its modifier
                for child in children[:3]:
                    walk(child, subject)
                walk(children[3], children[2][1][0])
            else:
                for child in children:
                    walk(child, subject)

        walk(self.tree(derivation), None)
        out = []
        for task, cue, target in found:
            feature = self.number_of if task == "number" else self.gender_of
            cue_value = feature[words[cue]]
            attractors = sum(1 for w in words[cue + 1:target]
                             if feature.get(w, cue_value) != cue_value)
            out.append(Agreement(task, cue, target, words[target],
                                 self.other_form[words[target]], attractors))
        return out

    # -- exact entropy ----------------------------------------------------------
    def expected_counts(self) -> dict[str, float]:
        """Expected number of times each symbol is expanded in one sentence."""
        order, seen = [], set()

        def visit(symbol, path):
            if symbol in seen:
                return
            if symbol in path:
                raise ValueError(f"recursive symbol {symbol}: expected counts need an acyclic grammar")
            path.add(symbol)
            for r in self.rules[symbol]:
                for s in r.rhs:
                    if s in self.rules:
                        visit(s, path)
            path.discard(symbol)
            seen.add(symbol)
            order.append(symbol)
        visit(self.start, set())
        counts = {s: 0.0 for s in order}
        counts[self.start] = 1.0
        for symbol in reversed(order):  # parents before children
            for r in self.rules[symbol]:
                for s in r.rhs:
                    if s in self.rules:
                        counts[s] += counts[symbol] * r.prob
        return counts

    def entropy(self) -> dict[str, float]:
        """Exact entropy of a sentence (nats), expected length, and per-token rate.

        With one derivation per sentence, H(sentence) = sum over symbols X of
        E[#X] * H(rules of X). The rate H / E[words + 1] is what the per-token
        cross-entropy of a large sample converges to: the perplexity floor.
        """
        counts = self.expected_counts()
        h = words = 0.0
        for symbol, count in counts.items():
            for r in self.rules[symbol]:
                h -= count * r.prob * math.log(r.prob)
                words += count * r.prob * sum(1 for s in r.rhs if s not in self.rules)
        rate = h / (words + 1)
        return {"sentence_entropy": h, "expected_words": words, "token_entropy": rate,
                "perplexity": math.exp(rate)}

    def derivations(self, limit: int = 200_000):
        """Every derivation of a finite (tiny) grammar; raises if more than `limit`."""
        out, agenda = [], [((), (self.start,), ())]
        while agenda:
            words, stack, used = agenda.pop()
            while stack and stack[0] not in self.rules:
                words, stack = words + (stack[0],), stack[1:]
            if not stack:
                out.append(Derivation(tuple(spell(words)), used))
                if len(out) > limit:
                    raise ValueError(f"more than {limit} derivations: use a smaller grammar")
                continue
            for r in self.rules[stack[0]]:
                agenda.append((words, r.rhs + stack[1:], used + (r,)))
        return out


def tiny_grammar(max_depth: int = 0, frames=("be", "judge"), kinds=("hum_m", "hum_f", "food"),
                 words_per_list: int = 1, **p) -> Grammar:
    """The same grammar code on one word per list, shallow nesting and the
    given frames and noun kinds; keyword arguments override `P` (e.g.
    coordination=0). Small enough to list every sentence (`derivations`)."""
    lexicon = Lexicon(nouns={c: NOUNS[c] for c in kinds}, names={c: NAMES[c] for c in kinds if c in NAMES},
                      frames={f: FRAMES[f] for f in frames}, words_per_list=words_per_list)
    return Grammar(lexicon, dict(P, modifier=P["modifier"][:max_depth], **p), max_depth)


# --------------------------------------------------------------------------
# Splits: random streams of sentences, and the floor of a split's files. The
# shipped corpus's files are written by course/corpus_files.py.
# --------------------------------------------------------------------------

DEFAULT_SEED = 1              # the shipped corpus's seed


def sample_split(grammar: Grammar, seed: int | str, stream: str, tokens: int,
                 sentences: int | None = None) -> list[Derivation]:
    """Sentences from one random stream until they hold `tokens` tokens
    (or, if given, until there are `sentences` of them).

    Each split has its own stream (its own seed), so a split can be
    regenerated alone and its first k sentences do not depend on its size.
    """
    rng = random.Random(f"course-corpus/{seed}/{stream}")
    out, count = [], 0
    while count < tokens and (sentences is None or len(out) < sentences):
        derivation = grammar.sample(rng)
        out.append(derivation)
        count += len(derivation.words) + 1
    return out


def floor_perplexity(split: str = "test", directory=None) -> float:
    """exp(per-token cross-entropy) of a split under the grammar: a shipped one (data/course/),
    or the split ``split`` in ``directory``.

    Computed from the stored log-probabilities and the sentence file, with
    the course's token count (words + one </s> per sentence).
    """
    from course import paths
    directory = Path(directory) if directory is not None else paths.COURSE_DATA
    logprobs = [float(x) for x in read_text(directory / f"{split}.logprob").split()]
    tokens = sum(len(line.split()) + 1 for line in read_text(directory / f"{split}.txt").splitlines())
    return math.exp(-math.fsum(logprobs) / tokens)
