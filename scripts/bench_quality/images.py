#!/usr/bin/env python3
"""Image model agreement on the shared benign photos (scripts/bench-quality's image part).

    python3 scripts/bench_quality/images.py [--models nudenet,open_nsfw,image_safety] [--images DIR ...]

Starts Providers/local-vision once per model on a free loopback port, sends every benign fixture image (the 8
photos, the orientation/ and exif-edge/ JPEGs: no people, no nudity, no violence) to images:annotate, and prints
per model the likelihoods it gave, how many images reach POSSIBLE or above (a false positive on these images),
and whether the adult models agree image by image under the standard policy (review at POSSIBLE, block at
LIKELY). Standard library only; only loopback traffic; each service is stopped before the next starts.
"""

import argparse
import base64
import http.client
import json
import re
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVE = REPO / "Providers" / "local-vision" / "serve"
IMAGES = REPO.parent / "shared" / "fixtures" / "images"
LEVELS = ["UNKNOWN", "VERY_UNLIKELY", "UNLIKELY", "POSSIBLE", "LIKELY", "VERY_LIKELY"]
SCORED = {"nudenet": ["adult", "racy"], "open_nsfw": ["adult", "racy"], "image_safety": ["violence"]}


def benign_images(folders):
    paths = []
    for folder in folders:
        paths += sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    return paths


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def decision(level):
    """The standard policy's action for a likelihood: block at LIKELY, review at POSSIBLE."""
    rank = LEVELS.index(level)
    return "block" if rank >= 4 else "review" if rank >= 3 else "approve" if rank >= 1 else "unknown"


def run_model(model, images):
    port = free_port()
    log = open(f"/tmp/bench-quality-vision-{model}.log", "w")
    proc = subprocess.Popen([str(SERVE), "--port", str(port), "--models", model], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(240):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None:
                sys.exit(f"images.py: local-vision --models {model} exited; see /tmp/bench-quality-vision-{model}.log")
            time.sleep(0.5)
        results = {}
        for path in images:
            body = json.dumps({"requests": [{"image": {"content": base64.b64encode(path.read_bytes()).decode()},
                                             "features": [{"type": "SAFE_SEARCH_DETECTION"}]}]})
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request("POST", "/v1/images:annotate", body=body, headers={"Content-Type": "application/json"})
            answer = json.loads(conn.getresponse().read())
            response = answer["responses"][0]
            if "error" in response:
                results[path.name] = {"error": response["error"].get("message", "error")}
            else:
                results[path.name] = response["safeSearchAnnotation"]
        return results
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="nudenet,open_nsfw,image_safety")
    parser.add_argument("--images", nargs="*", type=Path,
                        default=[IMAGES / "photos", IMAGES / "orientation", IMAGES / "exif-edge"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    images = benign_images(args.images)
    models = [m for m in args.models.split(",") if m]
    answers = {model: run_model(model, images) for model in models}
    report = {"images": len(images), "models": {}}
    for model in models:
        per = {}
        for category in SCORED[model]:
            levels = Counter(a.get(category, "UNKNOWN") for a in answers[model].values())
            flagged = sum(n for level, n in levels.items() if LEVELS.index(level) >= 3)
            per[category] = {"likelihoods": dict(levels), "possibleOrAbove": flagged}
        per["errors"] = sum(1 for a in answers[model].values() if "error" in a)
        report["models"][model] = per
    adult_models = [m for m in models if "adult" in SCORED[m]]
    if len(adult_models) >= 2:
        for category in ("adult", "racy"):
            same = sum(1 for path in images
                       if len({decision(answers[m][path.name].get(category, "UNKNOWN")) for m in adult_models}) == 1)
            report[f"{category}Agreement"] = {"models": adult_models, "sameDecision": same, "images": len(images)}
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return
    print(f"image models on {len(images)} benign fixture images (photos, orientation, exif-edge):")
    for model, per in report["models"].items():
        for category in SCORED[model]:
            levels = ", ".join(f"{level} {n}" for level, n in sorted(per[category]["likelihoods"].items(), key=lambda x: LEVELS.index(x[0])))
            print(f"  {model:13} {category:9} POSSIBLE or above: {per[category]['possibleOrAbove']}/{len(images)}  ({levels})"
                  + (f", errors {per['errors']}" if per["errors"] else ""))
    for category in ("adult", "racy"):
        if f"{category}Agreement" in report:
            a = report[f"{category}Agreement"]
            print(f"  {category} decision agreement ({' vs '.join(a['models'])}, standard policy): {a['sameDecision']}/{a['images']} images")


if __name__ == "__main__":
    main()
