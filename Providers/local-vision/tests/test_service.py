"""End-to-end tests: the real service as a subprocess on a free loopback port.

Uses only the non-explicit fixture photos in <repo>/../shared/fixtures/images/photos
and synthetic data (no nude images anywhere).
"""

import base64
import http.client
import json
import re
import socket
import threading

import pytest

from servicekit import ANNOTATE, HERE, launch, photo_paths

FEATURES = [{"type": "SAFE_SEARCH_DETECTION"}]
LIKELIHOODS = {"UNKNOWN", "VERY_UNLIKELY", "UNLIKELY", "POSSIBLE", "LIKELY", "VERY_LIKELY"}
SAFE_ADULT = {"VERY_UNLIKELY", "UNLIKELY"}
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # server default
MAX_BODY_BYTES = 40 * 1024 * 1024  # server default


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    # NudeNet alone (--models nudenet), under Providers/common/netguard.py; the default models
    # (open_nsfw,image_safety) are tested by test_service_models.py.
    with launch(tmp_path_factory, "--models", "nudenet") as svc:
        yield svc


def b64(data):
    return base64.b64encode(data).decode("ascii")


def req(content=None, features=FEATURES, **extra):
    image = {} if content is None else {"content": content}
    r = {"image": image, **extra}
    if features is not None:
        r["features"] = features
    return r


@pytest.fixture(scope="module")
def good_image():
    return b64(photo_paths()[0].read_bytes())


def assert_classified(resp):
    assert list(resp) == ["safeSearchAnnotation"], resp
    ann = resp["safeSearchAnnotation"]
    assert set(ann) == {"adult", "spoof", "medical", "violence", "racy"}
    assert all(v in LIKELIHOODS for v in ann.values()), ann
    assert ann["violence"] == ann["medical"] == ann["spoof"] == "UNKNOWN"
    assert ann["adult"] != "UNKNOWN"  # adult is always filled by this provider
    return ann


def assert_safe_photo(resp):
    ann = assert_classified(resp)
    assert ann["adult"] in SAFE_ADULT, ann


def assert_image_error(resp, fragment=None):
    assert list(resp) == ["error"], resp
    err = resp["error"]
    assert err["code"] == 3
    assert err["status"] == "INVALID_ARGUMENT"
    assert isinstance(err["message"], str) and err["message"]
    if fragment:
        assert fragment.lower() in err["message"].lower(), err["message"]


def assert_envelope(doc, code, status):
    assert list(doc) == ["error"], doc
    assert doc["error"]["code"] == code
    assert doc["error"]["status"] == status
    assert doc["error"]["message"]


# ---------------------------------------------------------------- tests


def test_healthz(service):
    status, headers, doc = service.request("GET", "/healthz")
    assert status == 200
    assert doc == {
        "status": "ok",
        "model": "nudenet-320n",
        "models": [{"id": "nudenet", "model": "nudenet-320n", "package": "nudenet",
                    "version": "3.4.2", "license": "AGPL-3.0", "fields": ["adult", "racy"]}],
    }
    assert headers["Content-Type"].startswith("application/json")
    assert "NETGUARD" not in service.log_text()


def test_all_photos_in_one_call_and_individually(service):
    paths = photo_paths()
    contents = [b64(p.read_bytes()) for p in paths]
    batch = []
    for i in range(0, len(contents), 16):  # Google's (and our) 16 images per call
        batch += service.annotate([req(c) for c in contents[i:i + 16]])
    for path, resp in zip(paths, batch):
        assert_safe_photo(resp)
    for path, content, from_batch in zip(paths, contents, batch):
        (single,) = service.annotate([req(content)])
        assert_safe_photo(single)
        assert single == from_batch, path.name  # deterministic, order preserved


def test_per_image_errors_do_not_affect_good_images(service, good_image):
    text_file = (HERE / "mapping.py").read_bytes()
    responses = service.annotate(
        [
            req(good_image),
            req("this is *not* base64!"),
            req(b64(text_file)),
            req(None),
            req(""),
            req(good_image, features=[{"type": "LABEL_DETECTION"}]),
            req(good_image, features=None),
            req(None, **{"image": {"source": {"imageUri": "https://example.invalid/a.jpg"}}}),
            "not an object",
            req(12345),
            req(b64(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)),  # PNG signature, garbage after
            req(good_image),
        ]
    )
    assert_classified(responses[0])
    assert_image_error(responses[1], "base64")
    assert_image_error(responses[2], "decode")
    assert_image_error(responses[3], "content")
    assert_image_error(responses[4], "empty")
    assert_image_error(responses[5], "SAFE_SEARCH_DETECTION")
    assert_image_error(responses[6], "SAFE_SEARCH_DETECTION")
    assert_image_error(responses[7], "image.source")
    assert_image_error(responses[8], "object")
    assert_image_error(responses[9], "base64")
    assert_image_error(responses[10], "decode")
    assert responses[11] == responses[0]


