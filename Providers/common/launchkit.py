"""Start a provider's real service (its server.py) as a subprocess for its tests (stdlib only).

    with launchkit.launch(PROVIDER_DIR, tmp_path_factory, "--workers", "2") as svc:
        status, headers, doc = svc.request("GET", "/healthz")

launch() starts PROVIDER_DIR/server.py with the provider's .venv python on a
free loopback port (--host 127.0.0.1 --port 0), under netguard.py unless
guard=False (or through PROVIDER_DIR/serve with via_serve=True), waits for the
"listening on http://HOST:PORT" ready line and a 200 from /healthz, yields a
Service (or the service_class given), and stops the process afterwards. The
server's stdout and stderr go to a server.log under pytest's tmp_path_factory.
"""

import contextlib
import http.client
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

NETGUARD = Path(__file__).resolve().parent / "netguard.py"
READY = re.compile(r"listening on http://\[?([0-9a-f.:]+)\]?:(\d+)")
START_SECONDS = 120  # ready line and /healthz, together


class Service:
    """A running service: its process, address and log file."""

    def __init__(self, proc, host, port, log_path):
        self.proc, self.host, self.port, self.log_path = proc, host, port, log_path

    def request(self, method, path, body=None, headers=None, timeout=120):
        """(status, headers as a dict, the JSON body or None); a dict/list body is sent as JSON."""
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

    def log_text(self):
        return self.log_path.read_text(errors="replace")

    def wait_log(self, pattern, timeout=10.0):
        """The log once it matches the regex pattern (or after timeout seconds): the
        server writes a request's log line just after the response, so a client can
        read the response before the line is there."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, text := self.log_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return text


def python(provider_dir):
    """The provider's .venv python, else the one running the tests."""
    venv_py = Path(provider_dir) / ".venv" / "bin" / "python"
    return str(venv_py) if venv_py.exists() else sys.executable


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(proc, log_path, deadline):
    """(host, port) from the ready line; fails the test if the process exits or time runs out."""
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"service exited with {proc.returncode}:\n{log_path.read_text()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"service did not become ready:\n{log_path.read_text()}")
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
def launch(provider_dir, tmp_path_factory, *server_args, guard=True, via_serve=False,
           service_class=Service):
    """Start the service and wait for /healthz; yield a service_class, stop it afterwards.
    Default: server.py --host 127.0.0.1 --port 0 under netguard.py (guard=False: without).
    via_serve=True: the provider's real start script, given only server_args."""
    provider_dir = Path(provider_dir)
    log_path = tmp_path_factory.mktemp(provider_dir.name) / "server.log"
    if via_serve:
        cmd = [str(provider_dir / "serve"), *server_args]
    else:
        cmd = [python(provider_dir), "-u"] + ([str(NETGUARD)] if guard else []) + [
            str(provider_dir / "server.py"), "--host", "127.0.0.1", "--port", "0", *server_args]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                cwd=str(provider_dir))
    try:
        deadline = time.monotonic() + START_SECONDS
        host, port = wait_ready(proc, log_path, deadline)
        svc = service_class(proc, host, port, log_path)
        while True:  # wait for /healthz as a client would
            try:
                status, _, _ = svc.request("GET", "/healthz", timeout=5)
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("healthz never answered 200")
            time.sleep(0.1)
        yield svc
    finally:
        stop(proc)
