"""The alt-profanity-check model: shipped in the wheel, sha256-checked, offline."""

import shutil
import subprocess
import warnings

import pytest

from conftest import HERE
from servicekit import NETGUARD, python

import profanity  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return profanity.ProfanityModel()


def test_model_files_ship_in_the_wheel(model):
    # Inside site-packages of this folder's .venv, not a download cache.
    assert "site-packages" in model.directory
    assert model.directory.endswith("profanity_check/data")
    assert set(model.sha256) == {"model.joblib", "vectorizer.joblib"}
    assert model.package_version == profanity.PACKAGE_VERSION
    assert model.sklearn_version == profanity.SKLEARN_VERSION
    assert model.folds == 5 and model.vocabulary_size > 10000


def test_loads_without_sklearn_version_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # InconsistentVersionWarning would raise here
        profanity.ProfanityModel()


def test_obvious_insult_scores_high_and_neutral_low(model):
    insult, neutral, chat = model.predict([
        "you are a stupid worthless idiot",
        "the meeting is moved to three o'clock",
        "thanks for the help with the deployment yesterday",
    ])
    assert insult > 0.95
    assert neutral < 0.2
    assert chat < 0.2


def test_fast_path_matches_sklearn_predict_proba(model):
    texts = [
        "", "hello", "you suck", "go to hell, you scum", "i will find you",
        "predict_prob() takes an array", "FUCK", "a b c d e f", "x" * 1000,
        "what a lovely day for a walk in the park", "die", "kill the process",
    ]
    fast = model.predict(texts)
    slow = model.predict_sklearn(texts)
    assert fast == pytest.approx(slow, abs=1e-9)


def test_refuses_modified_model_files(tmp_path, model):
    data = tmp_path / "data"
    shutil.copytree(model.directory, data)
    with open(data / "model.joblib", "ab") as f:
        f.write(b"\0")
    with pytest.raises(profanity.ModelError, match="sha256"):
        profanity.ProfanityModel(directory=str(data))


def test_refuses_missing_model_files(tmp_path):
    with pytest.raises(profanity.ModelError, match="missing"):
        profanity.ProfanityModel(directory=str(tmp_path))


def test_loads_offline_under_netguard(tmp_path):
    # Load and score under the audit hook that refuses any non-loopback network use.
    script = tmp_path / "load.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import profanity\n"
        "m = profanity.ProfanityModel()\n"
        "print('OK', round(m.predict(['you idiot'])[0], 3))\n"
    )
    out = subprocess.run([python(), str(NETGUARD), str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("OK ")
    assert "NETGUARD" not in out.stderr
