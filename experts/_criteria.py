"""Success criteria distilled once per task from its verifier by the expert model, and cached.

Off by default: it leaks the grader to the expert. The cache has two levels: one in-flight
distillation per task in this process (concurrent episodes wait for it), and one JSON file per
(model, prompt, task, verifier) under `$AWM_CACHE_DIR/criteria/` (default
`$XDG_CACHE_HOME/awm-runtime/criteria/`, else `~/.cache/awm-runtime/criteria/`), so later runs
reuse it. A failed distillation is not written to disk: the episode goes on without criteria.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from awm_runtime._errors import AwmError
from awm_runtime._prompts import render, template
from awm_runtime._types import Task, Usage
from awm_runtime.models import ModelClient

if TYPE_CHECKING:
    from awm_runtime.worlds import VerifierDef

log = structlog.get_logger("awm_runtime.experts")

VerifierLookup = Callable[[Task], "VerifierDef | None"]


def cache_dir() -> Path:
    """Where distilled criteria are kept between runs."""
    if os.environ.get("AWM_CACHE_DIR"):
        return Path(os.environ["AWM_CACHE_DIR"]) / "criteria"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "awm-runtime" / "criteria"


def _guidance(verifier: VerifierDef) -> str:
    """SQL-mode verifiers carry the generator's own success/failure criteria; pass them along."""
    try:
        raw = json.loads(verifier.raw_response) if verifier.raw_response else {}
    except json.JSONDecodeError:
        return ""
    if not isinstance(raw, dict):
        return ""
    parts = [f"{k.replace('_', ' ').capitalize()}: {raw[k]}" for k in ("success_criteria", "failure_criteria")
             if raw.get(k)]
    return "\n".join(parts)


class CriteriaStore:
    """`await store.get(task)` -> (criteria text or None, usage spent now)."""

    def __init__(self, client: ModelClient, verifier: VerifierLookup, *, directory: Path | None = None) -> None:
        self.client = client
        self.verifier = verifier
        self.directory = directory or cache_dir()
        self._inflight: dict[tuple[str, int], asyncio.Future[str | None]] = {}

    def _key(self, task: Task, verifier: VerifierDef) -> str:
        prompt = template("expert_criteria_system.md").template + template("expert_criteria_request.md").template
        blob = json.dumps([self.client.config.model, prompt, task.text, verifier.mode, verifier.code])
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    async def get(self, task: Task) -> tuple[str | None, Usage]:
        future = self._inflight.get(task.key)
        if future is not None:
            return await asyncio.shield(future), Usage()
        future = self._inflight[task.key] = asyncio.get_running_loop().create_future()
        usage = Usage()
        try:
            text = await self._distil(task, usage)
        except BaseException:
            future.set_result(None)
            del self._inflight[task.key]  # cancelled or crashed: the next ask may try again
            raise
        future.set_result(text)
        return text, usage

    async def _distil(self, task: Task, usage: Usage) -> str | None:
        verifier = self.verifier(task)
        if verifier is None:
            return None
        path = self.directory / f"{self._key(task, verifier)}.json"
        cached = await asyncio.to_thread(_read, path)
        if cached is not None:
            return cached
        messages = [{"role": "system", "content": render("expert_criteria_system.md")},
                    {"role": "user", "content": render("expert_criteria_request.md", task=task.text,
                                                       mode=verifier.mode, code=verifier.code,
                                                       guidance=_guidance(verifier))}]
        try:
            reply = await self.client.complete(messages)
        except AwmError as exc:
            log.warning("criteria_failed", scenario=task.scenario, task_idx=task.task_idx, error=str(exc))
            return None
        usage.add(reply.usage)
        text = (reply.content or "").strip() or None
        if text is not None:
            record = {"scenario": task.scenario, "task_idx": task.task_idx, "model": self.client.config.model,
                      "criteria": text, "created_at": time.time()}
            await asyncio.to_thread(_write, path, record)
        log.info("criteria_distilled", scenario=task.scenario, task_idx=task.task_idx, cached_at=str(path),
                 prompt_tokens=reply.usage.prompt_tokens, completion_tokens=reply.usage.completion_tokens)
        return text


def _read(path: Path) -> str | None:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    text = data.get("criteria") if isinstance(data, dict) else None
    return text if isinstance(text, str) and text.strip() else None


def _write(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")
    os.replace(tmp, path)