def test_oversize_image_is_a_per_image_error(service, good_image):
    big = b64(b"\xff\xd8\xff" + b"\x00" * (MAX_IMAGE_BYTES - 2))  # limit + 1 bytes
    responses = service.annotate([req(good_image), req(big), req(good_image)])
    assert_classified(responses[0])
    assert_image_error(responses[1], "exceeds")
    assert responses[2] == responses[0]


def _png(width, height, rows):
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def test_decompression_bomb_is_a_per_image_error(service, good_image):
    side = 9000  # 81 megapixels > the 75 megapixel default, only ~80 KB as PNG
    bomb = _png(side, side, bytes(side * (side + 1)))
    assert len(bomb) < 1024 * 1024
    small = _png(64, 48, bytes(48 * 65))  # same construction, small: decodes fine
    responses = service.annotate([req(b64(bomb)), req(good_image), req(b64(small))])
    assert_image_error(responses[0], "pixels")
    assert_classified(responses[1])
    assert_safe_photo(responses[2])


def test_other_features_alongside_safe_search_are_ignored(service, good_image):
    features = [{"type": "LABEL_DETECTION", "maxResults": 5}, {"type": "SAFE_SEARCH_DETECTION"}]
    (resp,) = service.annotate([req(good_image, features=features)])
    assert_classified(resp)


def test_base64_variants_are_accepted(service, good_image):
    raw = base64.b64decode(good_image)
    urlsafe_unpadded = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    wrapped = "\n".join(good_image[i:i + 76] for i in range(0, len(good_image), 76))
    responses = service.annotate([req(good_image), req(urlsafe_unpadded), req(wrapped)])
    assert responses[0] == responses[1] == responses[2]
    assert_classified(responses[0])


def test_synthetic_image_formats(service):
    """Grey, alpha, 16-bit, palette-free formats and tiny images all decode."""
    import cv2
    import numpy as np

    src = cv2.imread(str(photo_paths()[0]), cv2.IMREAD_COLOR)
    assert src is not None
    grey = cv2.cvtColor(src, cv2.COLOR_BGR2GRAY)
    bgra = cv2.cvtColor(src, cv2.COLOR_BGR2BGRA)
    deep = src.astype(np.uint16) * 257
    encoded = [
        cv2.imencode(".png", grey)[1],
        cv2.imencode(".png", bgra)[1],
        cv2.imencode(".png", deep)[1],
        cv2.imencode(".jpg", src)[1],
        cv2.imencode(".bmp", src)[1],
        cv2.imencode(".webp", src)[1],
        cv2.imencode(".tiff", src)[1],
        cv2.imencode(".png", np.zeros((1, 1, 3), np.uint8))[1],
        cv2.imencode(".png", np.full((2000, 30, 3), 200, np.uint8))[1],
    ]
    responses = service.annotate([req(b64(e.tobytes())) for e in encoded])
    for resp in responses:
        assert_safe_photo(resp)


def test_key_query_param_and_authorization_header_are_ignored(service, good_image):
    status, _, doc = service.request(
        "POST",
        ANNOTATE + "?key=not-a-real-key&alt=json",
        {"requests": [req(good_image)]},
        headers={"Authorization": "Bearer not-a-real-token"},
    )
    assert status == 200
    assert_classified(doc["responses"][0])
    status, _, doc = service.request("GET", "/healthz?key=not-a-real-key")
    assert status == 200
    assert "not-a-real-key" not in service.log_text()  # the key is never logged


def test_percent_encoded_colon_in_path(service, good_image):
    status, _, doc = service.request("POST", "/v1/images%3Aannotate", {"requests": [req(good_image)]})
    assert status == 200
    assert_classified(doc["responses"][0])


@pytest.mark.parametrize(
    "body",
    [
        b"this is not json",
        b"",
        b"\xff\xfe\x00garbage",
        b"[1, 2, 3]",
        b"{}",
        b'{"requests": {"image": {}}}',
        b'{"requests": []}',
        b'{"requests": "x"}',
        b"[" * 200000 + b"]" * 200000,  # nesting deep enough to hit RecursionError
    ],
)
def test_whole_request_errors_are_400(service, body):
    status, headers, doc = service.request("POST", ANNOTATE, body)
    assert status == 400
    assert headers["Content-Type"].startswith("application/json")
    assert_envelope(doc, 400, "INVALID_ARGUMENT")


