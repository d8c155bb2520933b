"""End-to-end tests: the real service as a subprocess on a free loopback port, under
Providers/common/netguard.py (Providers/common/launchkit.py starts it)."""

import base64
import http.client
import json
import math
import re
import socket
import threading
from pathlib import Path

import pytest

import launchkit  # Providers/common, put on sys.path by tests/conftest.py

HERE = Path(__file__).resolve().parent.parent  # Providers/local-embed

EMBEDDINGS = "/v1/embeddings"
MODEL_ID = "all-MiniLM-L6-v2"
DIM = 384
MAX_BODY_BYTES = 16 * 1024 * 1024  # server defaults
MAX_INPUTS = 2048
MAX_INPUT_CHARS = 65536


# ---------------------------------------------------------------- fixtures


class Service(launchkit.Service):
    def embed_doc(self, payload, **kw):
        status, headers, doc = self.request("POST", EMBEDDINGS, payload, **kw)
        assert status == 200, doc
        assert headers["Content-Type"] == "application/json"
        return doc

    def embed(self, texts, **extra):
        doc = self.embed_doc({"model": MODEL_ID, "input": texts, **extra})
        return [d["embedding"] for d in doc["data"]]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    # server.py under Providers/common/netguard.py: any non-loopback network use fails.
    with launchkit.launch(HERE, tmp_path_factory, "--workers", "2",
                          service_class=Service) as svc:
        yield svc


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def norm(a):
    return math.sqrt(dot(a, a))


def cos(a, b):
    return dot(a, b) / (norm(a) * norm(b))


def max_diff(a, b):
    return max(abs(x - y) for x, y in zip(a, b))


def assert_envelope(doc, param=None, fragment=None, type_="invalid_request_error", code=None):
    assert list(doc) == ["error"], doc
    err = doc["error"]
    assert list(err) == ["message", "type", "param", "code"], err
    assert isinstance(err["message"], str) and err["message"]
    assert err["type"] == type_
    assert err["param"] == param
    assert err["code"] == code
    if fragment:
        assert fragment.lower() in err["message"].lower(), err["message"]


# ---------------------------------------------------------------- happy path


def test_healthz(service):
    status, headers, doc = service.request("GET", "/healthz")
    assert status == 200
    assert doc == {"status": "ok", "model": MODEL_ID, "dimension": DIM}
    assert headers["Content-Type"] == "application/json"


def test_models_list_and_model_object(service):
    status, _, doc = service.request("GET", "/v1/models")
    assert status == 200
    assert doc == {"object": "list", "data": [
        {"id": MODEL_ID, "object": "model", "created": 1630281600, "owned_by": "sentence-transformers"}]}
    status, _, doc = service.request("GET", f"/v1/models/{MODEL_ID}")
    assert status == 200 and doc["id"] == MODEL_ID and doc["object"] == "model"
    status, _, doc = service.request("GET", "/v1/models/text-embedding-3-small")
    assert status == 404
    assert_envelope(doc, param="model", code="model_not_found", fragment="does not exist")


def test_exact_response_shape(service):
    doc = service.embed_doc({"model": "text-embedding-3-small", "input": ["hello world", "Hi!"]})
    assert list(doc) == ["object", "data", "model", "usage"]
    assert doc["object"] == "list"
    assert doc["model"] == MODEL_ID  # whatever was asked for, the served model is reported
    assert doc["usage"] == {"prompt_tokens": 4 + 4, "total_tokens": 4 + 4}  # [CLS] hello world [SEP]; [CLS] hi ! [SEP]
    assert len(doc["data"]) == 2
    for i, item in enumerate(doc["data"]):
        assert list(item) == ["object", "index", "embedding"]
        assert item["object"] == "embedding" and item["index"] == i
        emb = item["embedding"]
        assert len(emb) == DIM and all(type(x) is float for x in emb)
        assert abs(norm(emb) - 1.0) < 1e-5


def test_string_input_equals_one_element_list(service):
    doc = service.embed_doc({"model": MODEL_ID, "input": "A single string"})
    assert len(doc["data"]) == 1 and doc["data"][0]["index"] == 0
    assert doc["usage"]["prompt_tokens"] == 5
    assert doc["data"][0]["embedding"] == service.embed(["A single string"])[0]


