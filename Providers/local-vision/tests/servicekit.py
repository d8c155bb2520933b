"""local-vision's test helpers: the fixture photos, and launch() / Service for the real
service (server.py as a subprocess), built on Providers/common/launchkit.py."""

import os
from pathlib import Path

import launchkit  # Providers/common, put on sys.path by tests/conftest.py

HERE = Path(__file__).resolve().parent.parent  # Providers/local-vision
ANNOTATE = "/v1/images:annotate"
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


class Service(launchkit.Service):
    def annotate(self, requests, **kw):
        status, headers, doc = self.request("POST", ANNOTATE, {"requests": requests}, **kw)
        assert status == 200, doc
        assert headers["Content-Type"].startswith("application/json")
        assert list(doc) == ["responses"]
        assert len(doc["responses"]) == len(requests)
        return doc["responses"]


def python():
    return launchkit.python(HERE)


def launch(tmp_path_factory, *server_args, guard=True):
    """Start server.py on a free loopback port (under Providers/common/netguard.py unless
    guard=False), wait for /healthz, yield a Service, stop it afterwards."""
    return launchkit.launch(HERE, tmp_path_factory, *server_args, guard=guard,
                            service_class=Service)
