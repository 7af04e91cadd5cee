"""Fixtures shared by the verifier tests: a sandbox, and read-only DBs the sandbox's user can read."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from awm_runtime.verifiers import Sandbox


@contextmanager
def readonly_db(prefix: str, *statements: str) -> Iterator[Path]:
    """A DB built by `statements`, where the sandbox (nobody, when tests run as root) can read it, read-only
    as in a world; removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    root.chmod(0o711)
    path = root / "final.db"
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    path.chmod(0o444)
    try:
        yield path
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    box = Sandbox(memory_mb=256)
    yield box
    await box.aclose()
