#!/usr/bin/env python3
"""Offline text-moderation provider speaking OpenAI's moderation protocol (text only).

Start it with ``Providers/local-text/serve --port 8092`` (which prepares the
virtualenv); running ``python server.py`` directly needs the packages from
requirements.txt.

Endpoints
  POST /v1/moderations   OpenAI request/response format: {"input": "text"} or
                         {"input": ["a", "b", ...]} -> one result per string, in order.
  GET  /healthz          what runs: models, rule file, licences, versions, limits.

Scores come from the alt-profanity-check model (harassment) and the phrase rules
in rules/en.tsv (threats, self-harm, hate, ...), both loaded and checked before
the socket is bound, so /healthz answers only when scoring works. Nothing is
downloaded and no non-loopback address is contacted.
"""

import argparse
import hashlib
import importlib.metadata
import json
import os
import platform
import signal
import socket
import sys
import time
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SERVICE = "local-text"
VERSION = "1.0.0"
MODEL_ID = "sluice-local-text-1"  # the "model" every response names, whatever was asked for
MODERATIONS_PATH = "/v1/moderations"
HEALTH_PATH = "/healthz"

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8092
DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024
DEFAULT_MAX_INPUTS = 64
DEFAULT_MAX_INPUT_CHARS = 32768
DEFAULT_MAX_TOTAL_CHARS = 262144

# HTTP status -> OpenAI error "type".
_ERROR_TYPES = {500: "server_error", 503: "server_error"}


def log(msg):
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    try:
        sys.stderr.write(f"{stamp}Z {SERVICE}: {msg}\n")
        sys.stderr.flush()
    except Exception:  # never let logging take the service down
        pass


class RequestError(Exception):
    """A whole-request failure, reported as an HTTP error envelope."""

    def __init__(self, http_status, message, param=None, code=None, close=False):
        super().__init__(message)
        self.http_status = http_status
        self.message = message
        self.param = param
        self.code = code
        self.close = close


def error_envelope(http_status, message, param=None, code=None):
    return {
        "error": {
            "message": message,
            "type": _ERROR_TYPES.get(int(http_status), "invalid_request_error"),
            "param": param,
            "code": code,
        }
    }


def _describe(value):
    return {type(None): "null", bool: "a boolean", int: "a number", float: "a number",
            dict: "an object", list: "an array", str: "a string"}.get(type(value), type(value).__name__)


def parse_moderation_request(body, max_inputs, max_input_chars, max_total_chars):
    """Validate a request body. Returns the list of texts to score (one result each)."""
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RequestError(
            400,
            "We could not parse the JSON body of your request. (HINT: This likely means you "
            "aren't using your HTTP library correctly. The OpenAI API expects a JSON payload.)",
            code="invalid_json",
        ) from None
    if not isinstance(doc, dict):
        raise RequestError(400, f"The request body must be a JSON object, got {_describe(doc)}.")

    # "model" may be any string (or absent): there is one scorer here, and the
    # response always names it. A non-string is a client bug.
    model = doc.get("model")
    if model is not None and not isinstance(model, str):
        raise RequestError(400, f"'model' must be a string, got {_describe(model)}.", param="model",
                           code="invalid_type")

    if "input" not in doc or doc["input"] is None:
        raise RequestError(400, "'input' is a required property.", param="input",
                           code="missing_required_parameter")
    raw = doc["input"]
    if isinstance(raw, str):
        texts = [raw]
    elif isinstance(raw, list):
        if not raw:
            raise RequestError(400, "'input' must not be an empty array.", param="input",
                               code="invalid_value")
        if all(isinstance(item, dict) for item in raw):
            # OpenAI's multi-modal form: the parts together are ONE input (one result).
            parts = []
            for i, item in enumerate(raw):
                kind = item.get("type")
                if kind == "text":
                    if not isinstance(item.get("text"), str):
                        raise RequestError(400, f"input[{i}].text must be a string.", param="input",
                                           code="invalid_type")
                    parts.append(item["text"])
                elif kind == "image_url":
                    raise RequestError(
                        400, f"input[{i}]: image inputs are not supported by this provider "
                        "(text only; Sluice's images go to the vision provider).",
                        param="input", code="unsupported_input_type")
                else:
                    raise RequestError(400, f"input[{i}].type must be 'text', got "
                                       f"{json.dumps(kind)[:40]}.", param="input", code="invalid_value")
            texts = ["\n".join(parts)]
        else:
            if len(raw) > max_inputs:
                raise RequestError(
                    400, f"Too many inputs: {len(raw)} > {max_inputs} per request. "
                    "Split the input into several requests.", param="input", code="too_many_inputs")
            for i, item in enumerate(raw):
                if not isinstance(item, str):
                    raise RequestError(400, f"input[{i}] must be a string, got {_describe(item)}.",
                                       param="input", code="invalid_type")
            texts = raw
    else:
        raise RequestError(400, f"'input' must be a string or an array of strings, got "
                           f"{_describe(raw)}.", param="input", code="invalid_type")
    total = 0
    for i, text in enumerate(texts):
        if len(text) > max_input_chars:
            raise RequestError(400, f"input[{i}] is {len(text)} characters long; the limit is "
                               f"{max_input_chars} characters per input.", param="input",
                               code="input_too_long")
        total += len(text)
    if total > max_total_chars:
        raise RequestError(400, f"The inputs total {total} characters; the limit is "
                           f"{max_total_chars} per request. Split them into several requests.",
                           param="input", code="input_too_long")
    return texts


