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

The grammar is a probabilistic context-free grammar (PCFG). Its rules are
built by `build_rules` from the tables below: a lexicon (word lists, most
frequent first, so word frequencies follow a Zipf curve), the verb frames
(who does what to what, with which prepositional phrases), the noun
modifiers and the construction probabilities `P`.

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

# --------------------------------------------------------------------------
# Lexicon. Lists are ordered from most to least frequent; `zipf_weights`
# turns the rank into a probability. "word/plural" gives an irregular plural,
# "verb/past" an irregular past tense; the rest is regular morphology.
# --------------------------------------------------------------------------

NOUNS = {
    # people: the class carries the gender used by himself / herself
    "hum_m": """
        man/men king boy father brother son prince uncle husband friar
        grandfather nephew duke lord monk groom landlord hero/heroes emperor wizard
        actor waiter gentleman/gentlemen policeman/policemen fisherman/fishermen
        chairman/chairmen businessman/businessmen salesman/salesmen knight
        baron schoolboy grandson stepfather stepson godfather bachelor widower
        sultan""",
    "hum_f": """
        woman/women queen girl mother sister daughter princess aunt wife/wives
        nun grandmother niece duchess lady/ladies bride landlady/landladies
        heroine empress witch actress waitress policewoman/policewomen
        fisherwoman/fisherwomen chairwoman/chairwomen businesswoman/businesswomen
        saleswoman/saleswomen maid baroness schoolgirl granddaughter stepmother
        stepdaughter godmother widow abbess""",
    "animal": """
        dog cat horse bird mouse/mice cow rabbit fox pig goat duck
        wolf/wolves bear lion monkey sheepdog donkey parrot owl frog snake hen
        puppy kitten pony tiger camel elephant squirrel hamster turtle goose/geese
        bull crow pigeon swan beetle spider zebra giraffe kangaroo badger otter
        hedgehog lizard""",
    "food": """
        apple cake salad soup sandwich cookie potato/potatoes egg carrot pie
        banana tomato/tomatoes onion pear peach plum cherry lemon grape melon
        pizza muffin biscuit pancake sausage bun tart cracker pickle cucumber
        mango/mangoes strawberry radish turnip pumpkin walnut almond omelette
        dumpling pretzel bagel waffle""",
    "utensil": """
        fork spoon knife/knives chopstick ladle teaspoon skewer toothpick
        straw spatula""",
    "tool": """
        hammer sickle brush needle shovel wrench screwdriver drill rake axe chisel
        ladder rope spanner trowel mallet crowbar""",
    "thing": """
        book bag box key ball letter backpack lamp clock cup bottle basket hat
        coat shoe umbrella ring camera phone map toy candle mirror pillow
        blanket picture vase jar bucket kettle pot plate bowl radio wallet purse
        scarf/scarves glove jacket sweater parcel envelope ticket coin bell doll
        kite guitar violin drum""",
    "place": """
        house garden kitchen park market village city forest river school lake
        beach hill field farm church library station harbour castle palace
        tower bridge street square museum hospital bakery office cellar attic
        barn meadow valley island cave shop hotel theatre stadium cottage
        temple hall courtyard mill prison""",
    "vehicle": """
        car bus train boat ship bicycle truck wagon cart tram taxi van carriage
        sled canoe ferry tractor scooter yacht plane""",
    "plant": """
        tree flower bush tulip daisy oak pine fern vine weed hedge orchid
        sunflower herb mushroom willow cactus/cacti poppy maple""",
    "abstract": """
        story idea plan song joke rumour secret question answer poem riddle
        lesson message promise wish dream tale legend theory speech novel
        prayer warning excuse rule fact recipe report lie proverb""",
}

# Names are singular people; they take no determiner and no modifier.
NAMES = {
    "hum_m": """john peter paul david thomas george henry edward william
        robert richard charles daniel michael simon arthur frank harry jack
        oliver samuel victor hugo oscar felix leo max adam ben""",
    "hum_f": """mary anna emma sarah alice jane susan helen laura julia clara
        lucy grace emily sophie olivia nora ella ruth kate eva maria linda
        paula diana irene vera zoe alma hazel""",
}

