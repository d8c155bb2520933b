"""HTTP plumbing shared by the offline providers (stdlib only).

Each provider's server.py keeps its own endpoints, request parsing and models;
this module holds what was the same in all of them:

  make_log(service)     the one-line-per-event stderr logger ("<UTC>Z <service>: ...")
  RequestError          a whole-request failure, answered with the provider's error envelope
  OPENAI, GOOGLE        the two wire styles: envelope shape, Content-Type, message punctuation
  JSONHandler           BaseHTTPRequestHandler with JSON replies, body reading (Content-Length
                        or chunked, size-limited) handed to the provider's parser, one log
                        line per request, JSON answers to malformed requests, and a 500 for
                        anything a route raises
  Server                ThreadingHTTPServer (daemon threads, IPv6 literals, errors logged)
  add_listen_args       --host / --port / --max-body-bytes with <PREFIX>_* environment defaults
  listen, serve         bind (or log why not), print the ready line
                        "listening on http://HOST:PORT (...)", serve until SIGTERM or Ctrl-C

A provider subclasses JSONHandler, sets server_version, style and route(), and
adds Providers/common to sys.path from its own __file__ (nothing is installed).
"""

import json
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


def make_log(service):
    """A log(msg) that writes "<UTC time>Z <service>: <msg>" to stderr and never raises."""

    def log(msg):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        try:
            sys.stderr.write(f"{stamp}Z {service}: {msg}\n")
            sys.stderr.flush()
        except Exception:  # never let logging take the service down
            pass

    return log


class RequestError(Exception):
    """A whole-request failure, reported as an HTTP error envelope.

    Keyword fields beyond close (OpenAI style: param=, code=) go into the envelope."""

    def __init__(self, http_status, message, close=False, **fields):
        super().__init__(message)
        self.http_status = http_status
        self.message = message
        self.close = close
        self.fields = fields


# ---------------------------------------------------------------- wire styles

# HTTP status -> OpenAI error "type".
_OPENAI_ERROR_TYPES = {500: "server_error", 503: "server_error"}

# HTTP status -> google.rpc status name.
_GOOGLE_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    408: "DEADLINE_EXCEEDED",
    411: "INVALID_ARGUMENT",
    413: "INVALID_ARGUMENT",
    414: "INVALID_ARGUMENT",
    431: "INVALID_ARGUMENT",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
}


def openai_envelope(http_status, message, param=None, code=None):
    """{"error": {"message", "type", "param", "code"}} as OpenAI's API answers."""
    return {
        "error": {
            "message": message,
            "type": _OPENAI_ERROR_TYPES.get(int(http_status), "invalid_request_error"),
            "param": param,
            "code": code,
        }
    }


def google_envelope(http_status, message):
    """{"error": {"code", "message", "status"}} as Google APIs answer."""
    return {
        "error": {
            "code": int(http_status),
            "message": message,
            "status": _GOOGLE_STATUS_NAMES.get(int(http_status), "UNKNOWN"),
        }
    }


@dataclass(frozen=True)
class WireStyle:
    """How a provider's replies look where the plumbing (not an endpoint) answers."""

    envelope: object  # (http_status, message, **fields) -> the error document
    content_type: str
    full_stop: str  # ends the plumbing's own error messages
    path_echo_limit: object  # characters of the path echoed in a 405 message (None: all)
    codes: dict = field(default_factory=dict)  # {413 or 405: envelope "code"} for those errors


OPENAI = WireStyle(openai_envelope, "application/json", ".", 200)
GOOGLE = WireStyle(google_envelope, "application/json; charset=UTF-8", "", None)


# ---------------------------------------------------------------- handler