def test_model_may_be_any_string_or_absent(service):
    a = service.embed_doc({"model": "whatever-you-like", "input": "x"})
    b = service.embed_doc({"input": "x"})
    c = service.embed_doc({"model": "", "input": "x", "user": "someone", "extra_field": [1, 2]})
    assert a == b == c
    assert a["model"] == MODEL_ID


def test_batch_and_single_give_the_same_vectors(service):
    texts = ["Short.", "How do I reset my password?", " ".join(["long"] * 300), "",
             "Emoji 😀 and ünïcödé", "I forgot my login credentials"]
    together = service.embed(texts)
    for text, vec in zip(texts, together):
        (single,) = service.embed([text])
        assert max_diff(single, vec) < 1e-5, text
        assert len(vec) == DIM and abs(norm(vec) - 1.0) < 1e-5


def test_semantic_sanity(service):
    food, bread, horse, reset, forgot, weather = service.embed([
        "A man is eating food.", "A man is eating a piece of bread.", "A man is riding a horse.",
        "How do I reset my password?", "I forgot my login credentials", "The weather is nice today"])
    assert cos(food, bread) > cos(food, horse) + 0.2
    assert cos(reset, forgot) > cos(reset, weather) + 0.2


def test_published_similarity_matrix_over_http(service):
    # sentence-transformers documentation (quickstart) for all-MiniLM-L6-v2.
    e = service.embed(["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."])
    expected = [[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]]
    for i in range(3):
        for j in range(3):
            assert abs(dot(e[i], e[j]) - expected[i][j]) < 6e-4, (i, j)


def test_base64_encoding_format(service):
    import struct

    texts = ["hello world", "second text"]
    floats = service.embed(texts, encoding_format="float")
    doc = service.embed_doc({"model": MODEL_ID, "input": texts, "encoding_format": "base64"})
    for item, ref in zip(doc["data"], floats):
        assert isinstance(item["embedding"], str)
        raw = base64.b64decode(item["embedding"], validate=True)
        assert len(raw) == 4 * DIM
        assert list(struct.unpack(f"<{DIM}f", raw)) == ref  # same float32 values, exactly
    assert service.embed(texts, encoding_format=None) == floats


def test_dimensions_equal_to_384_is_accepted(service):
    assert service.embed(["x"], dimensions=DIM) == service.embed(["x"])


def test_empty_and_whitespace_strings_are_embedded(service):
    doc = service.embed_doc({"model": MODEL_ID, "input": ["", "   "]})
    a, b = (d["embedding"] for d in doc["data"])
    assert a == b and abs(norm(a) - 1.0) < 1e-5
    assert doc["usage"]["prompt_tokens"] == 4  # [CLS] [SEP] twice


def test_long_input_is_truncated_and_counted_as_256_tokens(service):
    text = "word " * 5000
    doc = service.embed_doc({"model": MODEL_ID, "input": [text, text + " tail"]})
    assert doc["usage"]["prompt_tokens"] == 512
    a, b = (d["embedding"] for d in doc["data"])
    assert max_diff(a, b) < 1e-6


def test_maximum_number_of_inputs_keeps_order(service):
    texts = [f"message number {i}" for i in range(MAX_INPUTS)]
    doc = service.embed_doc({"model": MODEL_ID, "input": texts}, timeout=600)
    assert [d["index"] for d in doc["data"]] == list(range(MAX_INPUTS))
    for i in (0, 1, 777, MAX_INPUTS - 1):
        assert max_diff(doc["data"][i]["embedding"], service.embed([texts[i]])[0]) < 1e-5


def test_input_of_exactly_the_character_limit_is_accepted(service):
    doc = service.embed_doc({"model": MODEL_ID, "input": "a" * MAX_INPUT_CHARS})
    assert len(doc["data"]) == 1


