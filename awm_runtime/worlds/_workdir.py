"""A world's working directory: private, on tmpfs when there is room, and the leftovers of killed runtimes removed."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

WORKDIR_PREFIX = "awm-world-"


def default_workdir() -> Path:
    """A private directory on tmpfs when there is room (episode DBs then live in RAM), else in TMPDIR.

    Its name carries our pid, so that directories left by a runtime that was SIGKILLed are
    found and removed by the next one: on tmpfs they would otherwise hold memory until reboot.
    """
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 256 << 20 else None
    root = base or Path(tempfile.gettempdir())
    for stale in root.glob(f"{WORKDIR_PREFIX}*-*"):
        pid = stale.name[len(WORKDIR_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-", dir=root))  # mode 0700


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive, and not ours to clean up
        return True
    return True


TEMPLATES = ".templates"  # pristine templates, beside the scenario directories (no scenario id starts with a dot)
