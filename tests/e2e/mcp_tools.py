"""Where the third-party MCP servers and the MCP Inspector live once scripts/dev-setup installed them.

The npm packages are in the repo's .npm-tools/ (pinned by scripts/npm-tools/package-lock.json), the PyPI
servers in the venv (the dev extra). A missing one skips its test, saying how to install it; under CI it
fails, as CI runs dev-setup.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
NPM_BIN = REPO / ".npm-tools" / "node_modules" / ".bin"
INSTALL = {"npm": "scripts/dev-setup (or: mkdir -p .npm-tools && cp scripts/npm-tools/package*.json .npm-tools/ && "
                  "(cd .npm-tools && npm ci))",
           "pypi": 'pip install -c requirements.lock -e ".[dev]"'}


def _missing(what: str, how: str) -> None:
    message = f"{what} is not installed; install it with {INSTALL[how]}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def npm_tool(name: str) -> Path:
    """The path of an npm package's command in .npm-tools (skip, or under CI fail, if missing)."""
    path = NPM_BIN / name
    if not path.exists() or shutil.which("node") is None:
        _missing(f"{name} (npm)", "npm")
    return path


def pypi_tool(name: str) -> Path:
    """The path of a console script of the dev extra, in this interpreter's venv."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        _missing(f"{name} (PyPI)", "pypi")
    return path
