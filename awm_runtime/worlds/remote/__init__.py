"""Remote worlds behind the same World/WorldSession protocol: OpenEnv AWM servers and MCP servers."""

from __future__ import annotations

from pathlib import Path

from awm_runtime._errors import ConfigError
from awm_runtime.verifiers import Judge
from awm_runtime.worlds.remote._base import RemoteOptions, RemoteWorld, TransientWorldError
from awm_runtime.worlds.remote._tasks import read_tasks_file

SCHEMES = ("openenv+http://", "openenv+https://", "mcp+http://", "mcp+https://", "mcp+stdio:")


def is_remote(spec: str | Path) -> bool:
    """Whether a `--worlds` value names a remote world (`openenv+…` or `mcp+…`) rather than a directory."""
    return str(spec).startswith(("openenv+", "mcp+"))


def remote_world(spec: str, *, tasks_file: Path | None = None, options: RemoteOptions | None = None,
                 judge: Judge | None = None) -> RemoteWorld:
    """The remote world a spec names; `await world.connect()` before use. ConfigError for a bad spec.

    `judge` decides an MCP world's verdicts (it has no verifier); an OpenEnv world's server verifies."""
    if spec.startswith(("openenv+http://", "openenv+https://")):
        from awm_runtime.worlds.remote._openenv import OpenEnvWorld

        if tasks_file is not None:
            raise ConfigError(f"--tasks-file is for MCP worlds; {spec} lists its own tasks (__list_scenarios__)")
        return OpenEnvWorld(spec[len("openenv+"):], options)
    if spec.startswith(("mcp+http://", "mcp+https://", "mcp+stdio:")):
        from awm_runtime.worlds.remote._mcp import McpWorld

        return McpWorld(spec, tasks_file, options, judge=judge)
    raise ConfigError(f"--worlds {spec}: unknown remote world; use one of {', '.join(SCHEMES)}")


__all__ = ["SCHEMES", "RemoteOptions", "RemoteWorld", "TransientWorldError", "is_remote", "read_tasks_file",
           "remote_world"]
