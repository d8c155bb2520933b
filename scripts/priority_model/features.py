"""What train.py fits and cv.py cross-validates: the labelled files, the text the model reads, and the model."""
import json

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline, make_union

FIXTURES = "Tests/Fixtures/priority"
# Chosen by leave-one-writer-out cross-validation (cv.py; README, "Captions and priority").
C = 10.0


def load(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def document(line):
    """The text the model reads: the message, then the earlier messages when given (PriorityModel.document)."""
    return line["text"] + ((" || " + line["context"]) if line.get("context") else "")


def model(c=C):
    """TF-IDF word 1–2-grams and char_wb 3–5-grams (seen in ≥ 2 messages), logistic regression. The union's two
    parts, in this order, are what PriorityModel.swift recomputes."""
    words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True)
    return make_pipeline(make_union(words, chars), LogisticRegression(C=c, max_iter=5000))