def test_unicode_and_control_characters(service):
    texts = ["日本語のテキスト", "مرحبا بالعالم", "\u0000\u0001\u202e", "a\ud800b", "\ufeff", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"]
    body = json.dumps({"model": MODEL_ID, "input": texts}).encode()  # \ud800 sent as a JSON escape
    status, _, doc = service.request("POST", EMBEDDINGS, body)
    assert status == 200, doc
    for d in doc["data"]:
        assert abs(norm(d["embedding"]) - 1.0) < 1e-5


def test_authorization_header_and_query_are_ignored_and_never_logged(service):
    status, _, doc = service.request(
        "POST", EMBEDDINGS + "?api-version=2024-01-01&key=not-a-real-key",
        {"model": MODEL_ID, "input": "hi"},
        headers={"Authorization": "Bearer sk-not-a-real-token"},
    )
    assert status == 200 and len(doc["data"]) == 1
    log = service.log_text()
    assert "not-a-real-key" not in log and "sk-not-a-real-token" not in log


def test_chunked_body_is_accepted(service):
    body = json.dumps({"model": MODEL_ID, "input": ["chunked body"] * 20}).encode()
    conn = http.client.HTTPConnection(service.host, service.port, timeout=60)
    try:
        conn.request("POST", EMBEDDINGS, body=iter([body[:100], body[100:]]),
                     headers={"Content-Type": "application/json"}, encode_chunked=True)
        resp = conn.getresponse()
        doc = json.loads(resp.read())
    finally:
        conn.close()
    assert resp.status == 200
    assert len(doc["data"]) == 20


def test_keep_alive_connection_serves_several_requests(service):
    conn = http.client.HTTPConnection(service.host, service.port, timeout=60)
    try:
        for i in range(3):
            conn.request("POST", EMBEDDINGS, body=json.dumps({"model": MODEL_ID, "input": f"n{i}"}),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200
            assert len(json.loads(resp.read())["data"]) == 1
        conn.request("GET", "/healthz")
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read())["status"] == "ok"
    finally:
        conn.close()


def test_concurrent_clients(service):
    texts = [f"concurrent message {i}" for i in range(8)]
    expected = service.embed(texts)
    results, errors = [], []

    def client(k):
        try:
            for i in range(len(texts)):
                j = (i + k) % len(texts)
                results.append((j, service.embed([texts[j]])[0]))
            results.append((None, service.embed(texts)))
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert len(results) == 4 * (len(texts) + 1)
    for j, vec in results:
        if j is None:
            for a, b in zip(vec, expected):
                assert max_diff(a, b) < 1e-5
        else:
            assert max_diff(vec, expected[j]) < 1e-5


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "body,param,fragment",
    [
        (b"this is not json", None, "parse the JSON"),
        (b"", None, "parse the JSON"),
        (b"\xff\xfe\x00garbage", None, "parse the JSON"),
        (b"[" * 200000 + b"]" * 200000, None, "parse the JSON"),  # deep enough for RecursionError
        (b'{"input": "x", ', None, "parse the JSON"),
        (b"[1, 2, 3]", None, "JSON object"),
        (b'"just a string"', None, "JSON object"),
        (b"{}", "input", "required"),
        (b'{"model": "m"}', "input", "required"),
        (b'{"model": "m", "input": null}', "input", "required"),
        (b'{"model": "m", "input": 123}', "input", "string or an array"),
        (b'{"model": "m", "input": {"text": "x"}}', "input", "string or an array"),
        (b'{"model": "m", "input": true}', "input", "string or an array"),
        (b'{"model": "m", "input": []}', "input", "empty"),
        (b'{"model": "m", "input": [1, 2, 3]}', "input", "token arrays"),
        (b'{"model": "m", "input": [[1, 2], [3]]}', "input", "token arrays"),
        (b'{"model": "m", "input": ["ok", 5]}', "input", "input[1]"),
        (b'{"model": "m", "input": ["ok", null]}', "input", "input[1] must be a string, got null"),
        (b'{"model": "m", "input": ["ok", true]}', "input", "input[1] must be a string"),
        (b'{"model": "m", "input": ["ok", {"a": 1}]}', "input", "input[1] must be a string"),
        (b'{"model": 5, "input": "x"}', "model", "string"),
        (b'{"model": ["m"], "input": "x"}', "model", "string"),
        (b'{"model": "m", "input": "x", "encoding_format": "binary"}', "encoding_format", "base64"),
        (b'{"model": "m", "input": "x", "encoding_format": 1}', "encoding_format", "encoding_format"),
        (b'{"model": "m", "input": "x", "dimensions": 256}', "dimensions", "384"),
        (b'{"model": "m", "input": "x", "dimensions": "384"}', "dimensions", "384"),
        (b'{"model": "m", "input": "x", "dimensions": true}', "dimensions", "384"),
    ],
)
def test_bad_requests_are_400_with_openai_envelope(service, body, param, fragment):
    status, headers, doc = service.request("POST", EMBEDDINGS, body)
    assert status == 400, doc
    assert headers["Content-Type"] == "application/json"
    assert_envelope(doc, param=param, fragment=fragment)


