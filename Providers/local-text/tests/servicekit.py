"""Start the real service (server.py) as a subprocess for the tests; shared by the test modules."""

import contextlib
import http.client
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent  # Providers/local-text
SERVER = HERE / "server.py"
SERVE = HERE / "serve"
NETGUARD = Path(__file__).resolve().parent / "netguard.py"
VENV_PY = HERE / ".venv" / "bin" / "python"
MODERATIONS = "/v1/moderations"
READY = re.compile(r"listening on http://\[?([0-9a-f.:]+)\]?:(\d+)")

CATEGORIES = [
    "sexual", "sexual/minors", "harassment", "harassment/threatening", "hate",
    "hate/threatening", "illicit", "illicit/violent", "self-harm", "self-harm/intent",
    "self-harm/instructions", "violence", "violence/graphic",
]
UNSCORED = ["illicit", "illicit/violent"]


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

    def moderate(self, inputs, model="omni-moderation-latest"):
        status, headers, doc = self.request("POST", MODERATIONS, {"model": model, "input": inputs})
        assert status == 200, doc
        assert headers["Content-Type"] == "application/json"
        return doc

    def log_text(self):
        return self.log_path.read_text(errors="replace")


def python():
    return str(VENV_PY) if VENV_PY.exists() else sys.executable


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(proc, log_path, deadline):
    while True:
        if proc.poll() is not None:
            pytest.fail(f"service exited with {proc.returncode}:\n{log_path.read_text()}")
        if time.monotonic() > deadline:
            pytest.fail(f"service did not become ready:\n{log_path.read_text()}")
        match = READY.search(log_path.read_text(errors="replace"))
        if match:
            return match.group(1), int(match.group(2))
        time.sleep(0.1)


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def launch(tmp_path_factory, *server_args, guard=True, via_serve=False):
    """Start the service on a free loopback port and wait for /healthz; yield a
    Service, stop it afterwards. Default: server.py under tests/netguard.py.
    via_serve=True: the real start script (Providers/local-text/serve)."""
    log_path = tmp_path_factory.mktemp("local-text") / "server.log"
    if via_serve:
        cmd = [str(SERVE), *server_args]
    else:
        cmd = [python(), "-u"] + ([str(NETGUARD)] if guard else []) + [
            str(SERVER), "--host", "127.0.0.1", "--port", "0", *server_args]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(HERE))
    try:
        deadline = time.monotonic() + 120
        host, port = wait_ready(proc, log_path, deadline)
        svc = Service(proc, host, port, log_path)
        while True:
            try:
                status, _, _ = svc.request("GET", "/healthz", timeout=5)
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("healthz never answered 200")
            time.sleep(0.1)
        yield svc
    finally:
        stop(proc)
