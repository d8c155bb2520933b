#!/usr/bin/env python3
"""Build Sluice's word lists from the vendored third-party sources.

Usage (from the repository root):

    python3 Wordlists/build.py [SOURCES_DIR] [--dict /usr/share/dict/words]
                               [--out Wordlists] [--report FILE] [--check]

SOURCES_DIR defaults to ../shared/fixtures/wordlist-sources relative to the
repository root and must contain surge-ai/, dsojevic/ and ldnoobw/.
The English compound analysis needs Debian's `wamerican` word list
(/usr/share/dict/words); the build fails without it so the output never
silently changes.

Only the Python standard library is used, and the output is deterministic:
running the script twice gives byte-identical files.  `--check` rebuilds
into memory and exits 1 if any file on disk differs (for CI).

Output (see Wordlists/README.md for the format):
  Wordlists/en.tsv, Wordlists/{lang}.tsv      term<TAB>severity<TAB>category<TAB>match
  Wordlists/allowlist-en.txt                  one innocent word/phrase per line
  the generated section of Wordlists/README.md (removed terms, counts)
The compound report is printed to stdout (or written to --report).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import unicodedata
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

SEVERITIES = ["mild", "strong", "severe", "slur"]
SEV_RANK = {s: i for i, s in enumerate(SEVERITIES)}
CATEGORIES = {"sexual", "insult", "slur", "shock", "drugs", "religious",
              "violence", "bodily", "other"}

# --------------------------------------------------------------------------
# Normal form (the Swift matcher must apply the same steps to input text)
# --------------------------------------------------------------------------
APOSTROPHES = "'’ʼ‘`´"
HYPHENS = "-‐‑‒–—・"   # ・ (katakana middle dot) separates words in Japanese


def fold(text: str) -> str:
    """NFKC, case fold, remove nonspacing marks (diacritics), NFC."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = unicodedata.normalize("NFD", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    return unicodedata.normalize("NFC", text)


CLITIC_RE = re.compile("[" + APOSTROPHES + r"](?:s|ll|re|ve|d|m|t)(?![^\W\d_])")


def strip_apostrophes(text: str) -> str:
    """Drop English clitics ("he'll" -> "he", "dog's" -> "dog", "don't" -> "don"), then
    delete the remaining apostrophes ("bitchin'" -> "bitchin", "mf'er" -> "mfer").
    Joining "he'll" would give "hell" and "who're" "whore"."""
    text = CLITIC_RE.sub("", text)
    for a in APOSTROPHES:
        text = text.replace(a, "")
    return text


