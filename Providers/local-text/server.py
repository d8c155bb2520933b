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
import dataclasses
import hashlib
import importlib.metadata
import json
import os
import platform
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
# This provider's modules, then Providers/common (the shared HTTP plumbing; not installed).
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "common")]

import httpkit  # noqa: E402  (stdlib only)
from httpkit import RequestError, env_int  # noqa: E402

SERVICE = "local-text"
VERSION = "1.0.0"
MODEL_ID = "sluice-local-text-1"  # the "model" every response names, whatever was asked for
MODERATIONS_PATH = "/v1/moderations"
HEALTH_PATH = "/healthz"

DEFAULT_PORT = 8092
DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024
DEFAULT_MAX_INPUTS = 64
DEFAULT_MAX_INPUT_CHARS = 32768
DEFAULT_MAX_TOTAL_CHARS = 262144

log = httpkit.make_log(SERVICE)
# OpenAI's envelope, with a "code" also on the plumbing's 413 and 405 answers.
WIRE_STYLE = dataclasses.replace(
    httpkit.OPENAI, codes={413: "request_too_large", 405: "method_not_allowed"})


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


class Handler(httpkit.JSONHandler):
    server_version = f"sluice-{SERVICE}/{VERSION}"
    style = WIRE_STYLE

    # ---- routing --------------------------------------------------------

    def route(self, method, path):
        if path == MODERATIONS_PATH:
            if method != "POST":
                return self.method_not_allowed("POST")
            return self._moderations()
        if path == HEALTH_PATH:
            if method not in ("GET", "HEAD"):
                return self.method_not_allowed("GET, HEAD")
            return self.send_json(200, self.server.health)
        return self.send_error_doc(
            404, f"Invalid URL ({method} {path[:200]})", code="not_found", close=self.has_body()
        )

    def _moderations(self):
        srv = self.server
        texts = self.read_request(parse_moderation_request, srv.max_inputs,
                                  srv.max_input_chars, srv.max_total_chars)
        if texts is None:
            return
        try:
            scores = srv.scorer.score(texts)
        except Exception as exc:  # model/library failure: report, keep serving
            log(f"error while scoring: {type(exc).__name__}: {exc}")
            self.send_error_doc(500, "Internal error while scoring the input.")
            return
        import scorer

        doc = moderation_response(scores, srv.categories, scorer.FLAG_THRESHOLD)
        flagged = sum(r["flagged"] for r in doc["results"])
        self.note = f"inputs={len(texts)} chars={sum(map(len, texts))} flagged={flagged}"
        self.send_json(200, doc)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    httpkit.add_listen_args(p, "LOCAL_TEXT", DEFAULT_PORT, DEFAULT_MAX_BODY_BYTES)
    p.add_argument("--max-inputs", type=int,
                   default=env_int("LOCAL_TEXT_MAX_INPUTS", DEFAULT_MAX_INPUTS),
                   help="maximum number of strings per request (default: 64)")
    p.add_argument("--max-input-chars", type=int,
                   default=env_int("LOCAL_TEXT_MAX_INPUT_CHARS", DEFAULT_MAX_INPUT_CHARS),
                   help="longer strings get HTTP 400 (default: 32768 characters)")
    p.add_argument("--max-total-chars", type=int,
                   default=env_int("LOCAL_TEXT_MAX_TOTAL_CHARS", DEFAULT_MAX_TOTAL_CHARS),
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
    httpd = httpkit.listen(args.host, args.port, Handler, log)
    if httpd is None:
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
    return httpkit.serve(httpd, f"POST {MODERATIONS_PATH}, GET {HEALTH_PATH}")


if __name__ == "__main__":
    sys.exit(main())
