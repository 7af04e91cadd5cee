"""A run directory is data, not code: what of its manifest.json a command may adopt, and when.

`awm-fork` and `awm-run --resume` take a run's configuration from its manifest. Some of it runs or
contacts something: worlds (an `mcp+stdio:` command, a server, a dataset whose code runs), the environment
passed to world servers, the sandbox switch, model endpoints and key variable names, model definitions,
files the manifest names (an awm.toml, prompt templates, tasks). Those fields are adopted only when

- this user wrote the manifest on this machine and it is unchanged since: awm-run seals each manifest it
  writes with an HMAC-SHA256 over its run id and config, keyed by a per-user secret in
  `~/.config/awm-runtime/manifest.key` (mode 0600, never in a run directory); a run directory copied
  from someone else, or edited, does not verify; or
- the user says so on the command line: `--trust-manifest`, or (awm-run --resume) by restating the field.

Otherwise the command refuses before it runs or contacts anything, in one line naming the fields and
how to allow them (exit 2).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from awm_runtime._errors import ConfigError

TRUST_FLAG = "--trust-manifest"
KEY_FILE = "manifest.key"
# Fields of a stored config that run, contact or read something outside the run directory: their default
# (the built-in worlds, no endpoint, no key variable, no file) is always safe.
_PATHS = ("solutions", "tasks_file", "prompts", "config_path")
_ENDPOINTS = ("policy_base", "expert_base", "judge_base")
_KEY_VARS = ("policy_key_env", "expert_key_env", "judge_key_env")
# What a model definition calls, where, with which key, and what it starts (a local server).
_MODEL_REACH = ("model", "api_base", "api_key_env", "transport", "local_server", "tito")


def key_path() -> Path:
    """The per-user secret that seals manifests: $XDG_CONFIG_HOME (else ~/.config)/awm-runtime/manifest.key."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "awm-runtime" / KEY_FILE


def _secret(create: bool) -> bytes | None:
    path = key_path()
    try:
        data = path.read_bytes()
        return data if len(data) >= 32 else None
    except FileNotFoundError:
        if not create:
            return None
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(secrets.token_bytes(32))
    try:
        os.link(tmp, path)  # never a half-written key: the first writer wins, the others read its key
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_bytes()


def _digest(secret: bytes, manifest: Mapping[str, Any]) -> str:
    body = json.dumps({"run_id": manifest.get("run_id"), "config": manifest.get("config")}, sort_keys=True,
                      separators=(",", ":"), default=str)
    return hmac.new(secret, body.encode(), hashlib.sha256).hexdigest()


def seal(manifest: Mapping[str, Any]) -> str | None:
    """The HMAC of a manifest's run id and config under this user's secret (created on first use); None when
    the secret cannot be kept (no writable config home): the run is then simply not sealed."""
    try:
        secret = _secret(create=True)
    except OSError:
        return None
    return None if secret is None else _digest(secret, manifest)


def sealed_here(manifest: Mapping[str, Any]) -> bool:
    """Whether this user wrote `manifest` on this machine and nothing changed its run id or config since."""
    try:
        tag, secret = manifest.get("seal"), _secret(create=False)
    except OSError:
        return False
    return isinstance(tag, str) and secret is not None and hmac.compare_digest(tag, _digest(secret, manifest))


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _worlds(value: str) -> str:
    if value.startswith("mcp+stdio:"):
        return "a command to run"
    if "://" in value:
        return "a server to contact"
    return "worlds whose code runs"


def own_models(config_path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The model definitions the user's own configuration names: the built-in aliases, and the aliases of
    the awm.toml they gave on the command line."""
    from awm_runtime.models import load_registry

    registry = load_registry(config_path)
    return {alias: registry.get(alias).model_dump(mode="json") for alias in registry.names()}


def _model_problems(table: Mapping[str, Any], own: Mapping[str, dict[str, Any]]) -> list[str]:
    """Stored model definitions that reach further than the user's own alias of the same name."""
    out = []
    for role, aliases in sorted((table or {}).items()):
        for alias, definition in sorted((aliases or {}).items()):
            known = own.get(alias)
            if known is None or any(definition.get(f, known.get(f)) != known.get(f) for f in _MODEL_REACH):
                where = ", ".join(f"{f} {_short(definition.get(f))}" for f in ("api_base", "api_key_env")
                                  if definition.get(f)) or f"model {_short(definition.get('model'))}"
                out.append(f"models.{role}.{alias} ({where})")
    return out


def risky_fields(config: Mapping[str, Any], restated: Iterable[str] = (),
                 own: Mapping[str, dict[str, Any]] | None = None) -> list[str]:
    """The stored config's fields that would run, contact or read something, as `field value (what)`;
    fields the user restated on the command line are theirs, not the manifest's."""
    skip, out = set(restated), []
    worlds = config.get("worlds")
    if "worlds" not in skip and worlds not in (None, "builtin"):
        out.append(f"worlds {_short(worlds)} ({_worlds(str(worlds))})")
    if "world_env" not in skip and config.get("world_env"):
        out.append(f"world_env {_short(config['world_env'])} (environment for world servers)")
    if "unsafe_no_sandbox" not in skip and config.get("unsafe_no_sandbox"):
        out.append("unsafe_no_sandbox true (world code unconfined)")
    for name in _ENDPOINTS:
        if name not in skip and config.get(name):
            out.append(f"{name} {_short(config[name])} (an endpoint)")
    for name in _KEY_VARS:
        if name not in skip and config.get(name):
            out.append(f"{name} {_short(config[name])} (a key variable)")
    for name in _PATHS:
        if name not in skip and config.get(name):
            out.append(f"{name} {_short(config[name])} (a file outside the run directory)")
    out += _model_problems(config.get("models") or {}, own_models() if own is None else own)
    return out


def check_manifest(prefix: str, root: Path, manifest: Mapping[str, Any], *, trusted: bool,
                   restated: Iterable[str] = (), restate_hint: bool = False,
                   own: Mapping[str, dict[str, Any]] | None = None) -> None:
    """Refuse (ConfigError, one line, starting with `prefix`) a manifest whose config would run or contact
    something, unless the user trusts it on the command line or sealed it themselves."""
    if trusted or sealed_here(manifest):
        return
    risky = risky_fields(manifest.get("config") or {}, restated, own)
    if risky:
        how = f"pass {TRUST_FLAG} to use them" + (
            ", or restate each on the command line (a model: define it in your awm.toml, --config)"
            if restate_hint else "")
        raise ConfigError(f"{prefix}{Path(root) / 'manifest.json'} was not written by you on this machine (or "
                          f"changed since) and names {'; '.join(risky)}: nothing was run or contacted; {how}")
