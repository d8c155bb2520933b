#!/usr/bin/env python3
"""Validate the moderation evaluation set and print its counts.

    python3 Tests/Fixtures/moderation/check.py            # validate both files, print counts
    python3 Tests/Fixtures/moderation/check.py --listed   # also show which word-list entry each listed line hits

Checks: every line is a JSON object with exactly the keys id, text, label, category, listed; ids are
unique across both files and numbered in order; label, category and the label/category pairing are
allowed values; texts are 2-40 words and no text appears twice; `listed` agrees with Wordlists/en.tsv
and Wordlists/allowlist-en.txt as matched below. Exit 1 on any problem. Standard library only.

`listed` is recomputed with a small, independent matcher that follows the normal form described in
Wordlists/README.md (NFKC, case folding, diacritics and apostrophe clitics removed), folds common
leetspeak (@4 -> a, 0 -> o, $5 -> s, 1! -> i, 3 -> e, 7 -> t), joins spaced or dotted single letters
("k y s", "f.u.c.k"), collapses letter elongations ("fuuuck"), reads one or two letters per star in
censored spellings ("f*ck"), accepts a plural -s/-es on a `word` entry, finds `compound` entries inside
longer words, and drops a hit that lies inside an allowlisted word or phrase. It is not Sluice's matcher;
if the word lists change, rerun this script to see which `listed` values have gone stale.
"""
import json
import os
import re
import sys
import unicodedata
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
WORDLISTS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "Wordlists"))
FILES = (("tune.jsonl", "m-t"), ("heldout.jsonl", "m-h"))
LABEL_OF = {
    "threat": "hostile", "self-harm-encouragement": "hostile", "harassment": "hostile", "hate": "hostile",
    "sexual-harassment": "hostile", "profanity": "hostile",
    "self-harm-first-person": "concern",
    "clean": "clean", "clean-idiom": "clean", "clean-scunthorpe": "clean",
}
KEYS = {"id", "text", "label", "category", "listed"}

LEET = {"@": "a", "4": "a", "0": "o", "$": "s", "5": "s", "1": "i", "!": "i", "3": "e", "7": "t",
        "8": "b", "|": "l", "+": "t"}
APOS = "'’ʼ‘`´"


