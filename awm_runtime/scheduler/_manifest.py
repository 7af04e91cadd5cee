"""The run directory of a new or resumed run, and its manifest.json."""

from __future__ import annotations

import os
import platform
import sys
import uuid
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from awm_runtime._config import RunConfig
from awm_runtime._errors import ConfigError
from awm_runtime.logs import EPISODES, MANIFEST, read_manifest
from awm_runtime.scheduler._prepare import PreparedRun
from awm_runtime.scheduler._resume import ModelTable, model_table
from awm_runtime.worlds._hub import snapshot_commit


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("awm-runtime", "litellm", "openai", "httpx", "pydantic", "structlog", "fastapi", "sqlalchemy"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


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


def _arm(harness: Any, models: ModelTable) -> dict[str, Any]:
    """An arm's policy and expert, with the definition of each model it calls."""
    out: dict[str, Any] = {"policy": harness.policy.ref.model_dump(),
                           "expert": harness.expert.ref.model_dump() if harness.expert else None, "models": {}}
    for role, ref in (("policy", harness.policy.ref), ("expert", harness.expert.ref if harness.expert else None)):
        if ref is not None and ref.alias in models.get(role, {}):
            out["models"][role] = models[role][ref.alias]
    return out


def manifest(config: RunConfig, prep: PreparedRun, run_id: str, shards: int,
              previous: dict[str, Any] | None) -> dict[str, Any]:
    root = getattr(getattr(prep.world, "dataset", None), "root", None)  # an AWM dataset's directory, if any
    session = {"started_at": datetime.now(UTC).isoformat(), "argv": sys.argv, "resumed": config.resume,
               "shards": shards, "concurrency": config.concurrency, "pid": os.getpid()}
    models = model_table(prep.ctx.clients)  # what `--resume` runs from (scheduler/_resume.py)
    return {
        "run_id": run_id, "resumed": config.resume, "started_at": (previous or {}).get("started_at")
        or session["started_at"], "config": config.model_copy(update={"models": models}).model_dump(mode="json"),
        "versions": _versions(), "seed": config.seed, "argv": sys.argv, "worlds": prep.world.name,
        "worlds_dir": str(Path(root).resolve()) if root else None,
        "worlds_revision": snapshot_commit(root) if root else None, "planned_episodes": prep.planned,
        "containment": prep.containment.to_dict(),
        "arms": {n: _arm(h, models) for n, h in prep.harnesses.items()},
        "host": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "sessions": [*(previous or {}).get("sessions", []), session],
    }
