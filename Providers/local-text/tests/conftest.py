"""Shared fixtures: the in-process scorer (rules + profanity model) and the dev-set files.
Also puts this provider and Providers/common (launchkit.py, netguard.py) on sys.path."""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent  # Providers/local-text
DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "common"))  # stdlib only, not installed


def load_lines(name):
    """Non-empty, non-comment lines of tests/data/NAME."""
    out = []
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line)
    return out


def hostile_examples():
    """[(categories that must be >= 0.5, text)] from tests/data/hostile.tsv."""
    out = []
    for line in load_lines("hostile.tsv"):
        cats, text = line.split("\t", 1)
        out.append((tuple(c.strip() for c in cats.split(",")), text))
    return out


def benign_examples():
    return load_lines("benign.txt")


@pytest.fixture(scope="session")
def scorer():
    import scorer as scorer_mod

    return scorer_mod.Scorer()


@pytest.fixture(scope="session")
def ruleset():
    import rules

    return rules.RuleSet()
