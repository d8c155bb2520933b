"""End-to-end tests: the real service as a subprocess on a free loopback port,
under Providers/common/netguard.py (any non-loopback network use by its Python code fails)."""

import http.client
import json
import re
import socket
import subprocess
import threading
import time

import pytest

from servicekit import CATEGORIES, HERE, MODERATIONS, SERVE, UNSCORED, free_port, launch

MAX_INPUTS = 64  # server defaults
MAX_BODY_BYTES = 2 * 1024 * 1024
MAX_INPUT_CHARS = 32768
MAX_TOTAL_CHARS = 262144


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    with launch(tmp_path_factory) as svc:
        yield svc


def assert_result_shape(result):
    assert list(result) == ["flagged", "categories", "category_scores", "category_applied_input_types"]
    assert isinstance(result["flagged"], bool)
    for key in ("categories", "category_scores", "category_applied_input_types"):
        assert list(result[key]) == CATEGORIES, key  # all 13, OpenAI's order
    for cat in CATEGORIES:
        assert isinstance(result["categories"][cat], bool)
        score = result["category_scores"][cat]
        assert type(score) is float and 0.0 <= score <= 1.0  # noqa: E721 (never an int, never null)
        assert result["category_applied_input_types"][cat] == ["text"]
        assert result["categories"][cat] == (score >= 0.5)
    assert result["flagged"] == any(result["categories"].values())
    for cat in UNSCORED:
        assert result["category_scores"][cat] == 0.0


def assert_error(status, headers, doc, want_status, param=None, code=None):
    assert status == want_status, doc
    assert headers["Content-Type"] == "application/json"
    assert list(doc) == ["error"]
    err = doc["error"]
    assert list(err) == ["message", "type", "param", "code"]
    assert isinstance(err["message"], str) and err["message"]
    assert err["type"] == "invalid_request_error"
    assert err["param"] == param
    if code is not None:
        assert err["code"] == code
    return err


# ---------------------------------------------------------------- wire format


def test_single_string_input(service):
    doc = service.moderate("i will kill you")
    assert list(doc) == ["id", "model", "results"]
    assert re.fullmatch(r"modr-[0-9a-f]{32}", doc["id"])
    assert doc["model"] == "sluice-local-text-1"
    assert len(doc["results"]) == 1
    r = doc["results"][0]
    assert_result_shape(r)
    assert r["flagged"] is True
    assert r["categories"]["harassment/threatening"] is True
    assert r["category_scores"]["harassment/threatening"] == 0.9


def test_array_input_gives_one_result_per_input_in_order(service):
    texts = ["have a nice day", "kys", "i want to die", "immigrants are vermin", "", "thanks!"]
    doc = service.moderate(texts)
    assert len(doc["results"]) == len(texts)
    for r in doc["results"]:
        assert_result_shape(r)
    flagged = [r["flagged"] for r in doc["results"]]
    assert flagged == [False, True, True, True, False, False]
    assert doc["results"][1]["categories"]["self-harm"] is True
    assert doc["results"][2]["categories"]["self-harm/intent"] is True
    assert doc["results"][3]["categories"]["hate"] is True


def test_array_results_equal_single_results(service):
    texts = ["you're dead", "i'd kill for a coffee", "watch your back", "shoot me a message"]
    batch = service.moderate(texts)["results"]
    single = [service.moderate(t)["results"][0] for t in texts]
    assert batch == single


def test_ids_are_unique(service):
    assert service.moderate("a")["id"] != service.moderate("a")["id"]


def test_model_is_optional_and_any_string(service):
    for body in ({"input": "hi"}, {"model": None, "input": "hi"},
                 {"model": "text-moderation-latest", "input": "hi"}):
        status, _, doc = service.request("POST", MODERATIONS, body)
        assert status == 200 and doc["model"] == "sluice-local-text-1"


def test_multimodal_text_parts_are_one_input(service):
    parts = [{"type": "text", "text": "i know where"}, {"type": "text", "text": "you live"}]
    doc = service.moderate(parts)
    assert len(doc["results"]) == 1
    assert_result_shape(doc["results"][0])


def test_max_inputs_accepted(service):
    doc = service.moderate(["hello"] * MAX_INPUTS)
    assert len(doc["results"]) == MAX_INPUTS


def test_unicode_and_control_characters(service):
    doc = service.moderate(["ｋｙｓ", "\u0000\u0001 nul", "🙂" * 100, "é"])
    assert [r["flagged"] for r in doc["results"]] == [True, False, False, False]