# Adjectives by the kind of noun they describe (a word may serve several).
ADJECTIVES = {
    "animate": """happy young hungry old tired angry sad brave clever lazy
        calm proud shy friendly lonely curious gentle nervous sleepy clumsy
        cheerful grumpy strong wise foolish patient jealous famous poor rich
        busy kind""",
    "food": """fresh sweet hot cold ripe delicious warm sour spicy salty raw
        crisp juicy bitter stale soft tasty burnt frozen""",
    "physical": """small new big old heavy shiny dirty broken cheap
        expensive wooden golden rusty sharp tiny huge fancy strange lovely ugly
        dusty""",
    "place": """quiet busy empty old crowded dark sunny ancient famous small
        big cold warm beautiful noisy peaceful narrow wide distant hidden""",
    "plant": """tall young old small big beautiful dry wild tiny strange""",
    "abstract": """strange funny long short true sad simple clever silly old
        new famous""",
}
COLOURS = "red blue green yellow black white brown grey pink purple"
ADJECTIVE_KIND = {  # noun kind -> adjective list
    "hum": "animate", "animal": "animate", "food": "food", "utensil": "physical",
    "tool": "physical", "thing": "physical", "vehicle": "physical",
    "place": "place", "plant": "plant", "abstract": "abstract",
}
HAS_COLOUR = {"utensil", "tool", "thing", "vehicle"}

DETERMINERS = {
    "sg": "the a his her their this my every our your each",
    "pl": "the some his her their these many my several our your",
}
PRONOUNS = {("sg", "hum_m"): "he", ("sg", "hum_f"): "she", ("pl", "hum"): "they"}
REFLEXIVES = {("sg", "hum_m"): "himself", ("sg", "hum_f"): "herself", ("pl", "hum"): "themselves"}
COPULA = {("sg", "pres"): "is", ("pl", "pres"): "are", ("sg", "past"): "was", ("pl", "past"): "were"}
ADVERBS = "often always never sometimes usually rarely suddenly finally quietly slowly"
TIME_WORDS = {"pres": "today now nowadays tonight", "past": "yesterday earlier recently once"}


@dataclass(frozen=True)
class Frame:
    """A verb frame: its verbs, who can be the subject, what the object is.

    subjects / objects map a noun kind to a weight ("REFL" = a reflexive
    pronoun bound to the subject); objects=None is intransitive, "ADJ" is the
    copula's predicative adjective, "CLAUSE" a "that"-clause. adjuncts are the
    prepositional phrases a main-clause verb can take: (preposition, kind, weight).
    weight is how common the frame is among the frames its subject allows.
    """

    verbs: str
    subjects: dict
    objects: dict | None
    adjuncts: tuple = ()
    weight: float = 1.0


