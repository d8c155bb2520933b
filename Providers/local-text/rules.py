"""Normaliser and phrase-rule engine of the local-text provider.

The rules live in a human-readable data file (``rules/en.tsv``; its header
documents the syntax). This module

1. normalises text into tokens (``tokenize``) so that simple evasions do not
   matter: Unicode compatibility forms, case, accents, Cyrillic/Greek look-alike
   letters, zero-width characters, leetspeak digits and symbols inside words
   (``k1ll``, ``$hit``), letters repeated for emphasis (``diiiie``), punctuation
   inside words (``k.y.s``, ``k-y-s``), letters spelled out with spaces
   (``k y s``) and words run together (``killyourself``);
2. reduces every token to a *skeleton* (apostrophes dropped, ``l`` folded into
   ``i`` because ``1``/``l``/``i``/``!``/``|`` are interchangeable in leetspeak,
   runs of a repeated letter collapsed to one: ``kill`` -> ``ki``), and compiles
   every rule pattern through the same function, so rules are written in plain
   English and still match the disguised forms;
3. rewrites benign idioms ("i'd kill for a coffee", "you killed it", "kill the
   process", ...) into neutral words before any rule runs and before the
   profanity model sees the text;
4. finds rule hits and discounts those that are negated ("don't kill
   yourself"), quoted or reported ("he told me to kys, what do I do"), or said
   with a laughter marker ("lol", "jk", 😂);
5. cuts the text into clauses and works out, for each clause, whether it is aimed
   at someone (second person, @mention, an insult noun, an imperative such as
   "shut up"), which the scorer uses to turn the profanity model's
   "offensive" probability into a harassment score.

Run ``python rules.py "some text"`` to see the tokens, the hits and the scores.
"""

import bisect
import os
import re
import sys
import unicodedata
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_RULES = os.path.join(HERE, "rules", "en.tsv")

# OpenAI omni-moderation categories, in the order OpenAI's documentation lists them.
CATEGORIES = (
    "sexual",
    "sexual/minors",
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "illicit",
    "illicit/violent",
    "self-harm",
    "self-harm/intent",
    "self-harm/instructions",
    "violence",
    "violence/graphic",
)

# Context discounts (multiplied into a rule hit's tier scores). Documented in README.
NEGATED_FACTOR = 0.3   # a negation word just before the hit, or inside one of its gaps
REPORTED_FACTOR = 0.5  # the hit is quoted, or the text reports/asks about what someone said
JOKE_FACTOR = 0.7      # a laughter/joke marker in the text (not applied to hate or sexual categories)
# Sexual harassment and hate are not made acceptable by a "lol": no laughter discount for them.
JOKE_EXEMPT = ("hate", "hate/threatening", "sexual", "sexual/minors")
# A tier may set its own laughter factor with "joke=F" in its tier line (the first-person
# self-harm tiers do: "i want to die 😂" is hyperbole far more often than "i'll kill you lol"
# is harmless, see README). TIER_OPTIONS lists such non-category keys.
TIER_OPTIONS = ("joke",)

# How much of the profanity model's probability becomes harassment, by clause target.
TARGET_FACTOR = 1.0        # second person, @mention, imperative insult, insult noun
THIRD_PERSON_FACTOR = 0.75  # he/she/they/... : about someone, not to them
UNTARGETED_FACTOR = 0.4    # no person in the clause: profanity, not harassment
POSITIVE_CAP_FACTOR = 0.45  # targeted but friendly ("you're fucking awesome") and no insult noun

DEFAULT_GAP = 3  # words a bare "*" may skip
DEFAULT_FAR_GAP = 8  # words a bare "**" may skip, across sentence ends too
MIN_CLAUSE_WORDS = 3  # shorter clauses are merged with the next one for the model

# --------------------------------------------------------------------------- normaliser

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u034f"), None)
_QUOTE_MAP = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'", "\u00b4": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2033": '"',
})
# Cyrillic and Greek letters that look like Latin ones (lower case; text is casefolded first).
_HOMOGLYPHS = str.maketrans({
    "а": "a", "е": "e", "ё": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i",
    "ї": "i", "ј": "j", "ѕ": "s", "к": "k", "ԁ": "d", "һ": "h", "ӏ": "l", "ɡ": "g",
    "α": "a", "ο": "o", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "ς": "s",
})
# Laughing / "I'm dead (laughing)" emoji become the token "lol".
_LAUGH_EMOJI = re.compile("[\U0001F602\U0001F923\U0001F639\U0001F606\U0001F605\U0001F480\u2620]\ufe0f?")
# Leetspeak inside a word (only in tokens that contain at least one letter).
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t",
                       "@": "a", "$": "s", "!": "i", "|": "i", "\u20ac": "e"})
