"""Providers/common/netguard.py, the audit hook the service tests run the server under:
its tests live in Providers/common/netguard_tests.py and run here with this provider's python."""

from netguard_tests import *  # noqa: F401,F403  (Providers/common is on sys.path: tests/conftest.py)