FRAMES = {
    "be": Frame("be", {"hum": 1, "animal": 1, "food": 3, "utensil": 3, "tool": 3, "thing": 3,
                       "vehicle": 2, "place": 3, "plant": 2, "abstract": 2},
                {"ADJ": 1}, weight=1.2),
    "act": Frame("""laugh smile cry dance shout whisper pray cough sneeze yawn frown
                 wink blush sigh complain giggle nod/nodded kneel/knelt shiver
                 grin/grinned weep/wept wander travel/travelled relax hesitate argue panic/panicked""",
                 {"hum": 1}, None, (("in", "place", 2), ("at", "place", 1), ("with", "hum", 1))),
    "move": Frame("""sleep/slept run/ran walk jump swim/swam rest wait sit/sat climb
                  fall/fell listen play""",
                  {"hum": 1, "animal": 2}, None, (("in", "place", 2), ("at", "place", 1))),
    "roam": Frame("roam sniff crouch prowl snort graze nap/napped scurry",
                  {"animal": 1}, None, (("at", "place", 1),)),
    "eat": Frame("eat/ate chew devour nibble swallow lick taste",
                 {"hum": 1, "animal": 2}, {"food": 1},
                 (("with", "utensil", 3), ("with", "hum", 2), ("in", "place", 1))),
    "cook": Frame("""cook bake buy/bought sell/sold slice peel serve share order
                  prepare fry boil grill chop/chopped""",
                  {"hum": 1}, {"food": 1},
                  (("with", "utensil", 2), ("for", "REFL", 3), ("for", "hum", 2), ("in", "place", 1))),
    "handle": Frame("""carry find/found lose/lost drop/dropped hide/hid steal/stole
                    bring/brought keep/kept hold/held throw/threw borrow lend/lent
                    wrap/wrapped pack fold fill open""",
                    {"hum": 1}, {"thing": 6, "utensil": 1, "tool": 1},
                    (("for", "REFL", 3), ("for", "hum", 1), ("to", "hum", 2), ("to", "place", 1))),
    "fix": Frame("fix repair paint polish build/built decorate clean scrub/scrubbed mend",
                 {"hum": 1}, {"thing": 3, "vehicle": 2},
                 (("with", "tool", 3), ("for", "REFL", 2), ("for", "hum", 1))),
    "judge": Frame("""admire praise blame trust defend protect forgive/forgave
                   criticize describe injure teach/taught deceive accuse respect
                   console comfort""",
                   {"hum": 1}, {"hum": 1, "REFL": 1}, (("in", "place", 1), ("at", "place", 1)), weight=2.5),
    "greet": Frame("""meet/met visit greet thank call kiss hug/hugged marry invite ignore
                   warn tease interview join""",
                   {"hum": 1}, {"hum": 1}, (("in", "place", 2), ("at", "place", 1))),
    "see": Frame("see/saw watch hear/heard notice follow spot/spotted observe",
                 {"hum": 2, "animal": 1}, {"hum": 2, "animal": 2, "thing": 1, "vehicle": 1, "plant": 1},
                 (("in", "place", 1), ("at", "place", 1))),
    "hunt": Frame("chase hunt bite/bit scratch attack catch/caught",
                  {"hum": 1, "animal": 3}, {"animal": 3, "hum": 1}, (("in", "place", 1),)),
    "tend": Frame("feed/fed pet/petted ride/rode tame bathe",
                  {"hum": 1}, {"animal": 1}, (("in", "place", 1), ("with", "hum", 1))),
    "go": Frame("leave/left enter explore guard approach reach cross search",
                {"hum": 1}, {"place": 1}, (("with", "hum", 2),)),
    "tell": Frame("tell/told write/wrote remember forget/forgot invent repeat explain recite",
                  {"hum": 1}, {"abstract": 1}, (("to", "hum", 3), ("for", "REFL", 2), ("for", "hum", 1))),
    "say": Frame("""say/said think/thought know/knew believe hope claim suspect
                 feel/felt imagine admit/admitted deny""",
                 {"hum": 1}, {"CLAUSE": 1}, weight=1.2),
    "drive": Frame("drive/drove steer board rent",
                   {"hum": 1}, {"vehicle": 1}, (("to", "place", 3), ("with", "hum", 1))),
    "garden": Frame("water plant prune trim/trimmed",
                    {"hum": 1}, {"plant": 1}, (("with", "tool", 1), ("in", "place", 2))),
    "depart": Frame("arrive depart stop/stopped crash return",
                    {"vehicle": 1}, None, (("at", "place", 2), ("in", "place", 1))),
    "grow": Frame("grow/grew bloom wilt wither sway",
                  {"plant": 1}, None, (("in", "place", 1),)),
    "affect": Frame("""surprise amuse worry scare please bore confuse annoy delight
                    shock inspire frighten""",
                    {"abstract": 1}, {"hum": 1}),
}

# What can modify a noun of each kind: (preposition, kind of its noun, weight).
NOUN_MODIFIERS = {
    "hum": (("from", "place", 3), ("near", "place", 1), ("near", "hum", 1), ("behind", "hum", 1),
            ("beside", "hum", 1), ("of", "hum", 1)),
    "animal": (("near", "place", 2), ("behind", "thing", 1), ("under", "thing", 1),
               ("beside", "animal", 1), ("of", "hum", 2), ("from", "place", 1)),
    "food": (("from", "place", 2), ("on", "thing", 1), ("near", "thing", 1), ("of", "hum", 1)),
    "utensil": (("on", "thing", 1), ("near", "food", 1), ("of", "hum", 1)),
    "tool": (("on", "thing", 1), ("near", "thing", 1), ("of", "hum", 1)),
    "thing": (("on", "thing", 1), ("under", "thing", 1), ("near", "thing", 1), ("of", "hum", 2),
              ("from", "place", 1), ("behind", "vehicle", 1)),
    "place": (("near", "place", 2), ("behind", "place", 1), ("of", "hum", 1)),
    "vehicle": (("of", "hum", 2), ("near", "place", 1), ("behind", "vehicle", 1)),
    "plant": (("near", "place", 2), ("behind", "thing", 1), ("beside", "plant", 1)),
    "abstract": (("about", "hum", 3), ("about", "animal", 1), ("about", "place", 1),
                 ("of", "hum", 1)),
}