_LEET_CHARS = set("0134579@$!|\u20ac")
_LEAD_PUNCT = set("\"'([{<*_~-\u2013\u2014/\\#.,;:!?\u2026^&=+>")
_TRAIL_PUNCT = set("\"')]}>*_~-\u2013\u2014/\\#.,;:!?\u2026^&=+<")
_SENTENCE_END = set(".!?;\u2026")
_CLAUSE_BREAK = set(",:-\u2013\u2014/")
_RUN3 = re.compile(r"(.)\1{2,}")
_RUN2 = re.compile(r"(.)\1+")

SENT = "#"   # sentence boundary token
COMMA = ","  # clause boundary token
QUOTE = '"'  # quotation mark token
PUNCT_TOKENS = (SENT, COMMA, QUOTE)

_LAUGH_FORMS = [
    (re.compile(r"^(?:ha){2,}h?$|^a?(?:ha){1,}ha$"), "haha"),
    (re.compile(r"^(?:he){2,}h?$"), "hehe"),
    (re.compile(r"^lo+l(?:ol)*$"), "lol"),
    (re.compile(r"^lmf?a+o+$"), "lmao"),
    (re.compile(r"^(?:xd)+$"), "xd"),
]


def _prepare(text):
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH).translate(_QUOTE_MAP)
    text = _LAUGH_EMOJI.sub(" lol ", text)
    text = text.casefold().translate(_HOMOGLYPHS)
    # Strip accents (é -> e) but keep letters of other scripts.
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return text


def _is_word_char(c):
    return c.isalnum() or c == "'"


# Numbers with a unit or ordinal suffix are not leetspeak: 5pm, 3rd, 10k, 4gb, 60fps.
_NUMBER_WITH_UNIT = re.compile(
    r"^\d+(?:[.,]\d+)?(?:st|nd|rd|th|am|pm|k|m|b|g|gb|mb|kb|tb|ms|s|h|x|px|d|p|v|w|mm|cm|km|kg|"
    r"lb|lbs|min|mins|hr|hrs|yo|yr|yrs|fps|hz|ghz|mhz|mph|kmh|gen|ish|c|f)$")


def _unleet(word):
    """Undo leetspeak in a word that has at least one letter (k1ll -> kill, $hit -> shit)."""
    if (any(c in _LEET_CHARS for c in word) and any(c.isalpha() for c in word)
            and not _NUMBER_WITH_UNIT.match(word)):
        return word.translate(_LEET)
    return word


def _core_pieces(core, join):
    """Split (join=False) or glue (join=True) a word core at its inner punctuation."""
    core = _unleet(core)
    if join:
        pieces = ["".join(c for c in core if _is_word_char(c))]
    else:
        pieces, cur = [], []
        for c in core:
            if _is_word_char(c):
                cur.append(c)
            elif cur:
                pieces.append("".join(cur))
                cur = []
        if cur:
            pieces.append("".join(cur))
    out = []
    for p in pieces:
        p = p.strip("'")
        if not p:
            continue
        p = _RUN3.sub(r"\1", p)  # fuuuuck -> fuck, sooo -> so (a double letter is kept)
        for rx, repl in _LAUGH_FORMS:
            if rx.match(p):
                p = repl
                break
        out.append(p)
    return out


