"""Preflight: before a run starts, every role's key is set and every endpoint answers."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable

import httpx

from awm_runtime._errors import ConfigError
from awm_runtime.models._registry import ModelConfig


def _fix_key(role: str, cfg: ModelConfig) -> str:
    return (f"{role} model {cfg.alias!r} needs an API key: export {cfg.api_key_env}=… "
            f"(or point api_key_env at another variable under [models.{cfg.alias}] in awm.toml)")


async def _probe(role: str, cfg: ModelConfig, timeout_s: float) -> str | None:
    """None if the endpoint answers and knows the model (where it can say), else the fix-it line."""
    assert cfg.api_base
    url = cfg.api_base.rstrip("/") + "/models"
    key = os.environ.get(cfg.api_key_env or "", "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            resp = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        return (f"{role} model {cfg.alias!r}: cannot reach {cfg.api_base} ({type(exc).__name__}). Start the server, "
                f"or change api_base under [models.{cfg.alias}] in awm.toml")
    if resp.status_code in (401, 403):
        return f"{role} model {cfg.alias!r}: {cfg.api_base} rejected the key in {cfg.api_key_env or '(none)'} " \
               f"(HTTP {resp.status_code}); check the key"
    if resp.status_code >= 400:
        return None  # some servers have no /models; the endpoint answered, which is what we can check
    try:
        ids = {m.get("id") for m in resp.json().get("data", []) if isinstance(m, dict)}
    except ValueError:
        return None
    served = cfg.model.split("/", 1)[1] if "/" in cfg.model else cfg.model
    if ids and served not in ids and cfg.model not in ids:
        return (f"{role} model {cfg.alias!r}: {cfg.api_base} does not serve {served!r} "
                f"(it serves: {', '.join(sorted(str(i) for i in ids)[:5])}); fix model under [models.{cfg.alias}]")
    return None


async def preflight(roles: Iterable[tuple[str, ModelConfig]], *, timeout_s: float = 5.0) -> None:
    """Raise one ConfigError listing every problem, one line each, or return if all is well."""
    problems: list[str] = []
    probes = []
    seen: set[tuple[str, str]] = set()
    for role, cfg in roles:
        if (role, cfg.alias) in seen or cfg.simulated:
            continue
        seen.add((role, cfg.alias))
        if cfg.api_key_env and not os.environ.get(cfg.api_key_env):
            problems.append(_fix_key(role, cfg))
        elif cfg.api_base:
            probes.append(_probe(role, cfg, timeout_s))
    problems.extend(p for p in await asyncio.gather(*probes) if p)
    if problems:
        raise ConfigError("\n".join(problems))
