#!/usr/bin/env python3
"""Run ONE peer filter over one file; called by bench.py in its own process
(pinned to one core with `taskset -c 0`), so a peer that fails to import or
crashes only costs its own column.

    worker.py FILTER speed INFILE OUTJSON [--budget SECONDS]
    worker.py FILTER flags INFILE OUTJSON

speed: {"messages", "cpuSeconds", "flagged", "complete"}: CPU time of the
       checking loop only (time.process_time, after the filter is loaded and
       the file read); stops early once `budget` CPU seconds are used.
flags: {"flags": "0110…" one character per input line, "cpuSeconds"}.
"""

from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name: str):
    """Return (check_one, check_batch or None, version)."""
    from importlib.metadata import version
    if name == "better-profanity":
        from better_profanity import profanity
        profanity.load_censor_words()
        return profanity.contains_profanity, None, version("better-profanity")
    if name == "better-profanity-rs":
        import better_profanity_rs
        p = better_profanity_rs.profanity
        p.load_censor_words()
        return p.contains_profanity, None, version("better-profanity-rs")
    if name == "glin-profanity":
        from glin_profanity import Filter
        # default settings, as the acceptance criterion names them
        f = Filter()
        return f.is_profane, None, version("glin-profanity")
    if name == "glin-profanity-leet":
        from glin_profanity import Filter
        # the configuration of the package's own README example: English + leetspeak
        f = Filter({"languages": ["english"], "detect_leetspeak": True})
        return f.is_profane, None, version("glin-profanity")
    if name == "alt-profanity-check":
        import profanity_check

        def batch(lines):
            return [bool(x) for x in profanity_check.predict(lines)]
        return (lambda s: batch([s])[0]), batch, version("alt-profanity-check")
    if name == "lists-ref":
        sys.path.insert(0, HERE)
        import refmatch
        lists = refmatch.default_lists()
        return (lambda s: bool(lists.matches(s))), None, "Wordlists + refmatch.py"
    raise SystemExit(f"unknown filter {name}")


def read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        data = fh.read()
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def main(argv: list[str]) -> int:
    name, mode, infile, outfile = argv[:4]
    budget = float(argv[argv.index("--budget") + 1]) if "--budget" in argv else 60.0
    check, batch, ver = load(name)
    lines = read_lines(infile)
    result = {"version": ver}
    if mode == "speed":
        flagged = done = 0
        t0 = time.process_time()
        step = 1000 if batch else 256
        for i in range(0, len(lines), step):
            chunk = lines[i:i + step]
            if batch:
                flagged += sum(batch(chunk))
            else:
                for s in chunk:
                    if check(s):
                        flagged += 1
            done += len(chunk)
            if time.process_time() - t0 >= budget:
                break
        cpu = time.process_time() - t0
        result.update(messages=done, cpuSeconds=cpu, flagged=flagged, complete=done == len(lines))
    elif mode == "flags":
        t0 = time.process_time()
        if batch:
            flags = []
            for i in range(0, len(lines), 2000):
                flags.extend(batch(lines[i:i + 2000]))
        else:
            flags = [bool(check(s)) for s in lines]
        result.update(flags="".join("1" if f else "0" for f in flags),
                      cpuSeconds=time.process_time() - t0)
    else:
        raise SystemExit(f"unknown mode {mode}")
    with open(outfile, "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
