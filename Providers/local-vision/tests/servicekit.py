"""Start the real service (server.py) as a subprocess for the tests; shared by the test modules."""

import contextlib
import http.client
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent  # Providers/local-vision
SERVER = HERE / "server.py"
NETGUARD = Path(__file__).resolve().parent / "netguard.py"
VENV_PY = HERE / ".venv" / "bin" / "python"
ANNOTATE = "/v1/images:annotate"
READY = re.compile(r"listening on http://([0-9.]+):(\d+)")
REPO = HERE.parent.parent  # the repo root
PHOTOS = Path(os.environ.get("LOCAL_VISION_PHOTOS", REPO.parent / "shared" / "fixtures" / "images" / "photos"))


FIXTURE_IMAGES = PHOTOS.parent  # <repo>/../shared/fixtures/images
# Benign JPEGs next to the photos (EXIF orientation / EXIF edge cases; no violence, no nudity).
BENIGN_EXTRA_DIRS = ("orientation", "exif-edge")


def benign_paths():
    """The shared photos plus the orientation/ and exif-edge/ JPEGs (where present), sorted."""
    paths = list(photo_paths())
    for name in BENIGN_EXTRA_DIRS:
        folder = FIXTURE_IMAGES / name
        if folder.is_dir():
            paths += sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".jpg")
    return paths


def photo_paths():
    """The shared fixture photos (no people), sorted by name."""
    assert PHOTOS.is_dir(), f"fixture photos not found at {PHOTOS}"
    paths = sorted(p for p in PHOTOS.iterdir() if p.is_file() and not p.name.startswith("."))
    assert paths, f"no photos in {PHOTOS}"
    return paths


class Service:
    def __init__(self, proc, host, port, log_path):
        self.proc, self.host, self.port, self.log_path = proc, host, port, log_path

    def request(self, method, path, body=None, headers=None, timeout=120):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            hdrs = {"Content-Type": "application/json"}
            hdrs.update(headers or {})
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read()
            doc = json.loads(raw) if raw else None
            return resp.status, dict(resp.getheaders()), doc
        finally:
            conn.close()

    def annotate(self, requests, **kw):
        status, headers, doc = self.request("POST", ANNOTATE, {"requests": requests}, **kw)
        assert status == 200, doc
        assert headers["Content-Type"].startswith("application/json")
        assert list(doc) == ["responses"]
        assert len(doc["responses"]) == len(requests)
        return doc["responses"]

    def log_text(self):
        return self.log_path.read_text(errors="replace")


def python():
    return str(VENV_PY) if VENV_PY.exists() else sys.executable


@contextlib.contextmanager
def launch(tmp_path_factory, *server_args, guard=True):
    """Start server.py on a free loopback port (under tests/netguard.py unless
    guard=False), wait for /healthz, yield a Service, stop it afterwards."""
    log_path = tmp_path_factory.mktemp("local-vision") / "server.log"
    cmd = [python(), "-u"] + ([str(NETGUARD)] if guard else []) + [
        str(SERVER), "--host", "127.0.0.1", "--port", "0", *server_args]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(HERE))
    try:
        deadline = time.monotonic() + 120
        match = None
        while match is None:
            if proc.poll() is not None:
                pytest.fail(f"service exited with {proc.returncode}:\n{log_path.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"service did not become ready:\n{log_path.read_text()}")
            match = READY.search(log_path.read_text(errors="replace"))
            if match is None:
                time.sleep(0.1)
        svc = Service(proc, match.group(1), int(match.group(2)), log_path)
        # Wait for /healthz as a client would.
        while True:
            try:
                status, _, doc = svc.request("GET", "/healthz", timeout=5)
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("healthz never answered 200")
            time.sleep(0.1)
        yield svc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