def moderation_response(scores_list, categories, threshold):
    results = []
    for scores in scores_list:
        results.append({
            "flagged": any(scores[c] >= threshold for c in categories),
            "categories": {c: scores[c] >= threshold for c in categories},
            "category_scores": {c: float(scores[c]) for c in categories},
            "category_applied_input_types": {c: ["text"] for c in categories},
        })
    return {"id": f"modr-{uuid.uuid4().hex}", "model": MODEL_ID, "results": results}


def _dist_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def health_document(scorer_obj, limits):
    import rules
    import scorer

    with open(scorer_obj.rules.path, "rb") as f:
        rules_sha = hashlib.sha256(f.read()).hexdigest()
    summary = scorer_obj.rules.summary()
    return {
        "status": "ok",
        "service": SERVICE,
        "version": VERSION,
        "model": MODEL_ID,
        "endpoint": MODERATIONS_PATH,
        "wire_format": "OpenAI moderation (text input only)",
        "flag_threshold": scorer.FLAG_THRESHOLD,
        "categories": {"scored": list(scorer.SCORED), "unscored_always_zero": list(scorer.UNSCORED)},
        "components": [
            scorer_obj.model.describe(),
            {
                "name": "phrase rules",
                "file": summary["file"],
                "sha256": rules_sha,
                "licence": "MIT (part of Sluice)",
                "rules": summary["rules"],
                "benign_rewrites": summary["benign_rewrites"],
                "context_patterns": summary["context_patterns"],
                "tiers": summary["tiers"],
                "scores": sorted({c for t in summary["tiers"].values() for c in t}),
                "discounts": {"negated": rules.NEGATED_FACTOR, "reported_or_quoted": rules.REPORTED_FACTOR,
                              "joking": rules.JOKE_FACTOR,
                              "joking_by_tier": summary["tier_joke_factors"],
                              "joking_exempt": list(rules.JOKE_EXEMPT)},
            },
        ],
        "runtime": {
            "python": platform.python_version(),
            **{name: _dist_version(name) for name in
               ("numpy", "scipy", "scikit-learn", "joblib", "threadpoolctl")},
            "licences": {"numpy": "BSD-3-Clause (+ bundled OpenBLAS BSD-3-Clause, GCC runtime "
                                  "GPL-3.0 with runtime exception)",
                         "scipy": "BSD-3-Clause (+ bundled libraries, see LICENSE-NOTE.md)",
                         "scikit-learn": "BSD-3-Clause", "joblib": "BSD-3-Clause",
                         "threadpoolctl": "BSD-3-Clause", "narwhals": "MIT",
                         "cloudpickle": "BSD-3-Clause"},
        },
        "limits": limits,
    }


