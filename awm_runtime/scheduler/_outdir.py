"""The run directory a run writes: the default name, and the checks that make a bad `--out` one line."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from awm_runtime._config import RunConfig
from awm_runtime._errors import ConfigError
from awm_runtime.logs import EPISODES, MANIFEST, read_manifest


def out_dir(config: RunConfig) -> tuple[Path, dict[str, Any] | None]:
    """The run directory, and the manifest of the run being resumed (None for a new run)."""
    if config.out is not None:
        out = Path(config.out)
    else:
        out = Path("runs") / f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    _check_writable(out)
    has_records = (out / EPISODES).is_file() and (out / EPISODES).stat().st_size > 0
    if config.resume and not (out / MANIFEST).is_file():
        raise ConfigError(f"--resume: {out} holds no run to resume (no {MANIFEST}); pass the --out of the killed run")
    if has_records and not config.resume:
        raise ConfigError(f"{out} already holds a run; pass --resume to continue it, or choose another --out")
    if not config.resume:
        return out, None
    try:
        return out, read_manifest(out)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--resume: {out / MANIFEST} is unreadable ({exc}); the run cannot be resumed") from None


def _check_writable(out: Path) -> None:
    """--out must be a directory this process can create or write: one line if it cannot be."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: a file of that name exists; --out names the run directory (choose a new "
                          f"path, or an earlier run's directory with --resume)")
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(f"--out {out}: {existing} is a file, so the run directory cannot be made under it")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"--out {out}: {existing} is not writable by this user; choose another --out")
