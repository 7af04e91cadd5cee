"""Scenario-name normalisation: the join key across AWM files (BRIEF §1)."""

from __future__ import annotations

import re

_NON_WORD = re.compile(r"[^a-z0-9_]")
_RUNS = re.compile(r"_+")


def normalize_scenario(name: str) -> str:
    """Lowercase, map `[^a-z0-9_]` to `_`, collapse runs of `_`, strip `_` at the ends."""
    return _RUNS.sub("_", _NON_WORD.sub("_", name.lower())).strip("_")