class Handler(BaseHTTPRequestHandler):
    server_version = f"sluice-{SERVICE}/{VERSION}"
    protocol_version = "HTTP/1.1"
    timeout = 120  # seconds of socket inactivity before a connection is dropped
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls

    # ---- plumbing -------------------------------------------------------

    def version_string(self):
        return self.server_version

    def setup(self):
        super().setup()
        self._t0 = time.monotonic()
        self._note = ""

    def parse_request(self):
        self._t0 = time.monotonic()  # time from the request line, not idle keep-alive
        return super().parse_request()

    def log_request(self, code="-", size="-"):
        pass  # one line per request is written by _log_line instead

    def log_message(self, format, *args):
        pass

    def _path(self):
        return unquote(urlsplit(self.path).path)  # the query string is ignored

    def _log_line(self, status, nbytes):
        elapsed = (time.monotonic() - self._t0) * 1000.0
        client = self.client_address[0] if self.client_address else "-"
        method = getattr(self, "command", None) or "-"
        try:
            path = "".join(c if c.isprintable() else "?" for c in self._path()[:200])
        except Exception:
            path = "-"
        note = f" {self._note}" if self._note else ""
        log(f"{client} {method} {path} {status} {nbytes}B {elapsed:.1f}ms{note}")

    def _send_json(self, status, doc, close=False, extra_headers=()):
        payload = json.dumps(doc, separators=(",", ":")).encode("utf-8")
        try:
            self.send_response(int(status))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in extra_headers:
                self.send_header(name, value)
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if getattr(self, "command", None) != "HEAD":
                self.wfile.write(payload)
                self.wfile.flush()
        except OSError:
            self.close_connection = True
        self._log_line(int(status), len(payload))
        self._note = ""

    def _send_error_doc(self, status, message, param=None, code=None, close=False,
                        extra_headers=()):
        self._send_json(status, error_envelope(status, message, param, code), close,
                        extra_headers)

    def send_error(self, code, message=None, explain=None):
        # Used by BaseHTTPRequestHandler for malformed request lines, oversize
        # headers, etc.: answer in the same JSON envelope.
        try:
            reason = message or HTTPStatus(code).phrase
        except ValueError:
            reason = message or "Error"
        if len(reason) > 200:  # do not echo kilobytes of junk back
            reason = reason[:200] + "..."
        self._send_error_doc(code, reason, close=True)

    def _read_body(self, limit):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        length = self.headers.get("Content-Length")
        if "chunked" in te:
            return self._read_chunked(limit)
        if length is None:
            raise RequestError(411, "Content-Length header is required.", close=True)
        try:
            n = int(length)
            if n < 0:
                raise ValueError
        except ValueError:
            raise RequestError(400, "Invalid Content-Length header.", close=True) from None
        if n > limit:
            raise RequestError(
                413, f"Request payload size exceeds the limit: {limit} bytes.",
                code="request_too_large", close=True)
        data = self.rfile.read(n)
        if len(data) != n:
            raise RequestError(400, "Request body shorter than Content-Length.", close=True)
        return data

    def _read_chunked(self, limit):
        parts, total = [], 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
                if size < 0:
                    raise ValueError
            except ValueError:
                raise RequestError(400, "Malformed chunked request body.", close=True) from None
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # discard trailers
                return b"".join(parts)
            total += size
            if total > limit:
                raise RequestError(
                    413, f"Request payload size exceeds the limit: {limit} bytes.",
                    code="request_too_large", close=True)
            chunk = self.rfile.read(size)
            if len(chunk) != size:
                raise RequestError(400, "Truncated chunked request body.", close=True)
            parts.append(chunk)
            self.rfile.readline(8)  # CRLF after each chunk

    # ---- routing --------------------------------------------------------

    def _route(self, method):
        try:
            path = self._path()
            if path == MODERATIONS_PATH:
                if method != "POST":
                    return self._method_not_allowed("POST")
                return self._moderations()
            if path == HEALTH_PATH:
                if method not in ("GET", "HEAD"):
                    return self._method_not_allowed("GET, HEAD")
                return self._send_json(200, self.server.health)
            return self._send_error_doc(
                404, f"Invalid URL ({method} {path[:200]})", code="not_found", close=self._has_body()
            )
        except Exception as exc:  # never crash the handler thread on bad input
            log(f"unhandled error: {type(exc).__name__}: {exc}")
            try:
                self._send_error_doc(500, "Internal server error.", close=True)
            except Exception:
                self.close_connection = True

    def _has_body(self):
        return bool(self.headers.get("Content-Length") not in (None, "0")
                    or self.headers.get("Transfer-Encoding"))

    def _method_not_allowed(self, allow):
        self._send_error_doc(
            405,
            f"Method {self.command} not allowed for {self._path()[:200]}; allowed: {allow}.",
            code="method_not_allowed",
            close=self._has_body(),  # we do not read the body: drop the connection
            extra_headers=[("Allow", allow)],
        )

    def _moderations(self):
        srv = self.server
        try:
            body = self._read_body(srv.max_body_bytes)
            texts = parse_moderation_request(body, srv.max_inputs, srv.max_input_chars,
                                             srv.max_total_chars)
        except RequestError as err:
            self._send_error_doc(err.http_status, err.message, err.param, err.code,
                                 close=err.close)
            return
        try:
            scores = srv.scorer.score(texts)
        except Exception as exc:  # model/library failure: report, keep serving
            log(f"error while scoring: {type(exc).__name__}: {exc}")
            self._send_error_doc(500, "Internal error while scoring the input.")
            return
        import scorer

        doc = moderation_response(scores, srv.categories, scorer.FLAG_THRESHOLD)
        flagged = sum(r["flagged"] for r in doc["results"])
        self._note = f"inputs={len(texts)} chars={sum(map(len, texts))} flagged={flagged}"
        self._send_json(200, doc)

    def do_GET(self):
        self._route("GET")

    def do_HEAD(self):
        self._route("HEAD")

    def do_POST(self):
        self._route("POST")

    def do_PUT(self):
        self._route("PUT")

    def do_DELETE(self):
        self._route("DELETE")

    def do_PATCH(self):
        self._route("PATCH")

    def do_OPTIONS(self):
        self._route("OPTIONS")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        log(f"connection error from {client_address[0]}: {type(exc).__name__}: {exc}")


