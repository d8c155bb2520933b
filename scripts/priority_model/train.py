"""Trains the priority band model (see scripts/train-priority-model) and exports it for PriorityModel.swift."""
import glob
import json
import sys

import numpy as np

from features import FIXTURES, inputs, load, model as priority_model

check = "--check" in sys.argv[1:]
arguments = [argument for argument in sys.argv[1:] if argument != "--check"]
language = arguments[0] if arguments else "en"

tune_files = sorted(glob.glob(f"{FIXTURES}/tune*.jsonl"))
train = [line for path in tune_files for line in load(path)]
model = priority_model()
model.fit(inputs(train), [line["band"] for line in train])
words, chars, follow_up_words = (model[0].named_transformers_[name] for name in ("words", "chars", "followUpWords"))
classifier = model[-1]


def short(value):
    """Six significant digits: the file halves, and no band of the labelled lines changes (the Swift test checks)."""
    return float("%.6g" % value)


def part(vectorizer, offset):
    vocabulary = sorted(vectorizer.vocabulary_.items(), key=lambda item: item[1])
    return {
        "terms": [term for term, _ in vocabulary],
        "idf": [short(value) for value in vectorizer.idf_],
        "weights": [[short(classifier.coef_[band][offset + column]) for band in range(len(classifier.classes_))]
                    for _, column in vocabulary],
    }


expected = []
for path in sorted(glob.glob(f"{FIXTURES}/*.jsonl")):
    if path.endswith("model-expected.jsonl"):
        continue
    lines = load(path)
    probabilities = model.predict_proba(inputs(lines))
    for line, row in zip(lines, probabilities):
        expected.append({"id": line["id"], "band": str(classifier.classes_[int(np.argmax(row))]),
                         "probabilities": {str(band): round(float(p), 6) for band, p in zip(classifier.classes_, row)}})
if check:
    # Reproducibility: the committed model must be what these tune files train (the Swift parity test then ties the
    # committed model file to model-expected.jsonl). Bands must agree exactly, probabilities to 1e-4 (the sixth
    # significant digit may move with another BLAS build).
    committed = {row["id"]: row for row in load(f"{FIXTURES}/model-expected.jsonl")}
    differences = []
    for row in expected:
        old = committed.get(row["id"])
        if old is None:
            differences.append(f"{row['id']}: not in model-expected.jsonl")
        elif old["band"] != row["band"] or any(abs(old["probabilities"].get(band, -1) - p) > 1e-4 for band, p in row["probabilities"].items()):
            differences.append(f"{row['id']}: committed {old['band']} {old['probabilities']}, retrained {row['band']} {row['probabilities']}")
    differences += [f"{identifier}: in model-expected.jsonl but in no labelled file" for identifier in committed.keys() - {row["id"] for row in expected}]
    if differences:
        print(f"priority model is stale or not reproducible ({len(differences)} lines differ); run scripts/train-priority-model "
              f"and commit Wordlists/priority-{language}.model.json with Tests/Fixtures/priority/model-expected.jsonl:", file=sys.stderr)
        for line in differences[:20]:
            print("  " + line, file=sys.stderr)
        sys.exit(1)
    print(f"priority model reproduced: {len(expected)} lines, {len(train)} training lines from {len(tune_files)} files, "
          f"bands identical and probabilities within 1e-4 of Tests/Fixtures/priority/model-expected.jsonl")
    sys.exit(0)

exported = {
    "about": "Priority band model trained by scripts/train-priority-model from " + ", ".join(tune_files)
             + " (the project's own labelled messages). TF-IDF word 1-2-grams and char_wb 3-5-grams of the message and its context, word 1-2-grams of a follow-up's own message, logistic regression.",
    "bands": [str(band) for band in classifier.classes_],
    "intercepts": [short(value) for value in classifier.intercept_],
    "words": part(words, 0),
    "chars": part(chars, len(words.vocabulary_)),
    "followUpWords": part(follow_up_words, len(words.vocabulary_) + len(chars.vocabulary_)),
}
with open(f"Wordlists/priority-{language}.model.json", "w", encoding="utf-8") as handle:
    json.dump(exported, handle, ensure_ascii=False, separators=(",", ":"))
    handle.write("\n")
with open(f"{FIXTURES}/model-expected.jsonl", "w", encoding="utf-8") as handle:
    for row in expected:
        handle.write(json.dumps(row, ensure_ascii=False) + "\n")
print(f"trained on {len(train)} lines from {len(tune_files)} files; "
      f"{len(words.vocabulary_)} word, {len(chars.vocabulary_)} character and {len(follow_up_words.vocabulary_)} follow-up word features; wrote Wordlists/priority-{language}.model.json "
      f"and {FIXTURES}/model-expected.jsonl ({len(expected)} lines)")