def test_too_many_images_is_400(service):
    status, _, doc = service.request("POST", ANNOTATE, {"requests": [req("AAAA")] * 17})
    assert status == 400
    assert_envelope(doc, 400, "INVALID_ARGUMENT")
    assert "16" in doc["error"]["message"]


def test_body_over_cap_is_413_without_reading_it(service):
    with socket.create_connection((service.host, service.port), timeout=30) as sock:
        sock.sendall(
            (
                f"POST {ANNOTATE} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
            ).encode()
        )
        sock.sendall(b'{"requests": [')
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), head
    assert_envelope(json.loads(body), 413, "INVALID_ARGUMENT")


def test_chunked_body_is_accepted(service, good_image):
    body = json.dumps({"requests": [req(good_image)]}).encode()
    conn = http.client.HTTPConnection(service.host, service.port, timeout=60)
    try:
        conn.request("POST", ANNOTATE, body=iter([body[:1000], body[1000:]]),
                     headers={"Content-Type": "application/json"}, encode_chunked=True)
        resp = conn.getresponse()
        doc = json.loads(resp.read())
    finally:
        conn.close()
    assert resp.status == 200
    assert_classified(doc["responses"][0])


@pytest.mark.parametrize(
    "method,path",
    [("GET", ANNOTATE), ("PUT", ANNOTATE), ("DELETE", ANNOTATE), ("POST", "/healthz")],
)
def test_wrong_method_is_405(service, method, path):
    status, headers, doc = service.request(method, path, b"{}" if method != "GET" else None)
    assert status == 405
    assert "Allow" in headers
    assert doc["error"]["code"] == 405
    assert doc["error"]["message"]


@pytest.mark.parametrize("method,path", [("GET", "/"), ("POST", "/v1/images:annotateX"), ("GET", "/v1/files:annotate")])
def test_unknown_path_is_404(service, method, path):
    status, _, doc = service.request(method, path, b"{}" if method == "POST" else None)
    assert status == 404
    assert_envelope(doc, 404, "NOT_FOUND")


def test_keep_alive_connection_serves_several_requests(service, good_image):
    conn = http.client.HTTPConnection(service.host, service.port, timeout=60)
    try:
        for _ in range(3):
            conn.request("POST", ANNOTATE, body=json.dumps({"requests": [req(good_image)]}),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200
            assert_classified(json.loads(resp.read())["responses"][0])
    finally:
        conn.close()


def test_concurrent_clients(service):
    contents = [b64(p.read_bytes()) for p in photo_paths()]
    (expected,) = service.annotate([req(contents[0])])
    results, errors = [], []

    def client():
        try:
            for c in contents[:4]:
                results.append((c, service.annotate([req(c)])[0]))
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert len(results) == 16
    for c, resp in results:
        assert_safe_photo(resp)
        if c == contents[0]:
            assert resp == expected


def test_service_survives_bad_input_and_logs_each_request(service, good_image):
    # Malformed request line, binary junk, a truncated body, an abrupt disconnect.
    for junk in (b"GARBAGE\r\n\r\n", b"\x00\x01\x02\xff" * 100 + b"\r\n\r\n",
                 f"POST {ANNOTATE} HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{{\"requ".encode(),
                 f"POST {ANNOTATE} HTTP/1.1\r\n".encode()):
        with socket.create_connection((service.host, service.port), timeout=10) as sock:
            sock.sendall(junk)
            sock.shutdown(socket.SHUT_WR)
            try:
                while sock.recv(65536):
                    pass
            except OSError:
                pass
    status, _, _ = service.request("GET", "/a%0Ab%00c%1b[31m")  # control chars in the path
    assert status == 404
    assert service.proc.poll() is None
    status, _, doc = service.request("GET", "/healthz")
    assert status == 200 and doc["status"] == "ok"
    (resp,) = service.annotate([req(good_image)])
    assert_safe_photo(resp)
    assert service.proc.poll() is None
    pattern = r" POST /v1/images:annotate 200 \d+B [0-9.]+ms images=1 errors=0"
    log = service.wait_log(pattern)  # the line follows the response
    assert re.search(pattern, log)
    assert re.search(r" GET /healthz 200 ", log)
    assert re.search(r" GET /a\?b\?c\?\[31m 404 ", log)
    assert all(line.startswith("20") for line in log.splitlines())  # one line per request
    assert "Traceback" not in log
    assert "NETGUARD" not in log  # no Python code in the service tried the network
