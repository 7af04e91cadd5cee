"""How a stdio MCP world starts its servers: the command, its environment, a fresh directory per episode, logs.

- `{episode_dir}` in the command or in a `--world-env` value becomes a directory made for the episode (and
  removed when it ends), so a server that keeps state in files starts each episode from nothing.
- The server gets a minimal environment (no API keys) plus `--world-env KEY=VAL`, or `--world-env KEY` to pass
  a variable of awm-run's own environment (its value is not written anywhere).
- Its stderr goes to `<run dir>/worlds/<scenario>.log` (a private temporary folder, removed at the end, when
  no run directory is given). A server that fails to start is told with the last lines of that log.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from awm_runtime._errors import ConfigError

EPISODE_DIR = "{episode_dir}"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TAIL_LINES = 12


def parse_world_env(items: Sequence[str]) -> dict[str, str | None]:
    """`KEY=VAL` sets a variable; a bare `KEY` passes awm-run's own (None here, read at start). ConfigError else."""
    out: dict[str, str | None] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not _ENV_NAME.match(key):
            raise ConfigError(f"--world-env {item!r}: expected KEY=VALUE or KEY (a variable name: letters, digits, _)")
        if not eq and key not in os.environ:
            raise ConfigError(f"--world-env {key}: {key} is not set in this environment; set it, or pass {key}=VALUE")
        out[key] = value if eq else None
    return out


class StdioLaunch:
    """The command and environment of one world's server processes, and where their stderr goes."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str | None], log_dir: Path | None) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.per_episode = any(EPISODE_DIR in a for a in self.argv) or \
            any(v is not None and EPISODE_DIR in v for v in self.env.values())
        self._log_dir = log_dir
        self._scratch: Path | None = None  # episode dirs, and logs when there is no run directory
        self._logs: dict[str, TextIO] = {}

    def _scratch_dir(self) -> Path:
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="awm-mcp-"))
        return self._scratch

    def episode_dir(self, episode_id: str) -> Path | None:
        """A new, empty directory for one episode's server, when the command asks for one."""
        if not self.per_episode:
            return None
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", episode_id)[:48].lstrip(".") or "episode"
        path = self._scratch_dir() / "episodes" / f"{safe}-{uuid.uuid4().hex[:8]}"
        path.mkdir(parents=True)
        return path

    def params(self, episode_dir: Path | None) -> tuple[str, list[str], dict[str, str]]:
        """(command, args, env) with `{episode_dir}` filled in."""
        from mcp.client.stdio import get_default_environment

        def fill(text: str) -> str:
            return text.replace(EPISODE_DIR, str(episode_dir)) if episode_dir is not None else text

        env = get_default_environment()
        for key, value in self.env.items():
            passed = os.environ.get(key) if value is None else fill(value)
            if passed is not None:
                env[key] = passed
        argv = [fill(a) for a in self.argv]
        return argv[0], argv[1:], env

    def log_path(self, scenario: str) -> Path:
        root = self._log_dir if self._log_dir is not None else self._scratch_dir()
        return root / "worlds" / f"{scenario}.log"

    def errlog(self, scenario: str) -> TextIO:
        """The open log file of `scenario`'s servers (appended to: shard processes share it)."""
        log = self._logs.get(scenario)
        if log is None:
            path = self.log_path(scenario)
            path.parent.mkdir(parents=True, exist_ok=True)
            log = self._logs[scenario] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        return log

    def adopt(self, provisional: str, scenario: str) -> None:
        """Move what the probe's server wrote under its provisional name into the scenario's own log."""
        if provisional == scenario or provisional not in self._logs:
            return
        self._logs.pop(provisional).close()
        old = self.log_path(provisional)
        text = old.read_text(encoding="utf-8", errors="replace") if old.is_file() else ""
        old.unlink(missing_ok=True)
        if text:
            log = self.errlog(scenario)
            log.write(text)
            log.flush()

    def tail(self, scenario: str) -> str:
        """The last lines the scenario's servers wrote to stderr, indented, or '' if none."""
        if scenario in self._logs:
            self._logs[scenario].flush()
        try:
            lines = self.log_path(scenario).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(f"  {line}" for line in lines[-TAIL_LINES:] if line.strip())

    @staticmethod
    def drop(episode_dir: Path | None) -> None:
        if episode_dir is not None:
            shutil.rmtree(episode_dir, ignore_errors=True)

    def close(self) -> None:
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