# Construction probabilities: the knobs of the grammar.
P = {
    "singular": 0.6,        # a noun phrase is singular
    "past": 0.35,           # a clause is in the past tense
    "pronoun": 0.18,        # a person subject is he / she / they
    "name": 0.12,           # a singular person noun phrase is a name
    "adjective": 0.3,       # a noun has an adjective before it
    "colour": 0.1,          # ... a colour (for things)
    "modifier": (0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1),  # a noun phrase at depth d has a modifier
    "modifier_kind": {"pp": 0.55, "subject_rc": 0.25, "object_rc": 0.2},
    "adverb": 0.1,          # a verb has a frequency adverb before it
    "adjunct": 0.6,         # a main-clause verb takes a prepositional phrase
    "coordination": 0.35,   # the main clause has two verb phrases joined by "and"
    "time": 0.1,            # the sentence ends with a time adverb
    "subject_kind": {"hum": 0.56, "animal": 0.16, "abstract": 0.05, "vehicle": 0.04,
                     "plant": 0.04, "thing": 0.05, "food": 0.04, "place": 0.03,
                     "tool": 0.015, "utensil": 0.015},
    "zipf_exponent": 1.0,
}
MAX_DEPTH = len(P["modifier"])  # noun phrases at this depth take no modifier

NUMBERS = ("sg", "pl")
TENSES = ("pres", "past")
VOWELS = "aeiou"


# --------------------------------------------------------------------------
# Morphology and word lists
# --------------------------------------------------------------------------

def _split(words: str) -> list[str]:
    return words.split()


def plural(noun: str) -> str:
    """Regular English plural: box -> boxes, cherry -> cherries, cake -> cakes."""
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in VOWELS:
        return noun[:-1] + "ies"
    return noun + "s"


def third_singular(verb: str) -> str:
    """Present tense, third person singular: eat -> eats, watch -> watches."""
    if verb.endswith(("s", "x", "z", "ch", "sh", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2] not in VOWELS:
        return verb[:-1] + "ies"
    return verb + "s"


def past_tense(verb: str) -> str:
    """Regular past tense: walk -> walked, bake -> baked, cry -> cried."""
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2] not in VOWELS:
        return verb[:-1] + "ied"
    return verb + "ed"


def noun_forms(entry: str) -> tuple[str, str]:
    singular, _, irregular = entry.partition("/")
    return singular, irregular or plural(singular)


def verb_forms(entry: str) -> dict[str, str]:
    """{"base", "3sg", "past"} forms of a verb entry such as "eat/ate"."""
    base, _, irregular = entry.partition("/")
    return {"base": base, "3sg": third_singular(base), "past": irregular or past_tense(base)}


def zipf_weights(n: int, exponent: float) -> list[float]:
    """Weights proportional to 1 / rank^exponent (rank 1 = first in the list)."""
    return [1.0 / (rank ** exponent) for rank in range(1, n + 1)]


def kind_of(noun_class: str) -> str:
    """hum_m, hum_f (singular people) and hum (plural people) are all 'hum'."""
    return "hum" if noun_class.startswith("hum") else noun_class


def noun_classes(kind: str, number: str) -> list[str]:
    if kind != "hum":
        return [kind]
    return ["hum_m", "hum_f"] if number == "sg" else ["hum"]


# --------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    lhs: str
    rhs: tuple
    prob: float

    @property
    def logprob(self) -> float:
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