def tokenize(text, join=False):
    """Clean tokens of ``text``: words (lower case, leetspeak undone, apostrophes
    kept) and the punctuation tokens ``#`` (sentence end), ``,`` (clause break)
    and ``"`` (quotation mark). ``join=True`` glues words split by inner
    punctuation (``k.y.s`` -> ``kys``) instead of splitting them."""
    tokens = []
    for chunk in _prepare(text).split():
        if chunk[0] == "@" and len(chunk) > 1 and chunk[1].isalnum():
            tokens.append("@user")
            chunk = chunk[1:]
            while chunk and (chunk[0].isalnum() or chunk[0] in "_."):
                chunk = chunk[1:]
            if not chunk:
                continue
        i, j = 0, len(chunk)
        lead, trail = [], []
        while i < j and chunk[i] in _LEAD_PUNCT and not (chunk[i] in "$!|" and i + 1 < j and chunk[i + 1].isalnum()):
            if chunk[i] in "\"'":
                lead.append(QUOTE)
            i += 1
        while j > i and chunk[j - 1] in _TRAIL_PUNCT:
            c = chunk[j - 1]
            # "!" between letters is leetspeak (sh!t); at the end it ends a sentence.
            if c in "\"'":
                trail.append(QUOTE)
            elif c in _SENTENCE_END:
                trail.append(SENT)
            elif c in _CLAUSE_BREAK:
                trail.append(COMMA)
            j -= 1
        tokens.extend(lead)
        if i < j:
            tokens.extend(_core_pieces(chunk[i:j], join))
        # Trailing marks were collected right to left; keep one of each kind, in order.
        seen = []
        for t in reversed(trail):
            if t not in seen:
                seen.append(t)
        tokens.extend(seen)
    return tokens


def skeleton(token):
    """The matching form of one clean token (``kill`` -> ``ki``, ``you're`` -> ``youre``)."""
    if token in PUNCT_TOKENS or token == "@user":
        return token
    t = _unleet(token.replace("'", "")).replace("l", "i")
    return _RUN2.sub(r"\1", t)


def normalize(text):
    """The skeleton string rules are matched against (for display and tests)."""
    return " ".join(skeleton(t) for t in tokenize(text))


# --------------------------------------------------------------------------- patterns


class RuleFileError(ValueError):
    pass


_PTOKEN = re.compile(r"\s*(?:(\()|(\))|(\|)|(\?)|\{([a-z_][a-z0-9_]*)\}|\*\*(\d*)|\*(\d*)|(\^)|(\$)|([^\s()|?{}*^$]+))")
_PUNCT_OPT = r'(?:[,"] )*'
_WORD_CHARS = r'[^ #,"]+ '


class _PatternCompiler:
    def __init__(self, defines, where):
        self.defines = defines  # name -> pattern text
        self.where = where
        self.gap_count = 0
        self.literals = set()
        self._stack = []

    def compile(self, text):
        """Regex source of a pattern. ``self.anchors`` is then a set of skeleton
        words at least one of which every match contains (None: no such set)."""
        self.toks = self._lex(text)
        self.pos = 0
        body, self.anchors = self._alt()
        if self.pos != len(self.toks):
            raise RuleFileError(f"{self.where}: unexpected {self.toks[self.pos][1]!r} in pattern")
        if not body:
            raise RuleFileError(f"{self.where}: empty pattern")
        return body

    def _lex(self, text):
        out, pos = [], 0
        text = text.strip()
        while pos < len(text):
            m = _PTOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise RuleFileError(f"{self.where}: cannot parse pattern near {text[pos:pos + 20]!r}")
            pos = m.end()
            lp, rp, bar, q, name, far, gap, caret, dollar, word = m.groups()
            if lp:
                out.append(("(", "("))
            elif rp:
                out.append((")", ")"))
            elif bar:
                out.append(("|", "|"))
            elif q:
                out.append(("?", "?"))
            elif name is not None:
                out.append(("name", name))
            elif far is not None:
                out.append(("far", int(far) if far else DEFAULT_FAR_GAP))
            elif gap is not None:
                out.append(("gap", int(gap) if gap else DEFAULT_GAP))
            elif caret:
                out.append(("^", "^"))
            elif dollar:
                out.append(("$", "$"))
            else:
                out.append(("word", word))
        return out

    def _peek(self):
        return self.toks[self.pos][0] if self.pos < len(self.toks) else None

    # Each of _alt/_seq/_atom returns (regex source, anchors). Anchors: a frozenset
    # of skeleton words one of which any match must contain, or None if unknown.

    def _alt(self):
        branches = [self._seq()]
        while self._peek() == "|":
            self.pos += 1
            branches.append(self._seq())
        branches = [b for b in branches if b[0]]
        if not branches:
            return "", None
        anchors = None
        if all(a is not None for _, a in branches):
            anchors = frozenset().union(*(a for _, a in branches))
        if len(branches) == 1:
            return branches[0]
        return "(?:" + "|".join(b for b, _ in branches) + ")", anchors

    def _seq(self):
        parts, anchors = [], None
        while self._peek() not in (None, "|", ")"):
            atom, a = self._atom()
            if self._peek() == "?":
                self.pos += 1
                atom, a = f"(?:{atom})?", None
            parts.append(atom)
            if a is not None and (anchors is None or len(a) < len(anchors)):
                anchors = a
        return "".join(parts), anchors

    def _atom(self):
        kind, value = self.toks[self.pos]
        self.pos += 1
        if kind == "(":
            inner, a = self._alt()
            if self._peek() != ")":
                raise RuleFileError(f"{self.where}: missing ')'")
            self.pos += 1
            return f"(?:{inner})", a
        if kind == "name":
            if value not in self.defines:
                raise RuleFileError(f"{self.where}: unknown name {{{value}}}")
            if value in self._stack:
                raise RuleFileError(f"{self.where}: {{{value}}} refers to itself")
            self._stack.append(value)
            saved = (self.toks, self.pos)
            try:
                inner = self.compile(self.defines[value])
                a = self.anchors
            finally:
                self.toks, self.pos = saved
                self._stack.pop()
            return f"(?:{inner})", a
        if kind == "gap":
            name = f"g{self.gap_count}"
            self.gap_count += 1
            return f"(?P<{name}>(?:{_WORD_CHARS}{_PUNCT_OPT}){{0,{value}}})", None
        if kind == "far":
            # Any tokens, sentence ends included. Not a negation gap: a "don't" two
            # sentences away does not negate the hit.
            return f"(?:[^ ]+ ){{0,{value}}}", None
        if kind == "^":
            return r'(?:^|(?<=# ))' + _PUNCT_OPT, None
        if kind == "$":
            return r"(?=# |$)", None
        if kind == "word":
            words = [skeleton(p) for p in _core_pieces(value, join=False)]
            if not words:
                raise RuleFileError(f"{self.where}: {value!r} has no letters")
            self.literals.update(w for w in words if w.isalpha())
            return "".join(re.escape(w) + " " + _PUNCT_OPT for w in words), frozenset(words[:1])
        raise RuleFileError(f"{self.where}: unexpected {value!r} in pattern")


