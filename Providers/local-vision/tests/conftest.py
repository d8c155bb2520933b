"""Puts Providers/common (launchkit.py, netguard.py; stdlib only, not installed) on sys.path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common"))