def build_rules(lexicon: "Lexicon", p: dict = P, max_depth: int = MAX_DEPTH) -> dict[str, list[Rule]]:
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
    """
    z = p["zipf_exponent"]
    rules = _RuleSet()
    sing = {"sg": p["singular"], "pl": 1 - p["singular"]}
    tense = {"pres": 1 - p["past"], "past": p["past"]}
    frames = lexicon.frames
    kinds = [k for k in p["subject_kind"] if k in lexicon.kinds]

    def variants(kind):
        """(number, class, probability) of a noun phrase of this kind."""
        out = []
        for n in NUMBERS:
            classes = [c for c in noun_classes(kind, n) if lexicon.nouns.get((n, c))]
            for c in classes:
                out.append((n, c, sing[n] / len(classes)))
        return out

    def frame_weights(kind, allow=lambda f: True):
        """P(frame | subject kind), restricted to the frames that `allow`."""
        weights = {name: f.weight * f.subjects[kind] / sum(f.subjects.values())
                   for name, f in frames.items() if kind in f.subjects and allow(f)}
        total = sum(weights.values())
        return {name: w / total for name, w in weights.items()} if total else {}

    def complements(frame_name, n, c, d):
        """(right-hand side after the verb, weight) for a verb of this frame."""
        f = frames[frame_name]
        if f.objects is None:
            return [((), 1.0)]
        if "ADJ" in f.objects:
            return [((f"ADJ.{ADJECTIVE_KIND[kind_of(c)]}",), 1.0)]
        if "CLAUSE" in f.objects:
            return [(("that", f"CLAUSE.{d + 1}"), 1.0)] if d + 1 <= max_depth else []
        total = sum(f.objects.values())
        out = []
        for k, w in f.objects.items():
            if k == "REFL":
                if kind_of(c) == "hum":
                    out.append(((f"REFL.{n}.{c}",), w / total))
            else:
                out.append(((f"NPK.{k}.{d}",), w / total))
        return out

    def verb(frame_name, n, t):
        return "COP" + f".{n}.{t}" if frame_name == "be" else f"V.{frame_name}.{n}.{t}"

    def optional_adverb(lhs, rest, weight=1.0):
        adverb = 0.0 if rest[0].startswith("COP") else p["adverb"]  # not "often is"
        rules.add(lhs, ("ADV",) + rest, weight * adverb)
        rules.add(lhs, rest, weight * (1 - adverb))

    subject_classes = [(n, c, p["subject_kind"][k] * w) for k in kinds for n, c, w in variants(k)]

    # Sentence and main clause.
    for n, c, w in subject_classes:
        rules.add("S", (f"SUBJ.{n}.{c}.0", f"PRED.{n}.{c}"), w)
        for t in TENSES:
            rules.add(f"PRED.{n}.{c}", (f"VPM.{n}.{c}.{t}",), tense[t] * (1 - p["time"]))
            rules.add(f"PRED.{n}.{c}", (f"VPM.{n}.{c}.{t}", f"TIME.{t}"), tense[t] * p["time"])
            say = frame_weights(kind_of(c)).get("say", 0.0)
            vpa = f"VPA.{n}.{c}.{t}"
            rules.add(f"VPM.{n}.{c}.{t}", (f"VE.{n}.{c}.{t}.0.say",), say)
            rules.add(f"VPM.{n}.{c}.{t}", (vpa,), (1 - say) * (1 - p["coordination"]))
            rules.add(f"VPM.{n}.{c}.{t}", (vpa, "and", vpa), (1 - say) * p["coordination"])
            # A main-clause verb phrase: verb, complement, maybe one adjunct PP.
            for name, fw in frame_weights(kind_of(c), lambda f: f.objects != {"CLAUSE": 1}).items():
                adjuncts = [(prep, k, aw) for prep, k, aw in frames[name].adjuncts
                            if k != "REFL" or kind_of(c) == "hum"]
                total = sum(aw for _, _, aw in adjuncts)
                for rhs, cw in complements(name, n, c, 0):
                    head = (verb(name, n, t),) + rhs
                    optional_adverb(vpa, head, fw * cw * (1 - p["adjunct"] if adjuncts else 1.0))
                    for prep, k, aw in adjuncts:
                        tail = (prep, f"REFL.{n}.{c}") if k == "REFL" else (prep, f"NPK.{k}.0")
                        optional_adverb(vpa, head + tail, fw * cw * p["adjunct"] * aw / total)

    # Embedded clauses and verb phrases inside them (no adjuncts, no "and").
    for d in range(max_depth + 1):
        for n, c, w in subject_classes:
            for t in TENSES:
                rules.add(f"CLAUSE.{d}", (f"SUBJ.{n}.{c}.{d}", f"VE.{n}.{c}.{t}.{d}"), w * tense[t])
        for k in lexicon.kinds:
            for n, c, w in variants(k):
                for t in TENSES:
                    ve = f"VE.{n}.{c}.{t}.{d}"
                    for name, fw in frame_weights(k).items():
                        for rhs, cw in complements(name, n, c, d):
                            optional_adverb(ve, (verb(name, n, t),) + rhs, fw * cw)
                            if name == "say":
                                optional_adverb(ve + ".say", (verb(name, n, t),) + rhs, 1.0)

    # Subjects and noun phrases.
    for d in range(max_depth + 1):
        for k in lexicon.kinds:
            for n, c, w in variants(k):
                rules.add(f"NPK.{k}.{d}", (f"NP.{n}.{c}.{d}",), w)
                subj, np_ = f"SUBJ.{n}.{c}.{d}", f"NP.{n}.{c}.{d}"
                pron = p["pronoun"] if (n, c) in PRONOUNS else 0.0
                rules.add(subj, (f"PRON.{n}.{c}",), pron)
                rules.add(subj, (np_,), 1 - pron)
                name = p["name"] if lexicon.names.get(c) and n == "sg" else 0.0
                rules.add(np_, (f"NAME.{c}",), name)
                body = (f"DET.{n}", f"ADJS.{k}", f"N.{n}.{c}")
                if d < max_depth:
                    rules.add(np_, body + (f"MOD.{n}.{c}.{d}",), 1 - name)
                    mod = f"MOD.{n}.{c}.{d}"
                    pm, kinds_of_mod = p["modifier"][d], p["modifier_kind"]
                    rules.add(mod, (), 1 - pm)
                    rules.add(mod, (f"PP.{k}.{d + 1}",), pm * kinds_of_mod["pp"])
                    rules.add(mod, (f"RCS.{n}.{c}.{d + 1}",), pm * kinds_of_mod["subject_rc"])
                    rules.add(mod, (f"RCO.{n}.{c}.{d + 1}",), pm * kinds_of_mod["object_rc"])
                else:
                    rules.add(np_, body, 1 - name)
            for prep, k2, w in NOUN_MODIFIERS[k]:
                rules.add(f"PP.{k}.{d}", (prep, f"NPK.{k2}.{d}"), w)
            # Relative clauses on a noun of class c.
            for n, c, _ in variants(k):
                rel = "who" if k == "hum" else "which"
                for t in TENSES:
                    rules.add(f"RCS.{n}.{c}.{d}", (rel, f"VE.{n}.{c}.{t}.{d}"), tense[t])
                # Object gap: "the cake which the boy eats": the verb's object is the head noun.
                for n2, c2, w2 in subject_classes:
                    for name, fw in frame_weights(kind_of(c2)).items():
                        objects = frames[name].objects or {}
                        if k in objects:
                            share = objects[k] / sum(objects.values())
                            for t in TENSES:
                                rules.add(f"RCO.{n}.{c}.{d}",
                                          (rel, f"SUBJ.{n2}.{c2}.{d}", f"VG.{n2}.{c2}.{k}.{t}"),
                                          w2 * fw * share * tense[t])

    # The verb of an object-gap relative clause, given its subject and object kind.
    for n2, c2, _ in subject_classes:
        for name, fw in frame_weights(kind_of(c2)).items():
            objects = frames[name].objects or {}
            for k in objects:
                if k in lexicon.kinds:
                    for t in TENSES:
                        optional_adverb(f"VG.{n2}.{c2}.{k}.{t}", (verb(name, n2, t),),
                                        fw * objects[k] / sum(objects.values()))

    # Preterminals: the words.
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
    for k in lexicon.kinds:
        adj = f"ADJ.{ADJECTIVE_KIND[k]}"
        rules.add(f"ADJS.{k}", (), 1 - p["adjective"] - (p["colour"] if k in HAS_COLOUR else 0))
        rules.add(f"ADJS.{k}", (adj,), p["adjective"] * (0.7 if k in HAS_COLOUR else 1.0))
        if k in HAS_COLOUR:
            rules.add(f"ADJS.{k}", ("COLOUR",), p["colour"])
            rules.add(f"ADJS.{k}", (adj, "COLOUR"), p["adjective"] * 0.3)
    return _finish(rules.weights, "S")


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


class Lexicon:
    """The word lists, checked so that every word has a single category."""

    def __init__(self, nouns=NOUNS, names=NAMES, adjectives=ADJECTIVES, frames=FRAMES,
                 words_per_list: int | None = None):
        cut = (lambda xs: xs[:words_per_list]) if words_per_list else (lambda xs: xs)
        self.frames = {}
        self.verbs = {}
        for name, frame in frames.items():
            entries = cut(_split(frame.verbs))
            if entries:
                self.frames[name] = frame
                self.verbs[name] = [verb_forms(e) for e in entries] if name != "be" else []
        self.nouns = {}
        for c, entries in nouns.items():
            pairs = [noun_forms(e) for e in cut(_split(entries))]
            if not pairs:
                continue
            self.nouns[("sg", c)] = [s for s, _ in pairs]
            if kind_of(c) != "hum":
                self.nouns[("pl", c)] = [pl for _, pl in pairs]
        # Plural people ("they" ... themselves): men and women interleaved by rank.
        men = [noun_forms(e)[1] for e in cut(_split(nouns.get("hum_m", "")))]
        women = [noun_forms(e)[1] for e in cut(_split(nouns.get("hum_f", "")))]
        if men or women:
            self.nouns[("pl", "hum")] = [w for pair in zip(men, women) for w in pair] + \
                men[len(women):] + women[len(men):]
        self.names = {c: cut(_split(w)) for c, w in names.items() if cut(_split(w))}
        self.adjectives = {k: cut(_split(w)) for k, w in adjectives.items()}
        self.determiners = {n: cut(_split(w)) for n, w in DETERMINERS.items()}
        self.colours, self.adverbs = cut(_split(COLOURS)), cut(_split(ADVERBS))
        self.time_words = {t: cut(_split(w)) for t, w in TIME_WORDS.items()}
        self.kinds = sorted({kind_of(c) for _, c in self.nouns})
        self.check()

    def categories(self) -> dict[str, set[str]]:
        """word -> the lexical categories it belongs to."""
        cats: dict[str, set[str]] = {}

        def put(words, cat):
            for w in words:
                cats.setdefault(w, set()).add(cat)
        for (n, c), words in self.nouns.items():
            put(words, f"noun.{n}")
        for words in self.names.values():
            put(words, "name")
        for name, forms in self.verbs.items():
            for f in forms:
                put({f["base"], f["3sg"]}, "verb.present")
                put([f["past"]], "verb.past")
        for words in self.adjectives.values():
            put(words, "adjective")
        put(self.colours, "colour")
        put(self.adverbs, "adverb")
        for words in self.time_words.values():
            put(words, "time")
        for words in self.determiners.values():
            put(words, "determiner")
        put(PRONOUNS.values(), "pronoun")
        put(REFLEXIVES.values(), "reflexive")
        put(COPULA.values(), "copula")
        put(["who", "which", "that", "and"], "function")
        for table in list(NOUN_MODIFIERS.values()) + [f.adjuncts for f in FRAMES.values()]:
            put([prep for prep, _, _ in table], "preposition")
        return cats

    def check(self):
        clashes = {w: sorted(c) for w, c in self.categories().items() if len(c) > 1}
        if clashes:
            raise ValueError(f"words in more than one category make the grammar ambiguous: {clashes}; "
                             "remove or rename them in the word lists")
        for name, forms in self.verbs.items():
            for f in forms:
                if len({f["base"], f["3sg"], f["past"]}) < 3:
                    raise ValueError(f"verb {f} has two equal forms; tense would be ambiguous")
        adjuncts = {prep for f in FRAMES.values() for prep, _, _ in f.adjuncts}
        modifiers = {prep for table in NOUN_MODIFIERS.values() for prep, _, _ in table}
        if adjuncts & modifiers:
            raise ValueError(f"prepositions used both for verbs and nouns: {adjuncts & modifiers}")


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
        self._cumulative = {}
        for lhs, rules in self.rules.items():
            running, cum = 0.0, []
            for rule in rules:
                running += rule.prob
                cum.append(running)
            self._cumulative[lhs] = cum
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
        while stack:
            symbol = stack.pop()
            rules = self.rules.get(symbol)
            if rules is None:
                words.append(symbol)
                continue
            cum = self._cumulative[symbol]
            i = min(bisect.bisect_right(cum, rng.random() * cum[-1]), len(rules) - 1)
            used.append(rules[i])
            stack.extend(reversed(rules[i].rhs))
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
            for entry in _split(NOUNS[c]):
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
