"""What train.py fits and cv.py cross-validates: the labelled files, the text the model reads, and the model."""
import json

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

FIXTURES = "Tests/Fixtures/priority"
# Chosen by leave-one-writer-out cross-validation (cv.py; README, "Captions and priority").
C = 10.0


def load(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def document(line):
    """The text the model reads: the message, then the earlier messages when given (PriorityModel.document)."""
    return line["text"] + ((" || " + line["context"]) if line.get("context") else "")


def inputs(lines):
    """What the model is fitted on and asked about, one row per line: the document, and the message alone when it
    has a context (empty otherwise), so a word can weigh differently in a follow-up ("sorted" after an alarm)."""
    return np.array([[document(line), line["text"] if line.get("context") else ""] for line in lines], dtype=object)


def model(c=C):
    """TF-IDF word 1–2-grams and char_wb 3–5-grams (seen in ≥ 2 messages) of the document, word 1–2-grams of a
    follow-up's own message, logistic regression. The three parts, in this order, are what PriorityModel.swift
    recomputes."""
    parts = ColumnTransformer([
        ("words", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), 0),
        ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True), 0),
        ("followUpWords", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), 1),
    ])
    return make_pipeline(parts, LogisticRegression(C=c, max_iter=5000))