def test_keep_alive_and_query_string(service):
    conn = http.client.HTTPConnection(service.host, service.port, timeout=30)
    try:
        for _ in range(3):
            conn.request("POST", MODERATIONS + "?x=1", body=json.dumps({"input": "hi"}),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200
            json.loads(resp.read())
    finally:
        conn.close()


def test_chunked_request_body(service):
    body = json.dumps({"input": ["kys", "hello"]}).encode()
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
    chunked += b"0\r\n\r\n"
    with socket.create_connection((service.host, service.port), timeout=30) as s:
        s.sendall(b"POST /v1/moderations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, payload = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert [r["flagged"] for r in json.loads(payload)["results"]] == [True, False]


def test_concurrent_requests(service):
    errors, results = [], []

    def worker(i):
        try:
            doc = service.moderate([f"message {i}", "i will find you"])
            results.append(doc["results"][1]["flagged"])
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [True] * 16


# ---------------------------------------------------------------- errors


def test_bad_json(service):
    status, headers, doc = service.request("POST", MODERATIONS, b"{not json")
    assert_error(status, headers, doc, 400, code="invalid_json")


def test_body_not_an_object(service):
    status, headers, doc = service.request("POST", MODERATIONS, b'["kys"]')
    assert_error(status, headers, doc, 400)


def test_missing_input(service):
    for body in ({"model": "x"}, {"input": None}):
        status, headers, doc = service.request("POST", MODERATIONS, body)
        assert_error(status, headers, doc, 400, param="input", code="missing_required_parameter")


@pytest.mark.parametrize("value", [42, 1.5, True, {"text": "x"}, [], ["ok", 3], ["ok", None],
                                   [["nested"]], [{"type": "text", "text": 5}],
                                   [{"type": "video"}]])
def test_wrong_input_types(service, value):
    status, headers, doc = service.request("POST", MODERATIONS, {"input": value})
    assert_error(status, headers, doc, 400, param="input")


def test_image_input_is_refused_clearly(service):
    body = {"input": [{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}}]}
    status, headers, doc = service.request("POST", MODERATIONS, body)
    err = assert_error(status, headers, doc, 400, param="input", code="unsupported_input_type")
    assert "text only" in err["message"]


def test_wrong_model_type(service):
    status, headers, doc = service.request("POST", MODERATIONS, {"model": 3, "input": "hi"})
    assert_error(status, headers, doc, 400, param="model")


def test_too_many_items(service):
    status, headers, doc = service.request("POST", MODERATIONS, {"input": ["a"] * (MAX_INPUTS + 1)})
    err = assert_error(status, headers, doc, 400, param="input", code="too_many_inputs")
    assert str(MAX_INPUTS) in err["message"]


def test_input_too_long(service):
    status, headers, doc = service.request("POST", MODERATIONS, {"input": "a" * (MAX_INPUT_CHARS + 1)})
    assert_error(status, headers, doc, 400, param="input", code="input_too_long")
    many = ["a" * 30000] * 9  # each fine, together over the per-request total
    status, headers, doc = service.request("POST", MODERATIONS, {"input": many})
    assert_error(status, headers, doc, 400, param="input", code="input_too_long")


def _raw_exchange(service, head, first_bytes):
    """Send a request head and the first bytes of a body, then read until the server closes."""
    with socket.create_connection((service.host, service.port), timeout=30) as sock:
        sock.sendall(head.encode() + first_bytes)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head, json.loads(body)


def test_oversize_body_is_413_without_reading_it(service):
    head, doc = _raw_exchange(
        service,
        f"POST {MODERATIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n", b'{"input": ["')
    assert head.startswith(b"HTTP/1.1 413"), head
    assert b"Connection: close" in head
    assert doc["error"]["code"] == "request_too_large"
    assert str(MAX_BODY_BYTES) in doc["error"]["message"]
    # The service is still fine afterwards.
    assert service.moderate("hello")["results"][0]["flagged"] is False


def test_oversize_chunked_body_is_413(service):
    head, doc = _raw_exchange(
        service,
        f"POST {MODERATIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Transfer-Encoding: chunked\r\n\r\n{MAX_BODY_BYTES + 1:x}\r\n", b'{"input": ["')
    assert head.startswith(b"HTTP/1.1 413"), head
    assert doc["error"]["type"] == "invalid_request_error"


def test_any_request_within_the_char_limits_fits_the_body_limit():
    # 262144 characters, each needing the longest JSON escape (\u0001 = 6 bytes).
    worst = json.dumps({"model": "omni-moderation-latest",
                        "input": ["\u0001" * (MAX_TOTAL_CHARS // MAX_INPUTS)] * MAX_INPUTS})
    assert len(worst.encode()) < MAX_BODY_BYTES


def test_unknown_path(service):
    for method, path in (("GET", "/"), ("POST", "/v1/moderation"), ("GET", "/v1/models"),
                         ("POST", "/v1/embeddings")):
        status, headers, doc = service.request(method, path, {"input": "x"} if method == "POST" else None)
        err = assert_error(status, headers, doc, 404, code="not_found")
        assert path in err["message"]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_wrong_method_on_moderations(service, method):
    status, headers, doc = service.request(method, MODERATIONS)
    assert_error(status, headers, doc, 405, code="method_not_allowed")
    assert headers["Allow"] == "POST"


def test_wrong_method_on_healthz(service):
    status, headers, doc = service.request("POST", "/healthz", {"x": 1})
    assert_error(status, headers, doc, 405)
    assert headers["Allow"] == "GET, HEAD"


def test_missing_content_length(service):
    with socket.create_connection((service.host, service.port), timeout=30) as s:
        s.sendall(b"POST /v1/moderations HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, payload = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 411")
    assert json.loads(payload)["error"]["type"] == "invalid_request_error"


def test_garbage_request_line(service):
    with socket.create_connection((service.host, service.port), timeout=30) as s:
        s.sendall(b"NOT A VALID REQUEST HTTP/1.1\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):  # the server closes after the error
            data += chunk
    assert data.startswith(b"HTTP/1.1 400") or data.startswith(b"HTTP/1.0 400")
    assert b'"error"' in data


# ---------------------------------------------------------------- healthz, logs


def test_healthz_lists_what_runs(service):
    status, headers, doc = service.request("GET", "/healthz")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert doc["status"] == "ok" and doc["service"] == "local-text"
    assert doc["model"] == "sluice-local-text-1" and doc["endpoint"] == MODERATIONS
    assert doc["flag_threshold"] == 0.5
    assert sorted(doc["categories"]["scored"] + doc["categories"]["unscored_always_zero"]) == sorted(CATEGORIES)
    assert doc["categories"]["unscored_always_zero"] == UNSCORED
    model, phrase_rules = doc["components"]
    assert model["name"] == "alt-profanity-check" and model["version"] == "1.9.1"
    assert model["licence"] == "MIT" and model["scikit_learn"] == "1.9.1"
    assert len(model["files_sha256"]["model.joblib"]) == 64
    assert phrase_rules["file"] == "rules/en.tsv" and phrase_rules["rules"] > 100
    assert phrase_rules["licence"].startswith("MIT")
    assert len(phrase_rules["sha256"]) == 64
    assert doc["runtime"]["scikit-learn"] == "1.9.1" and doc["runtime"]["numpy"]
    assert doc["limits"] == {"max_body_bytes": MAX_BODY_BYTES, "max_inputs": MAX_INPUTS,
                             "max_input_chars": MAX_INPUT_CHARS, "max_total_chars": MAX_TOTAL_CHARS}
    status, headers, body = service.request("HEAD", "/healthz")
    assert status == 200 and body is None


def test_log_has_one_line_per_request_and_no_netguard(service):
    service.moderate(["logged once"])
    pattern = r"POST /v1/moderations 200 \d+B [\d.]+ms inputs=1 chars=11 flagged=0"
    log = service.wait_log(pattern)
    assert re.search(pattern, log)
    assert "logged once" not in log  # message text is never logged
    assert "NETGUARD" not in log


# ---------------------------------------------------------------- start scripts


def test_serve_script_starts_on_a_free_loopback_port(tmp_path_factory):
    port = free_port()
    with launch(tmp_path_factory, "--port", str(port), "--host", "127.0.0.1", via_serve=True) as svc:
        assert svc.port == port and svc.host == "127.0.0.1"
        doc = svc.moderate(["i know where you live", "good morning"])
        assert [r["flagged"] for r in doc["results"]] == [True, False]


def test_serve_script_ipv6_loopback(tmp_path_factory):
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("no ::1 here")
    with launch(tmp_path_factory, "--port", "0", "--host", "::1", via_serve=True) as svc:
        assert svc.host == "::1"
        assert svc.moderate("hi")["results"][0]["flagged"] is False


def test_serve_setup_only_is_a_fast_no_op():
    t0 = time.monotonic()
    out = subprocess.run([str(SERVE), "--setup-only"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert time.monotonic() - t0 < 30
    assert "creating" not in out.stderr  # the venv was already there and current


def test_serve_help(tmp_path):
    out = subprocess.run([str(SERVE), "--help"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0
    assert "--setup-only" in out.stdout and "--max-inputs" in out.stdout and "8092" in out.stdout


def test_port_in_use_is_a_clear_error(tmp_path_factory):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        out = subprocess.run([str(SERVE), "--port", str(port)], capture_output=True, text=True,
                             timeout=120, cwd=str(HERE))
    assert out.returncode == 1
    assert "cannot listen on 127.0.0.1" in out.stderr


def test_bad_rules_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("rule\tnope\tkill you\n")
    out = subprocess.run([str(SERVE), "--port", "0", "--rules", str(bad)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 1
    assert "unknown tier 'nope'" in out.stderr
