"""The course grammar's data: its words, verb frames, noun modifiers and construction probabilities.

Everything the grammar can say is in the tables below (:mod:`course.grammar_rules` turns them into
weighted rules, :mod:`course.grammar` samples and parses with those rules). :class:`Lexicon` reads
the word lists, with their regular morphology (plurals, third person singular, past tense) and
irregular forms, and checks that every word has a single category, which keeps the grammar
unambiguous (see :mod:`course.grammar`). :func:`tiny_grammar <course.grammar.tiny_grammar>` builds
the same grammar on a cut of these lists.
"""

from __future__ import annotations

from dataclasses import dataclass

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
