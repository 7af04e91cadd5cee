"""The run directory of a new or resumed run, and its manifest.json."""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from awm_runtime.scheduler._prepare import PreparedRun
from awm_runtime.scheduler._resume import ModelTable, model_table
from awm_runtime.scheduler._trust import seal
from awm_runtime.worlds import snapshot_commit


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("awm-runtime", "litellm", "openai", "httpx", "pydantic", "structlog", "fastapi", "sqlalchemy"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _arm(harness: Any, models: ModelTable) -> dict[str, Any]:
    """An arm's policy and expert, with the definition of each model it calls."""
    out: dict[str, Any] = {"policy": harness.policy.ref.model_dump(),
                           "expert": harness.expert.ref.model_dump() if harness.expert else None, "models": {}}
    for role, ref in (("policy", harness.policy.ref), ("expert", harness.expert.ref if harness.expert else None)):
        if ref is not None and ref.alias in models.get(role, {}):
            out["models"][role] = models[role][ref.alias]
    return out


def manifest(prep: PreparedRun) -> dict[str, Any]:
    """manifest.json of a launched run's session: its config (with the model definitions a resume runs from),
    versions, worlds, arms and containment, this session added to the resumed run's, sealed."""
    assert prep.launch is not None
    config, run_id, shards, previous = prep.config, prep.launch.run_id, prep.launch.shards, prep.launch.previous
    root = getattr(getattr(prep.world, "dataset", None), "root", None)  # an AWM dataset's directory, if any
    session = {"started_at": datetime.now(UTC).isoformat(), "argv": sys.argv, "resumed": config.resume,
               "shards": shards, "concurrency": config.concurrency, "pid": os.getpid()}
    models = model_table(prep.ctx.clients)  # what `--resume` runs from (scheduler/_resume.py)
    out = {
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
    out["seal"] = seal(out)  # this user, this machine: scheduler/_trust.py
    return out
