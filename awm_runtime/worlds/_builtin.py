"""Where the worlds shipped in the package live."""

from __future__ import annotations

from pathlib import Path

BUILTIN_DATA = Path(__file__).parent / "builtin" / "data"  # the packed AWM-format worlds
BUILTIN_SOURCES = Path(__file__).parent / "builtin" / "src"  # their scenario sources

__all__ = ["BUILTIN_DATA", "BUILTIN_SOURCES"]
