"""local-text's test helpers: launch() / Service for the real service (server.py as a
subprocess, or the serve script), built on Providers/common/launchkit.py."""

from pathlib import Path

import launchkit  # Providers/common, put on sys.path by tests/conftest.py
from launchkit import NETGUARD, free_port  # noqa: F401  (re-exported for the test modules)

HERE = Path(__file__).resolve().parent.parent  # Providers/local-text
SERVE = HERE / "serve"
MODERATIONS = "/v1/moderations"

CATEGORIES = [
    "sexual", "sexual/minors", "harassment", "harassment/threatening", "hate",
    "hate/threatening", "illicit", "illicit/violent", "self-harm", "self-harm/intent",
    "self-harm/instructions", "violence", "violence/graphic",
]
UNSCORED = ["illicit", "illicit/violent"]


class Service(launchkit.Service):
    def moderate(self, inputs, model="omni-moderation-latest"):
        status, headers, doc = self.request("POST", MODERATIONS, {"model": model, "input": inputs})
        assert status == 200, doc
        assert headers["Content-Type"] == "application/json"
        return doc


def python():
    return launchkit.python(HERE)


def launch(tmp_path_factory, *server_args, guard=True, via_serve=False):
    """Start the service on a free loopback port and wait for /healthz; yield a
    Service, stop it afterwards. Default: server.py under Providers/common/netguard.py.
    via_serve=True: the real start script (Providers/local-text/serve)."""
    return launchkit.launch(HERE, tmp_path_factory, *server_args, guard=guard,
                            via_serve=via_serve, service_class=Service)
