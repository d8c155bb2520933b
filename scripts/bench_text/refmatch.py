#!/usr/bin/env python3
"""Reference matcher for Sluice's word lists (Python, stdlib only).

This is NOT Sluice: it is a small executable statement of the matching rules
the Swift matcher is expected to implement on top of Wordlists/, used to check
the fixtures in Tests/Fixtures/text/ against the lists and shown as the
"lists (py ref)" column of scripts/bench-text.  It favours clarity over speed.

Pipeline for one input line:
  1. NFKC, case fold.
  2. Delete format characters (general category Cf: zero-width space/joiners,
     soft hyphen, word joiner, BOM, bidi controls).
  3. NFD, delete nonspacing marks (Mn: accents, zalgo), NFC.
  4. Drop English clitics ('s 'll 're 've 'd 'm 't at the end of a word:
     "he'll" -> "he", "who're" -> "who", "dog's" -> "dog"), then delete the
     other apostrophes ("bitchin'" -> "bitchin", "mf'er" -> "mfer").
  5. Tokenise: a token is a maximal run of letters, digits and the leetspeak
     symbols @ $ ! + |.  Trailing ! is dropped (sentence punctuation).
  6. Per token: if it mixes Latin letters with Cyrillic/Greek look-alikes, map
     those to Latin (CONFUSABLES); always map a few Latin look-alikes (ƒ, ł, ø…).
     If it contains a letter and a leet character, map leet (LEET).
  7. Join runs of >= 3 single-character tokens separated by exactly one
     separator character (space . - _ * /) into one token: "f.u.c.k" -> "fuck".
  8. Match with repeated-letter tolerance: a term letter repeated m times
     matches the same letter repeated n times if n == m or n >= max(m + 1, 3)
     ("fuuuck" ~ "fuck", "asssss" ~ "ass"; but "as" !~ "ass", and a mere
     doubling does not count: "assess" !~ "asses", "fuuck" !~ "fuck").
     Inside a longer word (compound) the term's first and last letter may
     also be part of a longer run: "slut" is found in "sluttish".
     - `word` terms match whole tokens; phrases match consecutive tokens.
     - `compound` terms also match inside a token.
  9. A match whose tokens all lie inside an occurrence of an allowlist entry
     (consecutive tokens, exact) is dropped.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

APOSTROPHES = "'’ʼ‘`´"
CLITIC_RE = re.compile("[" + APOSTROPHES + r"](?:s|ll|re|ve|d|m|t)(?![^\W\d_])")
SEPARATORS = set(" .-_*/")
LEET_CHARS = set("@$!+|0134578")
LEET = {"@": "a", "4": "a", "8": "b", "3": "e", "1": "i", "!": "i", "|": "i",
        "0": "o", "5": "s", "$": "s", "7": "t", "+": "t"}
# Cyrillic and Greek letters that look like Latin ones (lower case, after case folding).
CONFUSABLES = {
    # Cyrillic
    "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "һ": "h", "і": "i", "ӏ": "l",
    "ј": "j", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "ԛ": "q", "ѕ": "s",
    "т": "t", "у": "y", "ԝ": "w", "х": "x", "ү": "y", "ɡ": "g", "ь": "b",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ω": "w", "ς": "s", "σ": "o",
}
# Latin letters that NFKC/NFD do not reduce to ASCII but that stand in for one.
LATIN_LOOKALIKES = {"ƒ": "f", "ł": "l", "ø": "o", "đ": "d", "ħ": "h", "ŧ": "t", "ı": "i",
                    "ɑ": "a", "ʃ": "s", "ɩ": "i", "ȿ": "s"}


def fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = unicodedata.normalize("NFD", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    text = unicodedata.normalize("NFC", text)
    text = CLITIC_RE.sub("", text)
    for a in APOSTROPHES:
        text = text.replace(a, "")
    return text


def _is_latin(ch: str) -> bool:
    return "a" <= ch <= "z" or unicodedata.name(ch, "").startswith("LATIN")


def _fix_token(tok: str) -> str:
    tok = "".join(LATIN_LOOKALIKES.get(c, c) for c in tok)
    if any(_is_latin(c) for c in tok) and any(c in CONFUSABLES for c in tok):
        tok = "".join(CONFUSABLES.get(c, c) for c in tok)
    if (any(c.isalpha() for c in tok) or "@" in tok or "$" in tok) and any(c in LEET for c in tok):
        tok = "".join(LEET.get(c, c) for c in tok)
    return tok


def tokenize(line: str) -> list[str]:
    """Normalised tokens of one line (steps 1-7)."""
    text = fold(line)
    raw = []  # (token, separator-before)
    i, n = 0, len(text)
    gap = ""
    while i < n:
        ch = text[i]
        if ch.isalnum() or ch in LEET_CHARS:
            j = i
            while j < n and (text[j].isalnum() or text[j] in LEET_CHARS):
                j += 1
            tok = text[i:j].rstrip("!")
            if tok and (any(c.isalnum() for c in tok) or len(tok) >= 2):
                raw.append((_fix_token(tok), gap))
            gap = ""
            i = j
        else:
            gap += ch
            i += 1
    out: list[str] = []
    k = 0
    while k < len(raw):
        # a run of single characters separated by exactly one separator char
        m = k
        while (m + 1 < len(raw) and len(raw[m][0]) == 1 and len(raw[m + 1][0]) == 1
               and len(raw[m + 1][1]) == 1 and raw[m + 1][1] in SEPARATORS):
            m += 1
        if m - k + 1 >= 3 and len(raw[k][0]) == 1:
            out.append("".join(t for t, _ in raw[k:m + 1]))
            k = m + 1
        else:
            out.append(raw[k][0])
            k += 1
    return out


def rle(s: str) -> tuple[str, tuple[int, ...]]:
    skel, counts = [], []
    for ch in s:
        if skel and skel[-1] == ch:
            counts[-1] += 1
        else:
            skel.append(ch)
            counts.append(1)
    return "".join(skel), tuple(counts)


class Lists:
    def __init__(self, wordlists: list[str], allowlists: list[str]):
        self.word: dict[str, list] = {}        # skeleton -> [(counts, term, sev, cat)]
        self.compound: dict[str, list] = {}
        self.phrases: dict[str, list] = {}     # first-token skeleton -> [(tokens, term, sev, cat)]
        self.compound_lengths: set[int] = set()
        self.allow: dict[str, list[list[str]]] = {}
        for path in wordlists:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    line = line.rstrip("\n")
                    if not line or line.startswith("#"):
                        continue
                    term, sev, cat, match = line.split("\t")
                    toks = term.split(" ")
                    if len(toks) > 1:
                        skel, _ = rle(toks[0])
                        self.phrases.setdefault(skel, []).append(
                            ([rle(t) for t in toks], term, sev, cat))
                        continue
                    skel, counts = rle(term)
                    self.word.setdefault(skel, []).append((counts, term, sev, cat))
                    if match == "compound":
                        self.compound.setdefault(skel, []).append((counts, term, sev, cat))
                        self.compound_lengths.add(len(skel))
        for path in allowlists:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    line = line.strip()
                    if line and not line.startswith("#"):
                        toks = tokenize(line)
                        if toks:
                            self.allow.setdefault(toks[0], []).append(toks)

    @staticmethod
    def _dominates(have, need, inside: bool = False) -> bool:
        # a run matches if it has the same length, or is stretched to 3 or more
        # ("fuuuck", "asssss"); a mere doubling is not enough ("assess" !~ "asses").
        # Inside a longer word (compound) the first and last run of the term may be
        # part of a longer run of the word ("slut" in "sluttish").
        last = len(need) - 1
        return all(h == n or h >= max(n + 1, 3) or (inside and (k == 0 or k == last) and h >= n)
                   for k, (h, n) in enumerate(zip(have, need)))

    def matches(self, line: str) -> list[dict]:
        toks = tokenize(line)
        rl = [rle(t) for t in toks]
        found = []  # (tok_start, tok_end, term, sev, cat)
        for i, (skel, counts) in enumerate(rl):
            hit = False
            for need, term, sev, cat in self.word.get(skel, ()):
                if self._dominates(counts, need):
                    found.append((i, i, term, sev, cat))
                    hit = True
                    break
            if not hit and len(skel) >= 4:
                for L in self.compound_lengths:
                    if L >= len(skel):
                        continue
                    for a in range(0, len(skel) - L + 1):
                        for need, term, sev, cat in self.compound.get(skel[a:a + L], ()):
                            if self._dominates(counts[a:a + L], need, inside=True):
                                found.append((i, i, term, sev, cat))
            for ptoks, term, sev, cat in self.phrases.get(skel, ()):
                if i + len(ptoks) <= len(rl) and all(
                        rl[i + k][0] == ps and self._dominates(rl[i + k][1], pc)
                        for k, (ps, pc) in enumerate(ptoks)):
                    found.append((i, i + len(ptoks) - 1, term, sev, cat))
        if not found:
            return []
        covered = set()
        for i, t in enumerate(toks):
            for entry in self.allow.get(t, ()):
                if toks[i:i + len(entry)] == entry:
                    covered.update(range(i, i + len(entry)))
        out, seen = [], set()
        for a, b, term, sev, cat in found:
            if all(k in covered for k in range(a, b + 1)):
                continue
            if (a, b, term) in seen:
                continue
            seen.add((a, b, term))
            out.append({"term": term, "severity": sev, "category": cat,
                        "tokens": " ".join(toks[a:b + 1])})
        return out


def default_lists() -> Lists:
    wl = os.path.join(REPO, "Wordlists")
    return Lists([os.path.join(wl, "en.tsv")], [os.path.join(wl, "allowlist-en.txt")])


def main(argv: list[str]) -> int:
    """refmatch.py FILE... : print each line's matches; exit 0."""
    lists = default_lists()
    for path in argv or ["-"]:
        fh = sys.stdin if path == "-" else open(path, encoding="utf-8")
        for line in fh:
            line = line.rstrip("\n")
            m = lists.matches(line)
            print(("FLAG " if m else "ok   ") + line + ("  -> " + ", ".join(x["term"] for x in m) if m else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
