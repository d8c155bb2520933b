"""Run a script (a provider's server.py) under a Python audit hook that refuses
any non-loopback network use.

    python Providers/common/netguard.py Providers/<provider>/server.py [server options]

Used by the providers' service tests (launchkit.launch runs server.py under it):
every socket connect/sendto/sendmsg to an address outside 127.0.0.0/8 and ::1,
every name lookup of a host that is not loopback, and every urllib request (no
provider fetches a URL) raises PermissionError before the system call is made,
and writes one line starting with "NETGUARD:" to stderr, which the tests look
for. It sees what Python code does (a model download would be Python: urllib,
requests, gdown, ...), not what native libraries might do on their own.
Stdlib only.
"""

import ipaddress
import runpy
import socket
import sys

MARK = "NETGUARD:"
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def is_loopback(host):
    if host is None:  # getaddrinfo(None, port): the wildcard/loopback for bind()
        return True
    if isinstance(host, (bytes, bytearray)):
        host = bytes(host).decode("ascii", "replace")
    host = str(host).strip().rstrip(".").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0].strip("[]")).is_loopback
    except ValueError:
        return False


def _refuse(event, what):
    try:
        sys.stderr.write(f"{MARK} refused {event} {what!r}\n")
        sys.stderr.flush()
    except Exception:
        pass
    raise PermissionError(f"netguard: {event} {what!r} is not loopback")


def hook(event, args):
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        sock, address = args[0], args[1]
        if address is None or getattr(sock, "family", None) == getattr(socket, "AF_UNIX", object()):
            return
        host = address[0] if isinstance(address, tuple) else address
        if not is_loopback(host):
            _refuse(event, address)
    elif event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr"):
        if not is_loopback(args[0]):
            _refuse(event, args[0])
    elif event == "urllib.Request":
        _refuse(event, args[0])


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: netguard.py SCRIPT [ARGS...]")
    sys.addaudithook(hook)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