@dataclass
class Rule:
    kind: str
    arg: str
    pattern: str
    line: int
    regex: re.Pattern
    gaps: tuple = ()
    replacement: tuple = ()  # benign: clean tokens of the replacement
    scores: dict = field(default_factory=dict)
    joke_factor: float = JOKE_FACTOR  # the tier's laughter factor
    anchors: frozenset = None  # the rule can only match if one of these words occurs

    @property
    def where(self):
        return f"en.tsv:{self.line}"


KINDS = ("define", "tier", "rule", "benign", "negation", "report", "joke",
         "target", "third", "label", "self", "positive")


class RuleSet:
    """The parsed rules file. ``analyse(text)`` runs it on one text."""

    def __init__(self, path=DEFAULT_RULES):
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.source = f.read()
        self.defines = {}
        self.tiers = {}
        self.tier_options = {}  # tier -> {"joke": factor} when the tier line sets one
        self.by_kind = {k: [] for k in KINDS if k not in ("define", "tier")}
        self.vocabulary = set()
        pending = []
        for lineno, raw in enumerate(self.source.splitlines(), 1):
            line = raw.rstrip("\r\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cols = [c.strip() for c in line.split("\t") if c.strip()]
            where = f"{os.path.basename(path)}:{lineno}"
            kind = cols[0]
            if kind not in KINDS:
                raise RuleFileError(f"{where}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
            if len(cols) != 3:
                raise RuleFileError(f"{where}: expected 3 tab-separated columns "
                                    f"(kind, argument, pattern), got {len(cols)}")
            _, arg, text = cols
            if kind == "define":
                if not re.fullmatch(r"[a-z_][a-z0-9_]*", arg):
                    raise RuleFileError(f"{where}: bad name {arg!r}")
                if arg in self.defines:
                    raise RuleFileError(f"{where}: {arg} is defined twice")
                self.defines[arg] = text
            elif kind == "tier":
                if arg in self.tiers:
                    raise RuleFileError(f"{where}: tier {arg} is defined twice")
                scores = self._parse_scores(text, where)
                self.tier_options[arg] = {k: scores.pop(k) for k in TIER_OPTIONS if k in scores}
                if not scores:
                    raise RuleFileError(f"{where}: a tier needs at least one category=score")
                self.tiers[arg] = scores
            else:
                pending.append((kind, arg, text, lineno, where))
        for kind, arg, text, lineno, where in pending:
            comp = _PatternCompiler(self.defines, where)
            body = comp.compile(text)
            try:
                regex = re.compile(r"(?<![^ ])" + body)
            except re.error as exc:
                raise RuleFileError(f"{where}: pattern does not compile: {exc}") from None
            rule = Rule(kind, arg, text, lineno, regex, tuple(f"g{i}" for i in range(comp.gap_count)),
                        anchors=comp.anchors)
            if kind == "rule":
                if arg not in self.tiers:
                    raise RuleFileError(f"{where}: unknown tier {arg!r}")
                rule.scores = self.tiers[arg]
                rule.joke_factor = self.tier_options[arg].get("joke", JOKE_FACTOR)
                self.vocabulary |= comp.literals
            elif kind == "benign":
                rule.replacement = tuple(tokenize(arg.replace("_", " ")))
            self.by_kind[kind].append(rule)
        if not self.by_kind["rule"]:
            raise RuleFileError(f"{path}: no rules")
        self._seg_index = {}
        for w in sorted(self.vocabulary, key=len, reverse=True):
            self._seg_index.setdefault(w[0], []).append(w)
        self._seg_cache = {}  # a plain dict: a racing duplicate computation is harmless

    @staticmethod
    def _parse_scores(text, where):
        scores = {}
        for item in text.split():
            cat, sep, value = item.partition("=")
            if not sep or (cat not in CATEGORIES and cat not in TIER_OPTIONS):
                raise RuleFileError(f"{where}: bad score {item!r} (category=number; categories: "
                                    f"{', '.join(CATEGORIES)})")
            try:
                v = float(value)
            except ValueError:
                raise RuleFileError(f"{where}: bad number in {item!r}") from None
            if not 0.0 <= v <= 1.0:
                raise RuleFileError(f"{where}: score out of 0..1 in {item!r}")
            scores[cat] = v
        if not scores:
            raise RuleFileError(f"{where}: a tier needs at least one category=score")
        return scores

    def summary(self):
        return {
            "file": os.path.relpath(self.path, HERE),
            "rules": len(self.by_kind["rule"]),
            "benign_rewrites": len(self.by_kind["benign"]),
            "context_patterns": sum(len(self.by_kind[k]) for k in
                                    ("negation", "report", "joke", "target", "third", "label",
                                     "self", "positive")),
            "tiers": {name: dict(s) for name, s in self.tiers.items()},
            "tier_joke_factors": {name: o["joke"] for name, o in self.tier_options.items() if "joke" in o},
        }

    # ------------------------------------------------------------------ analysis

    def _segment(self, blob, strict=False):
        """Split a run-together skeleton word into rule-vocabulary words, or None."""
        key = (blob, strict)
        if key not in self._seg_cache:
            if len(self._seg_cache) > 50000:
                self._seg_cache.clear()
            self._seg_cache[key] = self._segment_uncached(blob, strict)
        return self._seg_cache[key]

    def _segment_uncached(self, blob, strict):
        n = len(blob)
        if n > 48:
            return None
        best = [None] * (n + 1)
        best[0] = []
        for i in range(n):
            if best[i] is None or len(best[i]) >= 6:
                continue
            for w in self._seg_index.get(blob[i], ()):
                if blob.startswith(w, i):
                    j = i + len(w)
                    cand = best[i] + [w]
                    if best[j] is None or len(cand) < len(best[j]):
                        best[j] = cand
        seg = best[n]
        if not seg or len(seg) < 2 or (strict and (len(seg) > 5 or max(map(len, seg)) < 4)):
            return None
        return seg

    def _variants(self, text):
        """(clean tokens, skeleton tokens) of variant A, plus the extra skeleton variants."""
        clean = tokenize(text)
        skel = [skeleton(t) for t in clean]
        extra = []
        # B: letters spelled out ("k y s") glued, run-together words split.
        b, i, changed = [], 0, False
        while i < len(skel):
            j = i
            while j < len(skel) and len(skel[j]) == 1 and skel[j].isalpha():
                j += 1
            if j - i >= 3:
                blob = "".join(skel[i:j])
                blob = _RUN2.sub(r"\1", blob)
                b.extend(self._segment(blob) or [blob])
                changed = True
                i = j
                continue
            t = skel[i]
            if len(t) >= 7 and t.isalpha() and t not in self.vocabulary:
                seg = self._segment(t, strict=True)
                if seg:
                    b.extend(seg)
                    changed = True
                    i += 1
                    continue
            b.append(t)
            i += 1
        if changed:
            extra.append(b)
        # C: inner punctuation removed instead of split ("ki.ll" -> "kill").
        c = [skeleton(t) for t in tokenize(text, join=True)]
        if c != skel and c != b:
            extra.append(c)
        return clean, skel, extra

    @staticmethod
    def _string(tokens):
        s = " ".join(tokens) + " " if tokens else ""
        starts, pos = [], 0
        for t in tokens:
            starts.append(pos)
            pos += len(t) + 1
        return s, starts

    def _rewrite(self, skel, clean=None):
        """Apply the benign rewrites; returns new (skel, clean) lists."""
        s, starts = self._string(skel)
        present = set(skel)
        for rule in self.by_kind["benign"]:
            if rule.anchors is not None and rule.anchors.isdisjoint(present):
                continue
            spans = []
            for m in rule.regex.finditer(s):
                if m.end() == m.start():
                    continue
                a = bisect.bisect_right(starts, m.start()) - 1
                z = bisect.bisect_left(starts, m.end())
                if spans and a < spans[-1][1]:
                    continue
                spans.append((a, z))
            if not spans:
                continue
            rep_clean = list(rule.replacement)
            rep_skel = [skeleton(t) for t in rep_clean]
            for a, z in reversed(spans):
                skel = skel[:a] + rep_skel + skel[z:]
                if clean is not None:
                    clean = clean[:a] + rep_clean + clean[z:]
            s, starts = self._string(skel)
            present = set(skel)
        return skel, clean

    def _any(self, kind, s):
        return any(r.regex.search(s) for r in self.by_kind[kind])

    def _find_hits(self, skel):
        s, starts = self._string(skel)
        reported = self._any("report", s)
        joking = self._any("joke", s)
        hits = []
        present = set(skel)
        quotes_before, n = [], 0  # quote marks before each token
        for t in skel:
            quotes_before.append(n)
            n += t == QUOTE
        mentioned = None  # computed on the first quoted hit
        for rule in self.by_kind["rule"]:
            if rule.anchors is not None and rule.anchors.isdisjoint(present):
                continue
            for m in rule.regex.finditer(s):
                if m.end() == m.start():
                    continue
                a = bisect.bisect_right(starts, m.start()) - 1
                z = bisect.bisect_left(starts, m.end())
                while z > a + 1 and skel[z - 1] in PUNCT_TOKENS:
                    z -= 1  # trailing commas/quotes are not part of the hit
                factors = []
                # Negation: one of the two words before the hit (same sentence), or in a gap.
                before = []
                k = a - 1
                while k >= 0 and len(before) < 2 and skel[k] != SENT:
                    if skel[k] not in PUNCT_TOKENS:
                        before.append(skel[k])
                    k -= 1
                window = " ".join(reversed(before)) + " "
                gap_text = " ".join((m.group(g) or "").strip() for g in rule.gaps) + " "
                if any(n.regex.search(window) or n.regex.search(gap_text)
                       for n in self.by_kind["negation"]):
                    factors.append(("negated", NEGATED_FACTOR))
                quoted = quotes_before[a] % 2 == 1
                if quoted:
                    if mentioned is None:
                        mentioned = self._mentioned(skel)
                    quoted = mentioned
                if reported or quoted:
                    factors.append(("quoted" if quoted else "reported", REPORTED_FACTOR))
                hits.append(Hit(rule, a, z, " ".join(skel[a:z]), factors, joking))
        return hits

    def _mentioned(self, skel):
        """Is quoted text being talked about rather than said? True when at least
        three words stand outside the quotes and none of them addresses the reader
        ('"kys" is a horrible thing to say' but not '"kys", yes you')."""
        outside, inside = [], False
        for t in skel:
            if t == QUOTE:
                inside = not inside
            elif not inside and t not in PUNCT_TOKENS:
                outside.append(t)
        if len(outside) < 3:
            return False
        return not self._any("target", self._string(outside)[0])

    def _clauses(self, skel, clean, masked):
        """Model clauses: (clean text, target factor, reported) per clause of variant A."""
        out, cur_c, cur_s = [], [], []
        s_all, _ = self._string(skel)
        reported = self._any("report", s_all)

        def flush():
            if cur_c:
                out.append((list(cur_c), list(cur_s)))
                cur_c.clear()
                cur_s.clear()

        for i, (c, s) in enumerate(zip(clean, skel)):
            if s in PUNCT_TOKENS:
                if sum(1 for x in cur_s if x not in PUNCT_TOKENS) >= MIN_CLAUSE_WORDS or s == SENT:
                    flush()
                continue
            if i in masked:
                continue
            cur_c.append(c)
            cur_s.append(s)
        flush()
        # A trailing short clause joins the one before it (same sentence or not).
        if len(out) >= 2 and len(out[-1][1]) < MIN_CLAUSE_WORDS:
            last = out.pop()
            out[-1] = (out[-1][0] + last[0], out[-1][1] + last[1])
        clauses = []
        for c_tokens, s_tokens in out:
            s, _ = self._string(s_tokens)
            label = self._any("label", s)
            first_person = self._any("self", s)
            if self._any("target", s):
                factor, why = TARGET_FACTOR, "target"
            elif label and not first_person:
                factor, why = TARGET_FACTOR, "insult noun"
            elif self._any("third", s):
                factor, why = THIRD_PERSON_FACTOR, "third person"
            else:
                factor, why = UNTARGETED_FACTOR, "untargeted"
            if factor > POSITIVE_CAP_FACTOR and not label and self._any("positive", s):
                factor, why = POSITIVE_CAP_FACTOR, why + ", friendly"
            clauses.append(Clause(" ".join(c_tokens), factor, why, reported))
        return clauses

    def analyse(self, text):
        clean, skel, extra = self._variants(text)
        skel, clean = self._rewrite(skel, clean)
        variants = [skel] + [self._rewrite(v)[0] for v in extra]
        hits, seen = [], set()
        masked = set()
        for vi, v in enumerate(variants):
            for h in self._find_hits(v):
                key = (h.rule.line, h.text)
                if vi == 0 and h.factor < 1.0 and any(n in ("negated", "reported", "quoted")
                                                        for n, _ in h.factors):
                    masked.update(range(h.start, h.end))  # the model must not re-score it
                if key in seen:
                    continue
                seen.add(key)
                hits.append(h)
        scores = dict.fromkeys(CATEGORIES, 0.0)
        for h in hits:
            for cat, v in h.scores().items():
                if v > scores[cat]:
                    scores[cat] = v
        clauses = self._clauses(skel, clean, masked)
        return Analysis(scores, hits, clauses, " ".join(skel),
                        [" ".join(v) for v in variants[1:]])


@dataclass
class Hit:
    rule: Rule
    start: int
    end: int
    text: str
    factors: list
    joking: bool

    @property
    def factor(self):
        f = 1.0
        for _, v in self.factors:
            f *= v
        return f

    def scores(self):
        out = {}
        for cat, v in self.rule.scores.items():
            v *= self.factor
            if self.joking and cat not in JOKE_EXEMPT:
                v *= self.rule.joke_factor
            out[cat] = round(v, 4)
        return out

    def describe(self):
        notes = [n for n, _ in self.factors] + (["joking"] if self.joking else [])
        return (f"{self.rule.where} [{self.rule.arg}] {self.text!r}"
                + (f" ({', '.join(notes)})" if notes else "") + f" -> {self.scores()}")


@dataclass
class Clause:
    text: str       # what the profanity model sees
    factor: float   # how much of its probability counts as harassment
    why: str
    reported: bool


@dataclass
class Analysis:
    scores: dict        # category -> rule score (0 when no rule hit)
    hits: list
    clauses: list
    skeleton: str
    variants: list


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    rs = RuleSet()
    for text in argv or [line.rstrip("\n") for line in sys.stdin]:
        a = rs.analyse(text)
        print(f"text:     {text}")
        print(f"skeleton: {a.skeleton}")
        for v in a.variants:
            print(f"variant:  {v}")
        for h in a.hits:
            print(f"hit:      {h.describe()}")
        for c in a.clauses:
            print(f"clause:   {c.text!r} x{c.factor} ({c.why}{', reported' if c.reported else ''})")
        print(f"scores:   { {k: v for k, v in a.scores.items() if v} }")
        print()


if __name__ == "__main__":
    main()