class JSONHandler(BaseHTTPRequestHandler):
    """Subclasses set server_version and style and define route(method, path).

    route() answers with send_json / send_error_doc / method_not_allowed and may
    read the body with read_request (or read_body, which raises RequestError);
    anything else it raises is logged and answered with a 500. Set self.note to add text to the
    request's log line."""

    server_version = "sluice-provider/1.0"
    style = OPENAI
    protocol_version = "HTTP/1.1"
    timeout = 120  # seconds of socket inactivity before a connection is dropped
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls

    def route(self, method, path):
        raise NotImplementedError

    # ---- plumbing -------------------------------------------------------

    def version_string(self):
        return self.server_version

    def setup(self):
        super().setup()
        self._t0 = time.monotonic()
        self.note = ""

    def parse_request(self):
        self._t0 = time.monotonic()  # time from the request line, not idle keep-alive
        return super().parse_request()

    def log_request(self, code="-", size="-"):
        pass  # one line per request is written by _log_line instead

    def log_message(self, format, *args):
        pass

    def url_path(self):
        return unquote(urlsplit(self.path).path)  # the query string is ignored

    def _log_line(self, status, nbytes):
        elapsed = (time.monotonic() - self._t0) * 1000.0
        client = self.client_address[0] if self.client_address else "-"
        method = getattr(self, "command", None) or "-"
        try:
            path = "".join(c if c.isprintable() else "?" for c in self.url_path()[:200])
        except Exception:
            path = "-"
        note = f" {self.note}" if self.note else ""
        self.server.log(f"{client} {method} {path} {status} {nbytes}B {elapsed:.1f}ms{note}")

    def send_json(self, status, doc, close=False, extra_headers=()):
        payload = json.dumps(doc, separators=(",", ":")).encode("utf-8")
        try:
            self.send_response(int(status))
            self.send_header("Content-Type", self.style.content_type)
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
        self.note = ""

    def send_error_doc(self, status, message, close=False, extra_headers=(), **fields):
        """The provider's error envelope; fields (e.g. param=, code=) go into it."""
        self.send_json(status, self.style.envelope(status, message, **fields), close,
                       extra_headers)

    def send_request_error(self, err):
        self.send_error_doc(err.http_status, err.message, close=err.close, **err.fields)

    def send_error(self, code, message=None, explain=None):
        # Used by BaseHTTPRequestHandler for malformed request lines, oversize
        # headers, etc.: answer in the same JSON envelope.
        try:
            reason = message or HTTPStatus(code).phrase
        except ValueError:
            reason = message or "Error"
        if len(reason) > 200:  # do not echo kilobytes of junk back
            reason = reason[:200] + "..."
        self.send_error_doc(code, reason, close=True)

    def _fail(self, status, message, **fields):
        raise RequestError(status, message + self.style.full_stop, close=True, **fields)

    def _too_large(self, limit):
        fields = {"code": self.style.codes[413]} if 413 in self.style.codes else {}
        raise RequestError(413, f"Request payload size exceeds the limit: {limit} bytes.",
                           close=True, **fields)

    def read_body(self, limit):
        """The request body (Content-Length or chunked), at most limit bytes, else RequestError."""
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        length = self.headers.get("Content-Length")
        if "chunked" in te:
            return self._read_chunked(limit)
        if length is None:
            self._fail(411, "Content-Length header is required")
        try:
            n = int(length)
            if n < 0:
                raise ValueError
        except ValueError:
            self._fail(400, "Invalid Content-Length header")
        if n > limit:
            self._too_large(limit)
        data = self.rfile.read(n)
        if len(data) != n:
            self._fail(400, "Request body shorter than Content-Length")
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
                self._fail(400, "Malformed chunked request body")
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # discard trailers
                return b"".join(parts)
            total += size
            if total > limit:
                self._too_large(limit)
            chunk = self.rfile.read(size)
            if len(chunk) != size:
                self._fail(400, "Truncated chunked request body")
            parts.append(chunk)
            self.rfile.readline(8)  # CRLF after each chunk

    def read_request(self, parse, *args):
        """parse(body, *args) for the body read within server.max_body_bytes, or None
        once a RequestError (from reading or from parse) has been answered."""
        try:
            return parse(self.read_body(self.server.max_body_bytes), *args)
        except RequestError as err:
            self.send_request_error(err)
            return None

    def has_body(self):
        return bool(self.headers.get("Content-Length") not in (None, "0")
                    or self.headers.get("Transfer-Encoding"))

    def method_not_allowed(self, allow):
        path = self.url_path()
        if self.style.path_echo_limit is not None:
            path = path[:self.style.path_echo_limit]
        fields = {"code": self.style.codes[405]} if 405 in self.style.codes else {}
        self.send_error_doc(
            405,
            f"Method {self.command} not allowed for {path}; allowed: {allow}{self.style.full_stop}",
            close=self.has_body(),  # we do not read the body: drop the connection
            extra_headers=[("Allow", allow)],
            **fields,
        )

    # ---- dispatch -------------------------------------------------------

    def _dispatch(self, method):
        try:
            self.route(method, self.url_path())
        except Exception as exc:  # never crash the handler thread on bad input
            self.server.log(f"unhandled error: {type(exc).__name__}: {exc}")
            try:
                self.send_error_doc(500, "Internal server error" + self.style.full_stop,
                                    close=True)
            except Exception:
                self.close_connection = True

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_OPTIONS(self):
        self._dispatch("OPTIONS")


# ---------------------------------------------------------------- server


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address, handler, log):
        self.log = log
        if ":" in address[0]:  # an IPv6 literal such as ::1
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        self.log(f"connection error from {client_address[0]}: {type(exc).__name__}: {exc}")


def env_int(name, default):
    value = os.environ.get(name)
    return int(value) if value else default


def add_listen_args(parser, env_prefix, default_port, default_max_body_bytes):
    """--host, --port and --max-body-bytes, defaulting to <env_prefix>_HOST / _PORT /
    _MAX_BODY_BYTES from the environment, else 127.0.0.1 / default_port / the given size."""
    parser.add_argument("--host", default=os.environ.get(f"{env_prefix}_HOST", "127.0.0.1"),
                        help="address to bind, default 127.0.0.1")
    parser.add_argument("--port", type=int, default=env_int(f"{env_prefix}_PORT", default_port),
                        help=f"TCP port, default {default_port} (0 picks a free one; "
                             "the ready line shows it)")
    parser.add_argument("--max-body-bytes", type=int,
                        default=env_int(f"{env_prefix}_MAX_BODY_BYTES", default_max_body_bytes),
                        help="larger request bodies get HTTP 413 "
                             f"(default: {default_max_body_bytes // (1024 * 1024)} MiB)")


def listen(host, port, handler, log):
    """A bound Server, or None once the reason it could not bind is logged."""
    try:
        return Server((host, port), handler, log)
    except OSError as exc:
        log(f"cannot listen on {host}:{port}: {exc}")
        return None


def serve(httpd, endpoints):
    """Log "listening on http://HOST:PORT (endpoints)", serve until SIGTERM or
    Ctrl-C, close the socket. Returns the exit status (0)."""

    def _stop(signum, frame):
        # shutdown() waits for serve_forever (this thread) to return, so it runs in
        # another thread. Raising KeyboardInterrupt here instead can be lost: a signal
        # that lands in a weakref callback or finalizer has its exception ignored.
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)  # before the ready line: a client may stop us at once
    host, port = httpd.server_address[:2]
    if ":" in host:
        host = f"[{host}]"
    httpd.log(f"listening on http://{host}:{port} ({endpoints})")
    try:
        try:
            httpd.serve_forever(poll_interval=0.5)
        except KeyboardInterrupt:  # Ctrl-C
            pass
        httpd.log("stopping")
    finally:
        httpd.server_close()
    return 0