def is_letter(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat.startswith("L") or cat in ("Mc", "Me")


# Single characters kept although shorter than the minimum: unambiguous
# Chinese (Cantonese) vulgar characters that are not parts of innocent words.
SHORT_OK = set("屄屌肏𨳒㞗𨳊𡳞𨶙𨳍閪")


def min_letters(text: str) -> int:
    """3 letters for Latin, Greek and Cyrillic; 2 for every other script (ideographs,
    kana, Hangul, Thai, Arabic, Devanagari...), where two characters make a word."""
    for ch in text:
        if ch == " ":
            continue
        name = unicodedata.name(ch, "")
        if not name.startswith(("LATIN", "GREEK", "CYRILLIC")):
            return 2
    return 3


def variants(raw: str) -> tuple[list[str], str | None]:
    """Normalised forms of one source entry.

    Returns (forms, rejected_reason).  Apostrophes are removed; a hyphenated
    entry yields the joined form and the spaced form; anything else that is
    not a letter or a space (digits, @, $, _, ., !, +, *) marks a spelling
    evasion, which the matcher handles itself: the entry is rejected.
    """
    text = strip_apostrophes(fold(raw).strip())
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        return [], "empty"
    hyph = any(h in text for h in HYPHENS)
    joined, spaced = text, text
    for h in HYPHENS:
        joined = joined.replace(h, "")
        spaced = spaced.replace(h, " ")
    joined = re.sub(r"\s+", " ", joined).strip()
    spaced = re.sub(r"\s+", " ", spaced).strip()
    bad = [ch for ch in joined if not (is_letter(ch) or ch == " ")]
    if bad:
        if all(ch.isdigit() for ch in joined.replace(" ", "")):
            return [], "digits only"
        return [], "non-letter characters (evasion spelling): " + "".join(sorted(set(bad)))
    if sum(1 for ch in joined if ch != " ") < min_letters(joined) and joined not in SHORT_OK:
        return [], "too short"
    forms = [joined]
    if hyph and spaced != joined:
        forms.append(spaced)
    return forms, None


LEET = str.maketrans({"@": "a", "4": "a", "0": "o", "1": "i", "!": "i", "3": "e",
                      "5": "s", "$": "s", "7": "t", "+": "t", "8": "b", "9": "g"})


def deleet(raw: str) -> str:
    t = strip_apostrophes(fold(raw))
    for a in "_.*/":
        t = t.replace(a, "")
    for h in HYPHENS:
        t = t.replace(h, "")
    return re.sub(r"\s+", " ", t.translate(LEET)).strip()


# --------------------------------------------------------------------------
# Curation (English).  Everything below was reviewed by hand; see README.
# --------------------------------------------------------------------------

# Entries removed from the English list, with the reason (written to README).
REMOVED_EN: dict[str, str] = {}


def _remove(reason: str, words: str) -> None:
    for w in words.split(","):
        w = w.strip()
        if w:
            REMOVED_EN[w] = reason


_remove("innocent homograph: the primary meaning in user posts is innocent", """
    abbie, bater, bates, bender, bone, booty, bung hole, bunghole, buttermilk, cack,
    cajones, cherry, coot, coot coot, cooties, cornhole, crow, crows, dix, dong, finger, fisted,
    forked, greaser, hoar, hooker, hooters, hump, humping, hustler, jigger, jiggs, kinky,
    knickers, knob, mong, mongrel, muff, nicker, nip, nob, nobs, nuggets, pansy, pecker, peen, peter,
    poof, puss, pusses, sack, sausage, scat, scut, sheet, skeet, slag, slit, snatch, spook,
    spooks, spunk, suck, sucks, swine, tart, tit, tramp, wang, weenie, weiner, willy, beaver,
    screw, balls, shag, butt, escort, swinger, smut, dipstick, diddle, dolt, scummy, nonce,
    fick, fuku, fugger, bbw, cumming, rimming, pegging, shrimping, snowballing, scissoring, collaring,
    collared, fingering, fingered, domination, topless, panties, panty, intercourse, lovemaking,
    threesome, vibrator, bareback, bondage, sadism, voyeur, voyuer, tushy, spanking, ramrod,
    nut butter, sperm, crotch, sphincter, breasts, breast, undressing, erotic, erotism, sexy,
    sexual, sexually, sexuality, eunuch, fecal, xx, xxx, nsfw, sexo, busty, bimbos, twinkie,
    grope, groper, hickory switch, jelly donut, baby juice, ball kicking, girl on top, girl on,
    barely legal, alaskan pipeline, wrapping men, leather restraint, leather straight jacket,
    missionary position, menage a trois, menages a trois, pleasure chest, rosy palm, violet wand,
    hard core, hardcore, big black, hot chick, huge fat, tied up, tight white, tongue in a,
    taste my, spread legs, sultry women, make me come, blonde action, brunette action,
    blonde on blonde action, girls gone wild, strip club, hot richard, boston george,
    spicy gringo, jerk mate, gym bunny, brownie king, brownie queen, potato queen,
    muscle mary, grey queen, gray queen, strap on, wet back, cream pie, deep throat, dog style,
    buddha head, tea bagged, tea bagging, white power, china man, china men, only fans,
    eye tie, sixty nine, sixtynine, loose woman, pussy cat, frolic me, frolicme, go kun, j offs,
    suck my d, switch hitter, bastinado, strappado, bellesa, dipsea, santorum, octopussy,
    playboy, suicide girls, nsfw images, tainted love, how to kill, how to murder, jim crow,
    shylock, sheister, shiester, klan, kkk, swastika, svastika, suastika, neonazi, neo nazi,
    haji, hajji, hadji, molester, transvestite, barenaked, bbc, bwc, cialis, viagra,
    fellatio aficionado, hermie, cissy, cissie, leso, flamer, flamers, sob, fed, fer""")
_remove("identity term, not a slur", """
    enby, cishet, bicon, transbian, gaysian, queer, queers, twink, gayest, gayness,
    homoerotic, yaoi""")
_remove("clinical name of a harmless paraphilia (not profanity)", """
    acrotomophilia, acrotomophile, algophilia, algophile, apotemnophilia, apotemnophile,
    cholerophilia, cholerophile, claustrophilia, claustrophile, coimetrophilia,
    coimetrophile, coprophilia, coprophile, coprolagnia, dendrophilia, dendrophile,
    dishabiliophilia, dishabiliophile, dystychiphilia, dystychiphile, emetophilia, emetophile,
    gerontophilia, gerontophile, hippophilia, hippophile, kynophilia, kynophile, menophilia,
    menophile, parthenophilia, parthenophile, phagophilia, phagophile, pnigerophilia,
    pnigophilia, pnigerophile, pnigophile, poinephilia, poinephile, proctophilia,
    proctophile, rhabdophilia, rhabdophile, rhypophilia, rhypophile, scatophilia, scatophile,
    seplophilia, seplophile, taphephilia, taphephile, thanatophilia, thanatophile,
    traumatophilia, traumatophile, urophilia, urophile, vorarephilia, vorarephile,
    xyrophilia, xyrophile""")
_remove("innocent homograph: the primary meaning in user posts is innocent", """
    gokun, menageatrois, menagesatrois, ballkicking, gymbunny, joffs, lolita""")
_remove("Italian for fennel (finocchio); flagged in recipes", "finocchio, finochio, finoccio")
_remove("religious name, innocent in most posts", "jesus, christ, jesus christ")
_remove("pony play terms collide with innocent words (The Outsiders' Ponyboy, pony girl)",
        "ponyboy, pony boy, ponygirl, pony girl, ponyplay, pony play")

# Entries added by hand: the plain spelling of a source entry that was only
# present in a spelling-evasion form.  term -> (severity, category)
ADD_EN = {
    "oral sex": ("mild", "sexual"),
}

# Dictionary words that are themselves profane although not list entries: they
# do not block a root from being `compound` and are not allowlisted.
DICT_PROFANE_EN = set("""
    sluttish whorehouse whorehouses pornographer pornographers
""".split())

# Clinical and anatomical vocabulary: sexual, but not profanity. Kept out of en.tsv (so a health forum or a
# biology class is not marked) and written to en-clinical.tsv, which an app adds to text.languages when it
# wants them marked or blocked.
CLINICAL_EN = set("""
    anus penis vagina vulva rectum clitoris genitals genital nipple nipples semen pubes orgasm orgasms orgasmic
    ejaculate ejaculation ejaculating ejaculated masturbate masturbation masturbating masterbate cunnilingus
    anilingus fellatio fellating sodomy sodomize sodomise sodomist nude nudity incest sex bestiality
    necrophilia nymphomania nymphomaniac nympho tribadism venus mound mound of venus erection
""".split()) | {"venus mound", "mound of venus"}

# Severity overrides (after the source mapping; "higher wins" is not applied).
SEVERITY_OVERRIDE = {
    # borderline words kept but only marked
    "anal": "mild", "sex": "mild", "hoe": "mild", "hoes": "mild", "sissy": "mild",
    "prick": "mild", "pricks": "mild", "horny": "mild", "bdsm": "mild",
    "crap": "mild", "damn": "mild", "hell": "mild", "bloody": "mild", "bugger": "mild",
    "bugger off": "mild", "pissed off": "mild", "piss off": "mild", "pissing": "mild",
    "boner": "mild", "orgy": "mild", "booty call": "mild", "wet dream": "mild",
    "gay sex": "mild", "group sex": "mild", "phone sex": "mild",
    # clinical / anatomical vocabulary: allowed but marked
    "anus": "mild", "penis": "mild", "vagina": "mild", "vulva": "mild", "rectum": "mild",
    "clitoris": "mild", "genitals": "mild", "nipple": "mild", "nipples": "mild",
    "semen": "mild", "pubes": "mild", "orgasm": "mild", "orgasms": "mild",
    "orgasmic": "mild", "ejaculate": "mild", "ejaculation": "mild", "ejaculating": "mild",
    "ejaculated": "mild", "masturbate": "mild", "masturbation": "mild",
    "masturbating": "mild", "masterbate": "mild", "cunnilingus": "mild", "anilingus": "mild",
    "fellatio": "mild", "fellating": "mild", "sodomy": "mild", "sodomize": "mild",
    "sodomise": "mild", "sodomist": "mild", "dominatrix": "mild", "domme": "mild",
    "dommes": "mild", "venus mound": "mild", "mound of venus": "mild", "porn": "strong",
    "nude": "mild", "nudity": "mild", "incest": "strong", "onlyfans": "mild",
    "tribadism": "mild", "prince albert piercing": "mild", "shibari": "mild",
    "kinbaku": "mild", "hentai": "mild", "ecchi": "mild", "camgirl": "mild",
    # dsojevic's default "3" is too high for these
    "jap": "slur", "kraut": "strong", "krauts": "strong", "wog": "slur", "wogs": "slur",
    "futanari": "strong",
    # a slur by origin, but "gyp" (to cheat) is mostly used without that intent
    "gyp": "strong",
}

CATEGORY_OVERRIDE = {
    "rape": "violence", "raping": "violence", "rapist": "violence", "date rape": "violence",
    "daterape": "violence", "goregasm": "shock", "china virus": "other", "chinavirus": "other",
    "chinese virus": "other", "kid diddler": "sexual", "pedo": "sexual", "pedos": "sexual",
    "pedobear": "sexual", "pedobears": "sexual", "incest": "sexual",
}

# Token-level roots that make an orientation/gender or disability insult a slur.
SLUR_ROOT_RE = re.compile(
    r"(^|\s)(fag|phag|faggot|fagot|faget|feg|dyke|bulldyke|trann|shemale|shmale|she male|"
    r"ladyboy|ladboy|ladiboy|lady boy|homo|lesbo|lezz|batty ?bo|buft|poofter|fudge ?pack|"
    r"packing ?fudge|retard|tard\b|spastic|mongoloid|gaylord|gaytard|queerass|"
    r"carpet ?munch|pillow biter|butt pirate|bum boy|bumboy|butt boy|buttboy|"
    r"mecha fag|mega fag|cuntboy|dickgirl)"
)

# English terms that the dictionary analysis would allow as `compound` but that
# stay whole-word after review (names, foreign words, frequent substrings of
# usernames/URLs, clinical vocabulary).
FORCE_WORD_EN = set("""
    anus penis vagina vulva rectum semen pubes nipple nipples orgasm genitals clitoris
    bugger bloody damn hell crap prick pricks sissy horny porno porns pornos boner
    negro negroes jigga jiggas nigs nicka nickas kyke heeb dago paki pakis gook gooks wogs
    honky honkey honkies honkeys pikey pikeys injun coolie cholo spik spig spix
    feck fack fook fugger fugged cooter caca doosh douche shat shet shite shites shitey
    tosser twink wigga vag knobe knobed knobes knobd knober peener
    booty tits boob boobs queef queaf quim dong futanari shota homos
    mofo mofos phuk phuks phuq phuqs fuks fukk
    kike kikes kunt kunts coon coons coonie spook cums cumz
    blacky chink chinks chinky spick spicks sambo darkie darkies darky darkey hymie
    nigers nigre spastic retarded ecchi domme dommes focker gaylord gaylords wigger
    nikker nikkas biches tgirl niglet
""".split())

# Roots reviewed by hand that are `compound`; the innocent dictionary words that
# contain them go to the allowlist.  (Terms of 4 letters need to be here to be
# compound at all; longer terms become compound automatically when safe.)
COMPOUND_ROOTS_EN = set("""
    fuck cunt shit bitch whore slut nigger nigga faggot wank twat wanker
    arsehole asshole dickhead cocksucker motherfucker bollocks bullshit
    jizz fagot porn pussy fvck fxck xnxx
""".split())

# Innocent phrases / words that contain or resemble listed terms.
ALLOWLIST_EN_BASE = """
scunthorpe
blue tit
blue tits
great tit
great tits
coal tit
coal tits
marsh tit
willow tit
crested tit
long tailed tit
long tailed tits
tit for tat
titmouse
cock crowed
cock crows
cock crowing
cock a doodle doo
dick whittington
spotted dick
assassin
assassins
assassinate
assassinated
assassination
class
classic
classical
classes
cocktail
cocktails
cockpit
cockpits
cockburn
cockerel
cockroach
cockatoo
peacock
hancock
woodcock
shuttlecock
hitchcock
babcock
therapist
therapists
dick van dyke
van dyke
moby dick
philip k dick
dick tracy
dick cheney
dick smith
dickens
charles dickens
essex
sussex
middlesex
wessex
shitake
shiitake
cucumber
title
titled
titles
analysis
analyst
analysts
analytic
analytics
grape
grapes
drape
skyscraper
scraper
penistone
arsenal
arsenic
bass
glass
grass
pass
massachusetts
assume
assignment
scrapbook
butterscotch
document
documents
manuscript
manuscripts
sextant
sextet
sexton
cum laude
magna cum laude
summa cum laude
homo sapiens
homo erectus
homo habilis
homo neanderthalensis
spick and span
maine coon
coon hound
coonhound
coon dog
raccoon
tycoon
cocoon
chink in the armor
chink in the armour
chink in his armor
chink in her armor
chink in their armor
chink in its armor
chink in his armour
chink in her armour
chink in their armour
chink in its armour
chink of light
oilseed rape
rapeseed
rape seed
niger
nigeria
nigerian
nigerien
niger river
rio negro
montenegro
negroni
snigger
sniggering
fag end
fag ends
cock a doodle doo
hell's kitchen
pussy willow
pussy willows
octopussy
redskin potato
redskin potatoes
offa's dyke
meltwater
meltwaters
nightwatch
nightwatchman
nightwatchmen
lightwater
hotwater
sweetwater
wankhede
pushit
crushit
smashit
finishit
washit
matsushita
yamashita
kinoshita
takeshita
morishita
ashita
shittim
bitche
slutsk
slutsky
sniglet
sniglets
honky tonk
honky tonks
honkytonk
honkytonks
honkey tonk
honkey tonks
shitterton
shell
hello
""".split("\n")


# --------------------------------------------------------------------------
# Source loading
# --------------------------------------------------------------------------
SURGE_SEV = {"Mild": "mild", "Strong": "strong", "Severe": "severe"}
SURGE_CAT = {
    "sexual anatomy / sexual acts": "sexual",
    "bodily fluids / excrement": "bodily",
    "sexual orientation / gender": "insult",
    "racial / ethnic slurs": "slur",
    "mental disability": "insult",
    "physical disability": "insult",
    "physical attributes": "insult",
    "animal references": "insult",
    "religious offense": "religious",
    "other / general insult": "insult",
    "political": "other",
}
DSOJEVIC_SEV = {1: "mild", 2: "strong", 3: "strong", 4: "severe"}
DSOJEVIC_CAT = {"sexual": "sexual", "lgbtq": "insult", "racial": "slur", "general": "insult",
                "shock": "shock", "religious": "religious"}


class Entry:
    __slots__ = ("sevs", "cats", "sources", "racial")

    def __init__(self):
        self.sevs: set[str] = set()
        self.cats: list[tuple[int, str]] = []
        self.sources: set[str] = set()
        self.racial = False


def load_english(src: str, rejected: list) -> dict[str, Entry]:
    entries: dict[str, Entry] = defaultdict(Entry)

    def add(raw, source, prio, sev, cat, racial):
        forms, why = variants(raw)
        if why:
            rejected.append((source, raw, why))
            return
        for f in forms:
            e = entries[f]
            if sev:
                e.sevs.add(sev)
            if cat:
                e.cats.append((prio, cat))
            e.sources.add(source)
            e.racial = e.racial or racial

    with open(os.path.join(src, "surge-ai", "profanity_en.csv"), encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            cat1 = row["category_1"]
            add(row["text"], "surge-ai", 0, SURGE_SEV[row["severity_description"]],
                SURGE_CAT[cat1], cat1 == "racial / ethnic slurs")

    with open(os.path.join(src, "dsojevic", "en.json"), encoding="utf-8") as fh:
        for item in json.load(fh):
            tags = item.get("tags") or []
            cat = DSOJEVIC_CAT.get(tags[0], "other") if tags else None
            for m in item["match"].split("|"):
                # "*" means "previous character may repeat": keep the base spelling
                add(m.replace("*", ""), "dsojevic", 1, DSOJEVIC_SEV[item["severity"]], cat,
                    "racial" in tags)

    with open(os.path.join(src, "ldnoobw", "en"), encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                add(line, "ldnoobw", 2, None, None, False)
    return entries


def heuristic_category(term: str) -> str:
    if re.search(r"rape|raping|murder|kill", term):
        return "violence"
    if re.search(r"shit|poop|piss|scat|fecal|jizz|splooge|spooge|cum", term):
        return "bodily"
    return "sexual"


def finalize_english(entries: dict[str, Entry]) -> dict[str, list[str]]:
    """term -> [severity, category]"""
    out = {}
    for term, e in entries.items():
        if term in REMOVED_EN:
            continue
        sev = max(e.sevs, key=SEV_RANK.get) if e.sevs else "strong"
        slurish = e.racial or bool(SLUR_ROOT_RE.search(term))
        if slurish and SEV_RANK[sev] >= SEV_RANK["strong"]:
            sev = "slur"
        if slurish:
            cat = "slur"
        elif e.cats:
            cat = sorted(e.cats)[0][1]
        else:
            cat = heuristic_category(term)
        sev = SEVERITY_OVERRIDE.get(term, sev)
        cat = CATEGORY_OVERRIDE.get(term, cat)
        assert sev in SEV_RANK and cat in CATEGORIES, (term, sev, cat)
        out[term] = [sev, cat]
    for term, (sev, cat) in ADD_EN.items():
        out.setdefault(term, [sev, cat])
    return out


def load_other_languages(src: str, rejected: list) -> dict[str, list[str]]:
    langs = {}
    base = os.path.join(src, "ldnoobw")
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        if name == "en" or not os.path.isfile(path) or "." in name or name.isupper() \
                or name in ("LICENSE", "README", "USERS"):
            continue
        terms = set()
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                forms, why = variants(line)
                if why:
                    rejected.append(("ldnoobw/" + name, line, why))
                terms.update(forms)
        langs[name] = sorted(terms)
    return langs


# --------------------------------------------------------------------------
# Compound analysis (English)
# --------------------------------------------------------------------------
INFLECTIONS = ("s", "es", "ed", "er", "ers", "ing", "in", "y", "ier", "iest", "ies", "ings")


def load_dictionary(path: str) -> list[str]:
    words = set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            w = strip_apostrophes(fold(line.strip()))
            if w and re.fullmatch(r"[a-z]+", w):
                words.add(w)
    return sorted(words)


def is_profane_word(w: str, terms: dict) -> bool:
    """A dictionary word that is a list entry or an inflection of one."""
    if w in terms or w in DICT_PROFANE_EN:
        return True
    for suf in INFLECTIONS + ("d",):
        if not w.endswith(suf):
            continue
        stem = w[: -len(suf)]
        if stem in terms or stem + "e" in terms:
            return True
        if len(stem) > 2 and stem[-1] == stem[-2] and stem[:-1] in terms:   # bullshitted
            return True
    return False


def compound_analysis(terms: dict, dict_words: list[str], base_allow: set[str]):
    """Decide `word`/`compound` per English term.

    Returns (match: term->str, extra_allow: set, report_lines: list[str]).
    """
    import bisect
    blob = "\n" + "\n".join(dict_words) + "\n"
    starts = []
    pos = 1
    for w in dict_words:
        starts.append(pos)
        pos += len(w) + 1

    def hits_of(t):
        found = set()
        i = blob.find(t)
        while i != -1:
            k = bisect.bisect_right(starts, i) - 1
            found.add(dict_words[k])
            i = blob.find(t, i + 1)
        return sorted(found)

    match, extra_allow, rep = {}, set(), []
    compound, forced, unsafe, short4 = [], [], [], []
    for t in sorted(terms):
        if " " in t or len(t) < 4:
            match[t] = "word"
            continue
        hits = hits_of(t)
        innocent = [w for w in hits if not is_profane_word(w, terms) and w not in base_allow]
        if t in FORCE_WORD_EN:
            match[t] = "word"
            forced.append((t, innocent))
        elif innocent and t in COMPOUND_ROOTS_EN:
            match[t] = "compound"
            extra_allow.update(innocent)
            compound.append((t, innocent))
        elif innocent:
            match[t] = "word"
            unsafe.append((t, innocent))
        elif len(t) == 4 and t not in COMPOUND_ROOTS_EN:
            match[t] = "word"
            short4.append(t)
        else:
            match[t] = "compound"
            compound.append((t, []))

    rep.append("== compound (dictionary-safe; innocent dictionary words -> allowlist) ==")
    for t, inn in compound:
        if inn or t in COMPOUND_ROOTS_EN:
            rep.append(f"  {t}: allowlisted {len(inn)}: {' '.join(inn)}")
    rep.append("  (other compound terms, no dictionary word contains them): " +
               " ".join(t for t, inn in compound if not inn and t not in COMPOUND_ROOTS_EN))
    rep.append("== word: dictionary words contain the term (not compound-safe) ==")
    for t, inn in unsafe:
        rep.append(f"  {t}: {len(inn)} e.g. {' '.join(inn[:8])}")
    rep.append("== word: forced after review (FORCE_WORD_EN) ==")
    for t, inn in forced:
        rep.append(f"  {t}: {len(inn)} innocent dictionary hits {' '.join(inn[:6])}")
    rep.append("== word: 4-letter terms not reviewed as compound roots ==")
    rep.append("  " + " ".join(short4))
    dset = set(dict_words)
    rep.append("== word entries that are dictionary words (homographs, reviewed by hand) ==")
    rep.append("  " + " ".join(t for t in sorted(terms) if t in dset))
    return match, extra_allow, rep


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------
SOURCE_NAMES = {
    "surge-ai": "surge-ai/profanity (MIT)",
    "dsojevic": "dsojevic/profanity-list (MIT)",
    "ldnoobw": "LDNOOBW/List-of-Dirty-Naughty-Obscene-and-Otherwise-Bad-Words (CC-BY-4.0)",
}
HEADER = """\
# Sluice word list ({lang}). GENERATED by Wordlists/build.py -- do not edit by hand;
# add your own entries in a separate file listed in `text.wordlists` instead.
# Sources: {sources}.
# See Wordlists/README.md and Wordlists/LICENSES/ for attribution and licences.
# Format: UTF-8, one entry per line, 4 tab-separated columns:
#   term<TAB>severity<TAB>category<TAB>match
# term: normal form (NFKC, case-folded, diacritics removed, letters and single spaces)
# severity: mild|strong|severe|slur   category: sexual|insult|slur|shock|drugs|religious|violence|bodily|other
# match: word (whole word / whole token sequence) | compound (also inside a longer word)
"""


def render_tsv(lang: str, rows: dict, match: dict, sources: str) -> str:
    lines = [HEADER.format(lang=lang, sources=sources)]
    for t in sorted(rows):
        sev, cat = rows[t]
        lines.append(f"{t}\t{sev}\t{cat}\t{match[t]}\n")
    return "".join(lines)


def render_allowlist(words: set[str]) -> str:
    head = ("# Sluice allowlist (en). GENERATED by Wordlists/build.py -- do not edit by hand;\n"
            "# add your own entries in a separate file listed in `text.allowlists` instead.\n"
            "# One innocent word or phrase per line, in the word lists' normal form.\n"
            "# A match that lies inside an occurrence of one of these is never reported.\n")
    return head + "".join(w + "\n" for w in sorted(words))


BEGIN, END = "<!-- BEGIN GENERATED (build.py) -->", "<!-- END GENERATED (build.py) -->"


def render_readme_section(en_rows, match, langs, allow, present) -> str:
    out = [BEGIN, "\n\n### Counts\n\n| file | entries |\n| --- | ---: |\n"]
    out.append(f"| en.tsv | {len(en_rows)} ({sum(1 for t in en_rows if match[t] == 'compound')} compound) |\n")
    for lang, terms in sorted(langs.items()):
        out.append(f"| {lang}.tsv | {len(terms)} |\n")
    out.append(f"| allowlist-en.txt | {len(allow)} |\n")
    sev_counts = defaultdict(int)
    for sev, _ in en_rows.values():
        sev_counts[sev] += 1
    out.append("\nEnglish severities: " + ", ".join(f"{s} {sev_counts[s]}" for s in SEVERITIES) + ".\n")
    roots = sorted(t for t in en_rows if match[t] == "compound" and t in COMPOUND_ROOTS_EN)
    out.append("\n### English compound roots reviewed by hand\n\n" + ", ".join(roots) + "\n")
    out.append("\nAll other `compound` entries are terms of 5+ letters that no dictionary word "
               "contains (e.g. `motherfucker`, `cocksucker`, `dumbshit`).\n")
    out.append("\n### English entries removed from the sources, and why\n\n")
    by_reason = defaultdict(list)
    for w, r in REMOVED_EN.items():
        if w in present:
            by_reason[r].append(w)
    for r in sorted(by_reason):
        out.append(f"- **{r}**: " + ", ".join(sorted(by_reason[r])) + "\n")
    out.append("\n### English severity overrides\n\n")
    out.append(", ".join(f"`{t}`→{s}" for t, s in sorted(SEVERITY_OVERRIDE.items())) + "\n\n")
    out.append(END)
    return "".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sources", nargs="?",
                    default=os.path.join(REPO, "..", "shared", "fixtures", "wordlist-sources"))
    ap.add_argument("--dict", default="/usr/share/dict/words")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--report", help="write the compound/rejection report here instead of stdout")
    ap.add_argument("--check", action="store_true", help="exit 1 if the files on disk are stale")
    ap.add_argument("--quiet", action="store_true", help="print only the summary")
    args = ap.parse_args(argv)

    src = os.path.normpath(args.sources)
    for sub in ("surge-ai/profanity_en.csv", "dsojevic/en.json", "ldnoobw/en"):
        if not os.path.exists(os.path.join(src, sub)):
            print(f"build.py: missing {sub} under {src}", file=sys.stderr)
            return 2
    if not os.path.exists(args.dict):
        print(f"build.py: {args.dict} not found (apt-get install wamerican)", file=sys.stderr)
        return 2

    rejected: list = []
    entries = load_english(src, rejected)
    unknown = sorted(w for w in REMOVED_EN if w not in entries)
    en_rows = finalize_english(entries)
    base_allow = set()
    for line in ALLOWLIST_EN_BASE:
        forms, why = variants(line) if line.strip() else ([], "empty")
        base_allow.update(forms[:1])
    dict_words = load_dictionary(args.dict)
    match, extra_allow, report = compound_analysis(en_rows, dict_words, base_allow)
    allow = base_allow | extra_allow
    clash = sorted(allow & set(en_rows))
    if clash:
        print("build.py: allowlist entries that are also terms: " + " ".join(clash), file=sys.stderr)
        return 1

    langs = load_other_languages(src, rejected)

    files = {}
    clinical_rows = {t: v for t, v in en_rows.items() if t in CLINICAL_EN}
    general_rows = {t: v for t, v in en_rows.items() if t not in CLINICAL_EN}
    sources = "; ".join(SOURCE_NAMES[s] for s in ("surge-ai", "dsojevic", "ldnoobw"))
    files["en.tsv"] = render_tsv("en", general_rows, match, sources)
    files["en-clinical.tsv"] = render_tsv("en-clinical", clinical_rows, {t: "word" for t in clinical_rows}, sources)
    for lang, terms in langs.items():
        rows = {t: ["strong", "other"] for t in terms}
        files[f"{lang}.tsv"] = render_tsv(lang, rows, {t: "word" for t in terms}, SOURCE_NAMES["ldnoobw"])
    files["allowlist-en.txt"] = render_allowlist(allow)
    readme_path = os.path.join(args.out, "README.md")
    if os.path.exists(readme_path):
        with open(readme_path, encoding="utf-8") as fh:
            readme = fh.read()
        if BEGIN in readme and END in readme:
            pre, rest = readme.split(BEGIN, 1)
            _, post = rest.split(END, 1)
            files["README.md"] = pre + render_readme_section(en_rows, match, langs, allow, set(entries)) + post

    # report
    en_terms = set(en_rows) | set(REMOVED_EN)
    rep = list(report)
    rep.append("== source entries rejected (spelling evasions / digits / too short) ==")
    for source, raw, why in rejected:
        d = deleet(raw)
        note = ""
        if source in ("surge-ai", "dsojevic", "ldnoobw") and "evasion" in why:
            note = f" -> de-leet '{d}' " + ("already listed" if d in en_terms or d.replace(" ", "") in en_terms
                                             else "NOT listed")
        rep.append(f"  [{source}] {raw!r}: {why}{note}")
    if unknown:
        rep.append("== REMOVED_EN entries not found in any source (typo?) ==")
        rep.append("  " + ", ".join(unknown))
    summary = (f"en: {len(en_rows)} terms ({sum(1 for t in en_rows if match[t] == 'compound')} compound), "
               f"allowlist {len(allow)}, other languages: "
               + ", ".join(f"{k} {len(v)}" for k, v in sorted(langs.items())))
    rep.append("== summary ==")
    rep.append(summary)
    text = "\n".join(rep) + "\n"
    if args.report:
        with open(args.report, "w", encoding="utf-8") as fh:
            fh.write(text)
    elif not args.quiet and not args.check:
        sys.stdout.write(text)

    stale = []
    for name, content in files.items():
        path = os.path.join(args.out, name)
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                old = fh.read()
        if old != content:
            stale.append(name)
            if not args.check:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(content)
    if args.check:
        if stale:
            print("build.py --check: stale: " + " ".join(stale), file=sys.stderr)
            return 1
        print("build.py --check: up to date")
        return 0
    print(summary if args.quiet or args.report else "", end="\n" if (args.quiet or args.report) else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
