"""Leave-one-writer-out cross-validation of the priority model engine (how README's limits and C were chosen).

    .venv-priority-model/bin/python scripts/priority_model/cv.py --sluice .build/debug/sluice [--C 10] [--limits 0.16/0.85,0.13/0.9]

Each tune file was written by a different writer: for each file, the model (the same features as train.py) is trained
on all the other tune files and scores the one left out; the engine's combination (ModelPriorityEngine) is applied
with each pair of limits "opposed/confident": an extreme band becomes medium when the model gives the other extreme
more than `opposed`, or when the rules say the other extreme and the model gives its own band less than `confident`.
The rules' band of every line comes from `sluice priority --labelled … --misses` with priority.engine "rules".
Prints the model alone and each pair of limits: mean band accuracy and high↔low swaps over the folds written as
held-out files (the kind of writing a new held-out file is), and over all folds. Never reads a held-out file.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from features import C, FIXTURES, inputs, load, model as priority_model

# Tune files that were written as held-out files (README's table): the folds that look like a new held-out file.
WRITTEN_AS_HELD_OUT = ["tune-7", "tune-8", "tune-9", "tune-12", "tune-13", "tune-16", "tune-17", "tune-18", "tune-19", "tune-20", "tune-21", "tune-22", "tune-23", "tune-24", "tune-25", "tune-26", "tune-27", "tune-28", "tune-29"]

parser = argparse.ArgumentParser()
parser.add_argument("--sluice", required=True, help="a built sluice binary (for the rules engine's bands)")
parser.add_argument("--C", type=float, default=C)
parser.add_argument("--limits", default="0.13/0.9,0.13/0.85,0.14/0.85,0.16/0.85,0.16/0.9,0.18/0.85")
parser.add_argument("--language", default="en")
args = parser.parse_args()


files = {os.path.basename(path)[:-6]: load(path) for path in sorted(glob.glob(f"{FIXTURES}/tune*.jsonl"))}

# The rules' band of every tune line: the labelled band unless `--misses` lists the line with another.
rules = {}
with tempfile.TemporaryDirectory() as folder:
    config = os.path.join(folder, "pipeline.json")
    os.symlink(os.path.abspath("Wordlists"), os.path.join(folder, "Wordlists"))
    with open(config, "w") as handle:
        json.dump({"priority": {"engine": "rules", "language": args.language}}, handle)
    for name, lines in files.items():
        run = subprocess.run([args.sluice, "priority", "--config", config, "--labelled", f"{FIXTURES}/{name}.jsonl", "--misses"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"cv.py: sluice priority failed on {name}: {run.stderr.strip()}")
        scored = {m.group(1): m.group(2) for m in re.finditer(r"^(\S+): expected \w+, scored (\w+)", run.stdout, re.M)}
        for line in lines:
            rules[line["id"]] = scored.get(line["id"], line["band"])


RESOLVED_OPENINGS = {"nvm", "nevermind", "never mind", "sorted", "all sorted", "all good", "panic over", "false alarm"}
RESOLVED_PHRASES = ["false alarm", "panic over", "crisis averted", "all sorted now", "all clear", "back to normal", "no harm done",
                    "fine now", "all fine", "up and laughing", "laughing about it"] + [
    f"{who} {where} now" for who in ["he's", "she's", "they're", "theyre", "hes", "shes", "he is", "she is", "they are"] for where in ("out", "in")]


NEGATORS = {"not", "no", "never", "isnt", "isn't", "aint", "ain't", "arent", "aren't", "wasnt", "wasn't", "nowhere"}
UNDOERS = {"again", "but", "still", "though", "until"}


def announces_resolution(text):
    """ModelPriorityEngine.announcesResolution: a message that says its problem is over is never made high."""
    words = [word for word in re.split(r"[^\w']|_", text.lower().replace("\u2019", "'")) if word]
    if not words:
        return False
    if words[0] in RESOLVED_OPENINGS or " ".join(words[:2]) in RESOLVED_OPENINGS:
        return True
    if "?" in text:
        return False
    for phrase in RESOLVED_PHRASES:
        parts = phrase.split(" ")
        for start in range(len(words) - len(parts) + 1):
            if words[start:start + len(parts)] == parts:
                if not NEGATORS & set(words[max(0, start - 2):start]) and not UNDOERS & set(words[start + len(parts):]):
                    return True
    return False


def combine(predicted, probabilities, rules_band, opposed, confident, text=""):
    other = {"high": "low", "low": "high"}.get(predicted)
    if other is None:
        return predicted
    if predicted == "high" and announces_resolution(text):
        return "medium"
    if rules_band == other and probabilities[predicted] < confident:
        return "medium"
    return "medium" if probabilities[other] > opposed else predicted


limits = [tuple(float(value) for value in pair.split("/")) for pair in args.limits.split(",")]
results = {"model alone": {}} | {f"limits {o} / {c}": {} for o, c in limits}
for held, test in files.items():
    train = [line for name, lines in files.items() if name != held for line in lines]
    model = priority_model(args.C)
    model.fit(inputs(train), [line["band"] for line in train])
    classes = list(model[-1].classes_)
    rows = model.predict_proba(inputs(test))
    predicted = [classes[int(np.argmax(row))] for row in rows]

    def score(bands):
        right = sum(band == line["band"] for band, line in zip(bands, test))
        swaps = sum({band, line["band"]} == {"high", "low"} for band, line in zip(bands, test))
        return right / len(test), swaps

    results["model alone"][held] = score(predicted)
    for opposed, confident in limits:
        bands = [combine(p, dict(zip(classes, row)), rules[line["id"]], opposed, confident, line["text"])
                 for p, row, line in zip(predicted, rows, test)]
        results[f"limits {opposed} / {confident}"][held] = score(bands)


def summary(folds, names):
    names = [name for name in names if name in folds]
    return (f"{100 * np.mean([folds[n][0] for n in names]):.1f}% mean (lowest {100 * min(folds[n][0] for n in names):.1f}%), "
            f"{sum(folds[n][1] for n in names)} swaps")


print(f"leave-one-writer-out over {len(files)} tune files, C = {args.C}")
for label, folds in results.items():
    print(f"{label}: written as held-out ({len(WRITTEN_AS_HELD_OUT)} folds) {summary(folds, WRITTEN_AS_HELD_OUT)}; "
          f"all folds {summary(folds, list(files))}")
