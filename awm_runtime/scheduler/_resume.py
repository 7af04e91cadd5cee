"""A resume that cannot change an arm: the manifest's settings and model definitions are the run's.

manifest.json keeps the resolved definition of every model the run called, per role and alias
(`config.models`: model string, base URL, protocol, params, transport, and limits; key variable
*names* only, never keys). `--resume` runs from them: an alias that awm.toml no longer defines runs
from its stored definition, and a flag or awm.toml that would change what an arm means is refused,
with one line listing the differences, before anything is written. Settings that do not change
results may differ: concurrency, shards, grace, preflight, model processes, world workers, limits,
and the selection of tasks (to extend a run).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from awm_runtime._config import RunConfig
from awm_runtime._errors import ConfigError
from awm_runtime._types import ModelRole
from awm_runtime.models import ModelConfig, ModelRegistry, apply_routes, load_registry

# RunConfig fields a resumed session may change: how fast and where it runs, and which tasks it covers.
OPERATIONAL = frozenset({
    "scenarios", "tasks", "split", "exclude_trivial", "repeats", "concurrency", "shards", "grace_s", "preflight",
    "model_procs", "world_workers", "out", "resume", "config_path", "policy_key_env", "expert_key_env",
    "judge_key_env", "models", "ray", "unsafe_no_sandbox", "checkpoint", "world_disk_mib",
})
# What a model definition means: what is called, where, and how. Limits, timeouts and keys are not.
MODEL_MEANING = ("model", "api_base", "protocol", "params", "transport", "tool_result_role")
_SECRET_PARAM = re.compile(r"key|token|secret|password|authorization|credential", re.I)
REDACTED = "[REDACTED]"

ModelTable = dict[str, dict[str, dict[str, Any]]]  # role -> alias -> definition


def _scrubbed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if _SECRET_PARAM.search(str(k)) else _scrubbed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


def public_definition(config: ModelConfig) -> dict[str, Any]:
    """A model definition as the manifest keeps it: params (at any depth, e.g. extra_headers) whose
    name looks like a credential are redacted."""
    out = config.model_dump(mode="json", exclude={"alias"})
    out["params"] = _scrubbed(out["params"])
    return out


def model_table(clients: Mapping[tuple[ModelRole, str], Any]) -> ModelTable:
    """The definitions of the models a prepared run calls, from its clients keyed (role, alias)."""
    table: ModelTable = {}
    for (role, alias), client in sorted(clients.items()):
        table.setdefault(role, {})[alias] = public_definition(client.config)
    return table


def with_stored_models(registry: ModelRegistry, table: ModelTable) -> ModelRegistry:
    """`registry` plus the stored definition of every alias it no longer defines."""
    missing: dict[str, dict[str, Any]] = {}
    for aliases in table.values():
        for alias, definition in aliases.items():
            if alias in registry or alias in missing:
                continue
            if REDACTED in repr(definition.get("params")):
                raise ConfigError(f"--resume: model alias {alias!r} is no longer defined, and its stored params "
                                  "hold a redacted credential; define it again in awm.toml (--config)")
            missing[alias] = {k: v for k, v in definition.items() if k in ModelConfig.model_fields}
    return registry.with_aliases(missing) if missing else registry


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_resume(config: RunConfig, manifest: Mapping[str, Any]) -> RunConfig:
    """`config` for a resumed session, carrying the stored model definitions; ConfigError (one line)
    when it would change what an arm of the run means."""
    stored = dict(manifest.get("config") or {})
    current = config.model_dump(mode="json")
    defaults = RunConfig().model_dump(mode="json")
    differences = [f"{name} {_shown(stored.get(name, defaults[name]))} -> {_shown(current[name])}"
                   for name in RunConfig.model_fields
                   if name not in OPERATIONAL and stored.get(name, defaults[name]) != current[name]]
    table: ModelTable = stored.get("models") or {}
    registry = apply_routes(with_stored_models(load_registry(config.config_path), table), config.model_dump())
    for role, aliases in sorted(table.items()):
        for alias, was in sorted(aliases.items()):
            now = public_definition(registry.resolve(alias, cast(ModelRole, role)))  # checked by resolve
            differences += [f"{role} {alias!r} {field} {_shown(was.get(field))} -> {_shown(now[field])}"
                            for field in MODEL_MEANING if was.get(field) != now[field]]
    if differences:
        raise ConfigError(f"--resume: this would change what the run's arms mean ({'; '.join(differences)}); "
                          "nothing was written. Resume without those changes, or start a new run with another --out")
    return config.model_copy(update={"models": table})