def load_lists():
    words, compounds, allow = set(), set(), set()
    with open(os.path.join(WORDLISTS, "en.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                term, _sev, _cat, match = line.rstrip("\n").split("\t")
                (compounds if match == "compound" else words).add(term)
    with open(os.path.join(WORDLISTS, "allowlist-en.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                allow.add(line)
    return words, compounds, allow


def tokens(text):
    t = unicodedata.normalize("NFKC", text).casefold()
    t = unicodedata.normalize("NFD", t)
    t = unicodedata.normalize("NFC", "".join(c for c in t if unicodedata.category(c) != "Mn"))
    t = re.sub(r"(\w)[" + APOS + r"](s|ll|re|ve|d|m|t)\b", r"\1", t)
    t = re.sub("[" + APOS + "]", "", t)
    out = []
    for tok in re.findall(r"[\w@$!|+*]+", t):
        tok = tok.replace("_", "").strip("!|+")
        if not re.search(r"[^\W\d_]", tok):
            continue
        tok = "".join(LEET.get(c, c) for c in tok)
        tok = re.sub(r"[^a-z*\u00c0-\uffff]", "", tok).strip("*")
        if tok:
            out.append(tok)
    joined, run = [], []
    for tok in out + [None]:
        if tok is not None and len(tok) == 1:
            run.append(tok)
            continue
        joined.extend(["".join(run)] if len(run) >= 3 else run)
        run = []
        if tok is not None:
            joined.append(tok)
    return joined


def hits(text, words, compounds, allow):
    toks = tokens(text)
    found = []
    for tok in toks:
        if "*" in tok:
            rx = re.compile("^" + ".{1,2}".join(map(re.escape, tok.split("*"))) + "$")
            found += [t for t in words | compounds if " " not in t and rx.match(t)]
            continue
        for v in {tok, re.sub(r"(.)\1{2,}", r"\1\1", tok), re.sub(r"(.)\1+", r"\1", tok)}:
            cands = {v} | {v[:-len(s)] for s in ("s", "es") if v.endswith(s) and len(v) > len(s) + 2}
            found += [c for c in cands if c in words or c in compounds]
            if tok in allow or v in allow:
                continue
            found += [c for c in compounds if c in v and c not in cands]
    s = " " + " ".join(toks) + " "
    s1 = " " + " ".join(re.sub(r"(.)\1+", r"\1", t) for t in toks) + " "
    found += [t for t in words if " " in t and (" " + t + " " in s or " " + t + " " in s1)]
    return [t for t in dict.fromkeys(found)
            if not any(" " in a and t in a and " " + a + " " in s for a in allow)]


def main():
    show = "--listed" in sys.argv
    words, compounds, allow = load_lists()
    problems, seen_ids, seen_texts = [], set(), {}
    for name, prefix in FILES:
        rows = []
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                where = f"{name}:{n}"
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    problems.append(f"{where}: not JSON ({e})")
                    continue
                if not isinstance(r, dict) or set(r) != KEYS:
                    problems.append(f"{where}: keys must be exactly {sorted(KEYS)}")
                    continue
                rows.append(r)
                if r["id"] != f"{prefix}-{n:03d}":
                    problems.append(f"{where}: id {r['id']!r}, expected {prefix}-{n:03d}")
                if r["id"] in seen_ids:
                    problems.append(f"{where}: duplicate id {r['id']}")
                seen_ids.add(r["id"])
                if r["category"] not in LABEL_OF:
                    problems.append(f"{where}: unknown category {r['category']!r}")
                elif LABEL_OF[r["category"]] != r["label"]:
                    problems.append(f"{where}: category {r['category']} needs label {LABEL_OF[r['category']]}")
                if not isinstance(r["listed"], bool):
                    problems.append(f"{where}: listed must be true or false")
                nwords = len(r["text"].split())
                if not 2 <= nwords <= 40:
                    problems.append(f"{where}: {nwords} words (2-40 allowed)")
                key = r["text"].strip().casefold()
                if key in seen_texts:
                    problems.append(f"{where}: same text as {seen_texts[key]}")
                seen_texts[key] = where
                h = hits(r["text"], words, compounds, allow)
                if bool(h) != r["listed"]:
                    problems.append(f"{where}: listed={r['listed']} but the word list gives {h or 'nothing'}: {r['text']}")
                if show and h:
                    print(f"  {r['id']} {r['label']:8} {','.join(h):30} {r['text']}")
        print(f"\n{name}: {len(rows)} lines")
        labels = Counter(r["label"] for r in rows)
        print("  label     " + "  ".join(f"{k} {labels[k]} ({100 * labels[k] / len(rows):.0f}%)"
                                         for k in ("hostile", "concern", "clean")))
        cats = Counter((r["category"], r["listed"]) for r in rows)
        print(f"  {'category':26} {'lines':>5} {'listed':>6} {'unlisted':>8}")
        for c in LABEL_OF:
            a, b = cats[(c, True)], cats[(c, False)]
            print(f"  {c:26} {a + b:5} {a:6} {b:8}")
        hostile = [r for r in rows if r["label"] == "hostile"]
        unl = sum(not r["listed"] for r in hostile)
        print(f"  hostile without a listed word: {unl} of {len(hostile)} ({100 * unl / max(1, len(hostile)):.0f}%)")
        clean_l = sum(r["listed"] for r in rows if r["label"] == "clean")
        print(f"  clean with a listed word: {clean_l}")
    if problems:
        print("\nPROBLEMS:")
        for p in problems:
            print("  " + p)
        sys.exit(1)
    print("\nok: both files valid")


if __name__ == "__main__":
    main()