def test_too_many_inputs_is_400(service):
    status, _, doc = service.request("POST", EMBEDDINGS, {"model": MODEL_ID, "input": ["x"] * (MAX_INPUTS + 1)})
    assert status == 400
    assert_envelope(doc, param="input", fragment=str(MAX_INPUTS))


def test_input_over_the_character_limit_is_400(service):
    status, _, doc = service.request(
        "POST", EMBEDDINGS, {"model": MODEL_ID, "input": ["fine", "a" * (MAX_INPUT_CHARS + 1)]})
    assert status == 400
    assert_envelope(doc, param="input", fragment=f"input[1] is {MAX_INPUT_CHARS + 1} characters")


def test_body_over_cap_is_413_without_reading_it(service):
    with socket.create_connection((service.host, service.port), timeout=30) as sock:
        sock.sendall(
            (
                f"POST {EMBEDDINGS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
            ).encode()
        )
        sock.sendall(b'{"input": [')
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), head
    assert_envelope(json.loads(body), fragment="exceeds the limit")


def test_chunked_body_over_cap_is_413(service):
    with socket.create_connection((service.host, service.port), timeout=30) as sock:
        sock.sendall(
            (
                f"POST {EMBEDDINGS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Transfer-Encoding: chunked\r\n\r\n{MAX_BODY_BYTES + 1:x}\r\n"
            ).encode()
        )
        sock.sendall(b'{"input": [')
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), head
    assert_envelope(json.loads(body), fragment="exceeds the limit")


def test_missing_content_length_is_411(service):
    with socket.create_connection((service.host, service.port), timeout=30) as sock:
        sock.sendall(f"POST {EMBEDDINGS} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 411"), head
    assert_envelope(json.loads(body), fragment="Content-Length")


@pytest.mark.parametrize(
    "method,path,allow",
    [("GET", EMBEDDINGS, "POST"), ("PUT", EMBEDDINGS, "POST"), ("DELETE", EMBEDDINGS, "POST"),
     ("PATCH", EMBEDDINGS, "POST"), ("POST", "/v1/models", "GET, HEAD"),
     ("DELETE", f"/v1/models/{MODEL_ID}", "GET, HEAD"), ("POST", "/healthz", "GET, HEAD")],
)
def test_wrong_method_is_405(service, method, path, allow):
    status, headers, doc = service.request(method, path, b"{}" if method != "GET" else None)
    assert status == 405
    assert headers["Allow"] == allow
    assert_envelope(doc, fragment="not allowed")


@pytest.mark.parametrize(
    "method,path",
    [("GET", "/"), ("POST", "/v1/embedding"), ("POST", "/embeddings"), ("POST", "/v1/embeddings/x"),
     ("POST", "/v1/chat/completions"), ("GET", "/v2/models")],
)
def test_unknown_path_is_404(service, method, path):
    status, _, doc = service.request(method, path, b"{}" if method == "POST" else None)
    assert status == 404
    assert_envelope(doc, fragment="Invalid URL")


def test_head_healthz_has_no_body(service):
    conn = http.client.HTTPConnection(service.host, service.port, timeout=10)
    try:
        conn.request("HEAD", "/healthz")
        resp = conn.getresponse()
        assert resp.status == 200 and resp.read() == b""
        assert int(resp.getheader("Content-Length")) > 0
    finally:
        conn.close()


def test_service_survives_bad_input_and_logs_each_request(service):
    # Malformed request line, binary junk, a truncated body, an abrupt disconnect.
    for junk in (b"GARBAGE\r\n\r\n", b"\x00\x01\x02\xff" * 100 + b"\r\n\r\n",
                 f"POST {EMBEDDINGS} HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{{\"inp".encode(),
                 f"POST {EMBEDDINGS} HTTP/1.1\r\n".encode(),
                 f"POST {EMBEDDINGS} HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".encode()):
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
    assert len(service.embed(["still alive"])) == 1
    assert service.proc.poll() is None
    pattern = r" POST /v1/embeddings 200 \d+B [0-9.]+ms inputs=1 tokens=4 format=float"
    log = service.wait_log(pattern)  # the line follows the response
    assert re.search(pattern, log)
    assert re.search(r" GET /healthz 200 ", log)
    assert re.search(r" GET /a\?b\?c\?\[31m 404 ", log)
    assert all(line.startswith("20") for line in log.splitlines())  # one line per request
    assert "Traceback" not in log
    assert "NETGUARD" not in log  # no Python code in the service tried the network
