"""The alt-profanity-check model (offensive-language probability), loaded offline.

The alt-profanity-check wheel ships its trained model as two joblib pickles in
``profanity_check/data/``: a scikit-learn ``TfidfVectorizer`` (unigrams, English
stop words removed) and a ``CalibratedClassifierCV`` over five ``LinearSVC`` folds
with sigmoid calibration. This module

* locates the package with ``importlib.util.find_spec`` and never imports it
  (``import profanity_check`` unpickles the files at import time, unchecked);
* refuses to load the pickles unless their SHA-256 sums are the ones pinned below
  (a pickle is code: only the exact files of the pinned wheel are trusted);
* refuses to load them if scikit-learn warns that they were pickled by another
  scikit-learn version (``InconsistentVersionWarning``), or if they unpickle to
  anything but the expected classes;
* scores with a fast path (one sparse matrix product + the five sigmoids)
  that gives the same numbers as ``model.predict_proba`` (checked at load time on
  probe strings, and by the tests) without scikit-learn's ~2.5 ms per-call
  validation overhead.

Nothing here touches the network.
"""

import hashlib
import importlib.metadata
import importlib.util
import os
import threading
import warnings

PACKAGE = "alt-profanity-check"
PACKAGE_VERSION = "1.9.1"
SKLEARN_VERSION = "1.9.1"  # the release the pickles were trained and pickled with
LICENSE = "MIT"

# sha256 of the files inside alt_profanity_check-1.9.1-py3-none-any.whl
FILES = {
    "model.joblib": (620645, "aeafc04849d4d93db4721cf30a86ebf22085595294b8a07d51918e7fa98f538b"),
    "vectorizer.joblib": (324016, "19c5200dc6a41f026e0558e2f164f5fe8d8f58e502b46b37e4385037fcfa4831"),
}

# Sanity probes run at load time: (text, lower bound, upper bound) of the probability.
PROBES = [
    ("you are a stupid idiot", 0.9, 1.0),
    ("have a nice day", 0.0, 0.2),
    ("please review my pull request when you have a moment", 0.0, 0.3),
]


class ModelError(RuntimeError):
    pass


def data_dir():
    spec = importlib.util.find_spec("profanity_check")
    if spec is None or not spec.origin:
        raise ModelError(f"the {PACKAGE} package is not installed (run ./serve --setup-only)")
    return os.path.join(os.path.dirname(spec.origin), "data")


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


class ProfanityModel:
    """``predict(texts) -> list[float]``: probability that each text is offensive."""

    name = PACKAGE

    def __init__(self, directory=None):
        import joblib
        import numpy as np
        import sklearn
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.directory = directory or data_dir()
        self.package_version = _version(PACKAGE)
        self.sklearn_version = sklearn.__version__
        if self.package_version != PACKAGE_VERSION:
            raise ModelError(f"{PACKAGE} {self.package_version} is installed, expected {PACKAGE_VERSION}")
        if self.sklearn_version != SKLEARN_VERSION:
            raise ModelError(f"scikit-learn {self.sklearn_version} is installed; the {PACKAGE} "
                             f"{PACKAGE_VERSION} pickles need scikit-learn {SKLEARN_VERSION}")
        self.sha256 = {}
        for fname, (size, digest) in FILES.items():
            path = os.path.join(self.directory, fname)
            if not os.path.isfile(path):
                raise ModelError(f"model file missing: {path}")
            got = _sha256(path)
            if os.path.getsize(path) != size or got != digest:
                raise ModelError(f"{path} has sha256 {got}, expected {digest}: refusing to unpickle it")
            self.sha256[fname] = got

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            vectorizer = joblib.load(os.path.join(self.directory, "vectorizer.joblib"))
            model = joblib.load(os.path.join(self.directory, "model.joblib"))
        bad = [w for w in caught if "version" in str(w.message).lower()
               or type(w.message).__name__ == "InconsistentVersionWarning"]
        if bad:
            raise ModelError(f"scikit-learn warns while unpickling: {bad[0].message}")
        if not isinstance(vectorizer, TfidfVectorizer) or not isinstance(model, CalibratedClassifierCV):
            raise ModelError(f"unexpected pickled objects: {type(vectorizer)}, {type(model)}")
        if list(model.classes_) != [0, 1]:
            raise ModelError(f"unexpected classes {model.classes_!r}")
        self.vectorizer = vectorizer
        self.model = model
        self.vocabulary_size = len(vectorizer.vocabulary_)

        # Fast path: p = mean_i expit(-(A_i * (x . w_i + c_i) + B_i)) over the folds,
        # which is what CalibratedClassifierCV(method="sigmoid").predict_proba does
        # for a binary LinearSVC (its class-0 column is 1 - that, per fold).
        weights, intercepts, a, b = [], [], [], []
        for cc in model.calibrated_classifiers_:
            est = cc.estimator
            cal = cc.calibrators[0]
            weights.append(np.asarray(est.coef_, dtype=np.float64).ravel())
            intercepts.append(float(np.ravel(est.intercept_)[0]))
            a.append(float(cal.a_))
            b.append(float(cal.b_))
        self._np = np
        self._w = np.ascontiguousarray(np.stack(weights, axis=1))  # (features, folds)
        self._c = np.asarray(intercepts)
        self._a = np.asarray(a)
        self._b = np.asarray(b)
        self.folds = len(weights)
        self._lock = threading.Lock()  # the vectorizer is not documented as thread-safe

        texts = [t for t, _, _ in PROBES]
        fast = self.predict(texts)
        slow = self.predict_sklearn(texts)
        for (text, lo, hi), pf, ps in zip(PROBES, fast, slow):
            if abs(pf - ps) > 1e-9:
                raise ModelError(f"fast path disagrees with predict_proba on {text!r}: {pf} vs {ps}")
            if not lo <= pf <= hi:
                raise ModelError(f"model self-check failed: {text!r} scored {pf:.3f}, "
                                 f"expected {lo}..{hi}")

    def _transform(self, texts):
        with self._lock:
            return self.vectorizer.transform(texts)

    def predict(self, texts):
        """Offensive probability for each text (list of floats in [0, 1])."""
        if not texts:
            return []
        np = self._np
        x = self._transform(texts)
        df = np.asarray(x @ self._w) + self._c  # (n, folds)
        z = self._a * df + self._b
        p = 1.0 / (1.0 + np.exp(np.clip(z, -500.0, 500.0)))
        return [float(v) for v in p.mean(axis=1)]

    def predict_sklearn(self, texts):
        """The reference: scikit-learn's own predict_proba (slow per call)."""
        return [float(v) for v in self.model.predict_proba(self._transform(texts))[:, 1]]

    def describe(self):
        return {
            "name": PACKAGE,
            "version": self.package_version,
            "licence": LICENSE,
            "kind": "TF-IDF unigrams + 5 calibrated linear SVMs (scikit-learn)",
            "scikit_learn": self.sklearn_version,
            "vocabulary": self.vocabulary_size,
            "files_sha256": dict(self.sha256),
            "scores": ["harassment"],
        }
