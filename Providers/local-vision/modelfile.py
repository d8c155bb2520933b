"""The model files the local-vision models run: found inside an installed wheel without importing its package,
and checked against the sha256 (and size) recorded for them before they are loaded. Shared by open_nsfw.py and
image_safety.py; nothing here downloads anything.
"""

import hashlib
import importlib.metadata
import importlib.util
import os


class ModelFileError(RuntimeError):
    """A bundled model file is missing or is not the expected one."""


def packaged_file(module, package, relative):
    """Path of ``relative`` inside the installed ``module`` (pip distribution ``package``).

    find_spec on a top-level name locates the package without executing it.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"package {package} is not installed (run Providers/local-vision/serve --setup-only)")
    for folder in spec.submodule_search_locations:
        candidate = os.path.join(folder, relative)
        if os.path.isfile(candidate):
            return candidate
    raise ModelFileError(f"{relative} not found in the installed {package} package")


def package_version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