def _env_int(name, default):
    value = os.environ.get(name)
    return int(value) if value else default


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default=os.environ.get("LOCAL_TEXT_HOST", DEFAULT_HOST),
                   help="address to bind, default 127.0.0.1")
    p.add_argument("--port", type=int, default=_env_int("LOCAL_TEXT_PORT", DEFAULT_PORT),
                   help="TCP port, default 8092 (0 picks a free one; the ready line shows it)")
    p.add_argument("--max-body-bytes", type=int,
                   default=_env_int("LOCAL_TEXT_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES),
                   help="larger request bodies get HTTP 413 (default: 2 MiB)")
    p.add_argument("--max-inputs", type=int,
                   default=_env_int("LOCAL_TEXT_MAX_INPUTS", DEFAULT_MAX_INPUTS),
                   help="maximum number of strings per request (default: 64)")
    p.add_argument("--max-input-chars", type=int,
                   default=_env_int("LOCAL_TEXT_MAX_INPUT_CHARS", DEFAULT_MAX_INPUT_CHARS),
                   help="longer strings get HTTP 400 (default: 32768 characters)")
    p.add_argument("--max-total-chars", type=int,
                   default=_env_int("LOCAL_TEXT_MAX_TOTAL_CHARS", DEFAULT_MAX_TOTAL_CHARS),
                   help="more characters in one request get HTTP 400 (default: 262144); "
                        "bounds the time one request can take")
    p.add_argument("--rules", default=os.environ.get("LOCAL_TEXT_RULES"),
                   help="rules file (default: rules/en.tsv next to server.py)")
    args = p.parse_args(argv)
    for name in ("max_body_bytes", "max_inputs", "max_input_chars", "max_total_chars"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    t0 = time.monotonic()
    # One BLAS thread: each scoring call is a tiny sparse product. Before numpy loads.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    try:
        import rules
        import scorer

        scorer_obj = scorer.Scorer(rules_path=args.rules)
        scorer_obj.score(["warm-up", "i will find you"])  # first call allocates
    except Exception as exc:
        log(f"cannot load the scorer: {type(exc).__name__}: {exc}")
        return 1
    model = scorer_obj.model
    summary = scorer_obj.rules.summary()
    log(f"{model.name} {model.package_version} (scikit-learn {model.sklearn_version}, "
        f"{model.vocabulary_size} words, sha256-checked) and {summary['rules']} rules + "
        f"{summary['benign_rewrites']} benign rewrites from {scorer_obj.rules.path} "
        f"loaded in {time.monotonic() - t0:.2f}s")
    if ":" in args.host:  # an IPv6 literal such as ::1
        Server.address_family = socket.AF_INET6
    try:
        httpd = Server((args.host, args.port), Handler)
    except OSError as exc:
        log(f"cannot listen on {args.host}:{args.port}: {exc}")
        return 1
    limits = {"max_body_bytes": args.max_body_bytes, "max_inputs": args.max_inputs,
              "max_input_chars": args.max_input_chars, "max_total_chars": args.max_total_chars}
    httpd.scorer = scorer_obj
    httpd.categories = rules.CATEGORIES
    httpd.max_body_bytes = args.max_body_bytes
    httpd.max_inputs = args.max_inputs
    httpd.max_input_chars = args.max_input_chars
    httpd.max_total_chars = args.max_total_chars
    httpd.health = health_document(scorer_obj, limits)
    host, port = httpd.server_address[:2]
    if ":" in host:
        host = f"[{host}]"
    log(f"listening on http://{host}:{port} (POST {MODERATIONS_PATH}, GET {HEALTH_PATH})")

    def _stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    try:
        httpd.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        log("stopping")
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
