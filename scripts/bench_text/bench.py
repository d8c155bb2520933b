#!/usr/bin/env python3
"""Peer benchmark of the text filter; run through scripts/bench-text (which
prepares the venv, the Debian data and the Sluice binary).  See the header of
scripts/bench-text for what each column means.

    bench.py --sluice PATH [--out DIR] [--budget SECONDS] [--filters a,b,...]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FORTUNES = "/usr/share/games/fortunes"
WORDS = "/usr/share/dict/words"
EVASIONS = os.path.join(REPO, "Tests", "Fixtures", "text", "evasions.tsv")
INNOCENT = os.path.join(REPO, "Tests", "Fixtures", "text", "innocent.txt")

# (key, column label, description)
FILTERS = [
    ("sluice", "sluice", "Sluice (`sluice bench-text` / `sluice check-text --json`)"),
    ("lists-ref", "lists-ref", "Wordlists/ through scripts/bench_text/refmatch.py (Python reference of the intended matching rules, not Sluice)"),
    ("better-profanity", "b-prof", "better-profanity (PyPI), default word list"),
    ("better-profanity-rs", "b-prof-rs", "better-profanity-rs (PyPI), Rust core, default word list"),
    ("glin-profanity", "glin", "glin-profanity (PyPI), default settings: Filter()"),
    ("glin-profanity-leet", "glin-leet", "glin-profanity (PyPI), Filter({languages: [english], detect_leetspeak: true})"),
    ("alt-profanity-check", "alt-pc", "alt-profanity-check (PyPI), linear SVM, predict() in batches of 1000"),
]


def read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def build_corpus(path: str) -> int:
    """Every line of Debian's fortunes (regular files, not .dat, no symlinks), in file
    name order, without empty lines and without the `%` separator lines."""
    files = sorted(f for f in glob.glob(os.path.join(FORTUNES, "*"))
                   if os.path.isfile(f) and not os.path.islink(f) and not f.endswith(".dat"))
    if not files:
        raise SystemExit(f"bench-text: no fortune files in {FORTUNES} (apt-get install fortunes fortunes-min)")
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        for f in files:
            for line in read_lines(f):
                line = line.rstrip("\r")
                if line.strip() and line != "%":
                    out.write(line + "\n")
                    n += 1
    return n


def taskset_prefix(use: bool) -> list[str]:
    return ["taskset", "-c", "0"] if use and shutil.which("taskset") else []


ENV_ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                  "RAYON_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}


def run_peer(python: str, key: str, mode: str, infile: str, budget: float, pin: bool,
             timeout: float) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = tmp.name
    cmd = taskset_prefix(pin) + [python, os.path.join(HERE, "worker.py"), key, mode, infile, out,
                                 "--budget", str(budget)]
    env = dict(os.environ, **ENV_ONE_THREAD)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
        if p.returncode != 0:
            err = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
            return {"error": err[:200]}
        with open(out, encoding="utf-8") as fh:
            return json.load(fh)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    finally:
        if os.path.exists(out):
            os.unlink(out)


def sluice_speed(sluice: str, corpus: str, pin: bool, timeout: float) -> dict:
    if not sluice or not os.access(sluice, os.X_OK):
        return {"error": f"no binary at {sluice}"}
    cmd = taskset_prefix(pin) + [sluice, "bench-text", "--file", corpus]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"error": "timed out"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:200]}
    for line in reversed(p.stdout.strip().splitlines()):
        try:
            d = json.loads(line)
            return {"messages": int(d["messages"]), "cpuSeconds": float(d["cpuSeconds"]),
                    "flagged": int(d["flagged"]), "complete": True}
        except (ValueError, KeyError, TypeError):
            continue
    return {"error": "no JSON line with messages/cpuSeconds/flagged on stdout"}


def sluice_flags(sluice: str, infile: str, timeout: float) -> dict:
    if not sluice or not os.access(sluice, os.X_OK):
        return {"error": f"no binary at {sluice}"}
    n = len(read_lines(infile))
    t0 = time.monotonic()
    try:
        p = subprocess.run([sluice, "check-text", "--file", infile, "--json"], capture_output=True,
                           text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"error": "timed out"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:200]}
    flags, terms = [], []
    for line in p.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except ValueError:
            return {"error": "check-text printed a line that is not JSON"}
        m = d.get("matches") or []
        flags.append(bool(m))
        terms.append(",".join(sorted({str(x.get("term")) for x in m})))
    if len(flags) != n:
        return {"error": f"check-text printed {len(flags)} JSON objects for {n} input lines"}
    return {"flags": "".join("1" if f else "0" for f in flags), "terms": terms,
            "wallSeconds": time.monotonic() - t0}


def show(s: str) -> str:
    """Printable form of an input: invisible and combining characters as \\uXXXX."""
    out = []
    for ch in s:
        cat = unicodedata.category(ch)
        if cat in ("Cf", "Mn", "Cc") or (cat.startswith("Z") and ch != " "):
            out.append("\\u%04X" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def width(s: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def pad(s: str, w: int, right: bool = False) -> str:
    gap = " " * max(0, w - width(s))
    return gap + s if right else s + gap


def table(headers: list[str], rows: list[list[str]], right_from: int = 1) -> str:
    ws = [max(width(str(r[i])) for r in [headers] + rows) for i in range(len(headers))]
    line = lambda r: "| " + " | ".join(pad(str(c), ws[i], i >= right_from) for i, c in enumerate(r)) + " |"
    sep = "|" + "|".join("-" * (w + 1) + (":" if i >= right_from else "-") for i, w in enumerate(ws)) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", default=os.path.join(REPO, ".build", "release", "sluice"))
    ap.add_argument("--out", default=os.path.join(REPO, "bench-out", "text"))
    ap.add_argument("--budget", type=float, default=60.0,
                    help="CPU seconds per peer for the speed run (slow peers stop early)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="wall seconds per peer run")
    ap.add_argument("--filters", default=",".join(k for k, _, _ in FILTERS))
    ap.add_argument("--no-taskset", action="store_true")
    ap.add_argument("--python", default=sys.executable, help="interpreter that has the peers")
    args = ap.parse_args(argv)
    pin = not args.no_taskset
    os.makedirs(args.out, exist_ok=True)
    chosen = [f for f in FILTERS if f[0] in args.filters.split(",")]

    corpus = os.path.join(args.out, "corpus-fortunes.txt")
    n_corpus = build_corpus(corpus)
    words = read_lines(WORDS)
    ev_rows = [l.split("\t") for l in read_lines(EVASIONS) if l and not l.startswith("#")]
    ev_file = os.path.join(args.out, "evasions-input.txt")
    with open(ev_file, "w", encoding="utf-8") as fh:
        fh.writelines(r[0] + "\n" for r in ev_rows)
    innocent = read_lines(INNOCENT)

    results: dict = {}
    for key, label, _ in chosen:
        print(f"bench-text: {key} ...", file=sys.stderr, flush=True)
        r: dict = {}
        if key == "sluice":
            r["speed"] = sluice_speed(args.sluice, corpus, pin, args.timeout)
            r["words"] = sluice_flags(args.sluice, WORDS, args.timeout)
            r["evasions"] = sluice_flags(args.sluice, ev_file, args.timeout)
            r["innocent"] = sluice_flags(args.sluice, INNOCENT, args.timeout)
        else:
            r["speed"] = run_peer(args.python, key, "speed", corpus, args.budget, pin, args.timeout)
            if "error" in r["speed"]:
                r["words"] = r["evasions"] = r["innocent"] = {"error": r["speed"]["error"]}
            else:
                r["words"] = run_peer(args.python, key, "flags", WORDS, args.budget, pin, args.timeout)
                r["evasions"] = run_peer(args.python, key, "flags", ev_file, args.budget, pin, args.timeout)
                r["innocent"] = run_peer(args.python, key, "flags", INNOCENT, args.budget, pin, args.timeout)
        results[key] = r

    # flagged dictionary words per filter, to files
    for key, r in results.items():
        w = r["words"]
        if "flags" in w:
            with open(os.path.join(args.out, f"dict-flagged-{key}.txt"), "w", encoding="utf-8") as fh:
                for i, f in enumerate(w["flags"]):
                    if f == "1":
                        extra = ("\t" + w["terms"][i]) if "terms" in w else ""
                        fh.write(words[i] + extra + "\n")
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as fh:
        json.dump({k: {kk: {x: y for x, y in vv.items() if x != "terms"} for kk, vv in v.items()}
                   for k, v in results.items()}, fh, indent=1)

    def na(d):
        return "n/a" if "error" in d else None

    # ---- report -----------------------------------------------------------
    out = []
    out.append("# Sluice text filter vs peers")
    out.append("")
    out.append(f"corpus: {n_corpus} lines of Debian fortunes ({corpus}); dictionary: {len(words)} words "
               f"({WORDS}); evasions: {len(ev_rows)} ({os.path.relpath(EVASIONS, REPO)}); "
               f"innocent: {len(innocent)} lines ({os.path.relpath(INNOCENT, REPO)})")
    out.append(f"speed pinned to one core: {'taskset -c 0' if taskset_prefix(pin) else 'NO (taskset missing or --no-taskset)'}; "
               f"peer budget {args.budget:.0f} CPU-s; machine: {os.cpu_count()} cores")
    out.append("")
    headers = ["filter", "version", "msgs/CPU-s", "corpus flagged", "dict words flagged",
               "evasions caught", "innocent flagged"]
    rows = []
    for key, label, _ in chosen:
        r = results[key]
        s = r["speed"]
        if na(s):
            speed = corpus_fl = "n/a"
        else:
            speed = f"{s['messages'] / s['cpuSeconds']:,.0f}" if s["cpuSeconds"] > 0 else "inf"
            corpus_fl = f"{s['flagged']:,}" + ("" if s.get("complete", True) else f" of {s['messages']:,}*")
        version = s.get("version") or r["words"].get("version") or ("binary" if key == "sluice" else "")
        if key == "sluice" and not na(s):
            version = os.path.relpath(args.sluice, REPO) if os.path.isabs(args.sluice) else args.sluice
        dw = r["words"]
        dict_fl = "n/a" if na(dw) else f"{dw['flags'].count('1'):,}"
        ev = r["evasions"]
        ev_fl = "n/a" if na(ev) else f"{ev['flags'].count('1')}/{len(ev_rows)}"
        inn = r["innocent"]
        inn_fl = "n/a" if na(inn) else f"{inn['flags'].count('1')}/{len(innocent)}"
        rows.append([label, version or "", speed, corpus_fl, dict_fl, ev_fl, inn_fl])
    out.append(table(headers, rows, right_from=2))
    if any("*" in r[3] for r in rows):
        out.append("* stopped after the CPU budget: speed over the lines done, flagged among those lines")
    errors = [(key, part, d["error"]) for key, r in results.items() for part, d in r.items() if "error" in d]
    if errors:
        out.append("")
        out.append("n/a reasons:")
        seen = set()
        for key, part, e in errors:
            if (key, e) not in seen:
                seen.add((key, e))
                out.append(f"  {key} ({part}): {e}")

    # evasion matrix
    out.append("")
    out.append("## Evasions (✓ = flagged)")
    out.append("")
    labels = [label for _, label, _ in chosen]
    mrows = []
    for i, (inp, exp) in enumerate(ev_rows):
        shown = show(inp)
        row = [shown if len(shown) <= 40 else shown[:39] + "…", exp]
        for key, _, _ in chosen:
            ev = results[key]["evasions"]
            row.append("-" if na(ev) else ("✓" if ev["flags"][i] == "1" else "✗"))
        mrows.append(row)
    totals = ["total caught", ""]
    for key, _, _ in chosen:
        ev = results[key]["evasions"]
        totals.append("n/a" if na(ev) else f"{ev['flags'].count('1')}/{len(ev_rows)}")
    mrows.append(totals)
    out.append(table(["input", "expected"] + labels, mrows, right_from=2))

    # innocent sentences
    out.append("")
    out.append(f"## Innocent lines flagged (of {len(innocent)})")
    for key, label, _ in chosen:
        inn = results[key]["innocent"]
        if na(inn):
            out.append(f"- {label}: n/a")
            continue
        hit = [innocent[i] for i, f in enumerate(inn["flags"]) if f == "1"]
        shown = "; ".join(f'"{h[:60]}"' for h in hit[:25]) + (" …" if len(hit) > 25 else "")
        out.append(f"- {label}: {len(hit)}" + (f": {shown}" if hit else ""))

    # dictionary words flagged
    out.append("")
    out.append(f"## Dictionary words flagged (of {len(words)}; full lists in {os.path.relpath(args.out, REPO)}/dict-flagged-*.txt)")
    for key, label, _ in chosen:
        dw = results[key]["words"]
        if na(dw):
            out.append(f"- {label}: n/a")
            continue
        hit = [words[i] for i, f in enumerate(dw["flags"]) if f == "1"]
        n_show = 30 if key == "sluice" else 12
        out.append(f"- {label}: {len(hit)}: " + " ".join(hit[:n_show]) + (" …" if len(hit) > n_show else ""))
    out.append("")
    out.append("filters: " + "; ".join(f"{label} = {desc}" for _, label, desc in chosen))
    report = "\n".join(out) + "\n"
    with open(os.path.join(args.out, "report.md"), "w", encoding="utf-8") as fh:
        fh.write(report)
    sys.stdout.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
