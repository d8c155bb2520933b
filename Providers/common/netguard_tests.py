"""Tests of netguard.py, shared by the providers' suites: each provider's
tests/test_netguard.py imports them (`from netguard_tests import *`), so they run
with that provider's python. Needs pytest (every provider's requirements-dev.txt)."""

import subprocess
import sys

import pytest

import netguard
from launchkit import NETGUARD


class FakeSocket:
    def __init__(self, family):
        self.family = family


@pytest.mark.parametrize(
    "event,args",
    [
        ("socket.connect", (FakeSocket(2), ("192.0.2.1", 443))),
        ("socket.connect", (FakeSocket(10), ("2001:db8::1", 443, 0, 0))),
        ("socket.sendto", (FakeSocket(2), ("10.0.0.1", 53))),
        ("socket.getaddrinfo", ("pypi.org", 443, 0, 0, 0, 0)),
        ("socket.getaddrinfo", ("github.com", 443, 0, 0, 0, 0)),
        ("socket.gethostbyname", ("example.org",)),
        ("urllib.Request", ("https://example.org/model.joblib", None, {}, "GET")),
        ("urllib.Request", ("https://example.org/model.onnx", None, {}, "GET")),
    ],
)
def test_netguard_refuses_non_loopback(event, args, capsys):
    # The hook is called directly: no real socket is touched.
    with pytest.raises(PermissionError):
        netguard.hook(event, args)
    assert netguard.MARK in capsys.readouterr().err


@pytest.mark.parametrize(
    "event,args",
    [
        ("socket.connect", (FakeSocket(2), ("127.0.0.1", 8080))),
        ("socket.connect", (FakeSocket(2), ("127.3.2.1", 8080))),
        ("socket.connect", (FakeSocket(10), ("::1", 8080, 0, 0))),
        ("socket.connect", (FakeSocket(1), "/tmp/some.sock")),
        ("socket.getaddrinfo", ("localhost", 8080, 0, 0, 0, 0)),
        ("socket.getaddrinfo", (None, 8080, 0, 0, 0, 0)),
        ("socket.gethostbyaddr", ("127.0.0.1",)),
        ("socket.bind", (FakeSocket(2), ("127.0.0.1", 0))),
        ("open", ("/etc/hosts", "r", 0)),
    ],
)
def test_netguard_allows_loopback_and_everything_else(event, args):
    netguard.hook(event, args)


def test_netguard_wrapper_installs_the_hook(tmp_path):
    # A positive control for the wrapper the service tests run under: the script
    # raises the audit event itself (sys.audit), so nothing touches the network.
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "assert __name__ == '__main__' and sys.argv[1:] == ['--flag']\n"
        "sys.audit('socket.getaddrinfo', 'example.invalid', 443, 0, 0, 0, 0)\n"
        "print('NOT REFUSED')\n"
    )
    out = subprocess.run([sys.executable, str(NETGUARD), str(script), "--flag"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "NOT REFUSED" not in out.stdout
    assert "NETGUARD: refused socket.getaddrinfo 'example.invalid'" in out.stderr
    assert "PermissionError" in out.stderr
