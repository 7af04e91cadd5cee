"""Run configuration: frozen, typed, layered. Precedence: CLI > awm.toml [run] > AWM_* env > defaults.

A field left out is "not given" and falls through to the next layer; the string "none" (for the
expert) means disabled. Secrets are never configured here: only environment-variable names are.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from awm_runtime._errors import ConfigError

# Fields an arm may override (`--arm NAME:KEY=VAL,...`).
ARM_KEYS = ("policy", "expert", "reward", "nudges", "max_turns", "expert_calls", "on_format_error", "protocol",
            "enable_thinking", "reasoning_effort", "thinking_budget")
# The policy's reasoning effort, as litellm and the OpenAI wire take it (litellm maps it to Anthropic's thinking
# budget and Gemini's thinkingConfig).
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high"]
_ARM_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


class ArmConfig(BaseModel):
    """One arm of an A/B run: a name and the settings it changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    policy: str | None = None
    expert: str | None = None
    reward: str | None = None
    nudges: tuple[str, ...] | None = None
    max_turns: int | None = Field(default=None, ge=1)
    expert_calls: int | None = Field(default=None, ge=0)
    on_format_error: Literal["continue", "end"] | None = None
    protocol: Literal["native", "awm", "hermes"] | None = None
    enable_thinking: bool | None = None
    reasoning_effort: ReasoningEffort | None = None
    thinking_budget: int | None = Field(default=None, ge=1024)


class RunConfig(BaseModel):
    """Everything one run needs, as awm-run's flags and awm.toml set it: worlds, models per role, arms,
    limits, concurrency and where the run directory goes.

    Immutable and validated on construction (unknown fields are refused); it is written to manifest.json, so a
    run can be resumed or forked from it. Names, never keys: a key is read from the environment variable named."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    worlds: str = "builtin"
    solutions: Path | None = None
    tasks_file: Path | None = None  # MCP worlds (issue 14): JSONL {"task": ..., "id": ...}
    # MCP worlds (issue 29): server environment (KEY=VAL, or KEY to pass ours), the scenario's name instead of
    # the server's, and a tool of an HTTP server that resets its state before each episode.
    world_env: tuple[str, ...] = ()
    scenario_name: str | None = None
    world_reset_tool: str | None = None
    world_spares: int = Field(default=2, ge=0)  # stdio MCP servers started ahead of their episodes
    # Prompt templates that replace the packaged ones (same file names, same variables).
    prompts: Path | None = None
    scenarios: str = "*"
    tasks: str = "all"
    split: Literal["train", "test", "all"] = "all"
    exclude_trivial: bool = False
    # World engine (issue 3): verifier mode and judge, FK enforcement, tool timeout, worker processes.
    verifier: Literal["code", "sql"] = "code"
    judge: str | None = None
    foreign_keys: bool = False
    tool_timeout_s: float = Field(default=30.0, gt=0)
    world_workers: int = Field(default=0, ge=0)
    world_disk_mib: int | None = Field(default=None, ge=16)  # one scenario's files (a tmpfs); None: sized per run
    # Dataset code (world full_code, verifiers) runs unconfined: only for machines that cannot confine it.
    unsafe_no_sandbox: bool = False
    # Verifications in kept workers, one per verifier code (issue 49): a verifier may keep state between its runs.
    verifier_reuse: bool = False
    # Tasks whose verifier is missing or does not parse (issue 18): run them unverified, or leave them out.
    unverified: Literal["run", "skip"] = "run"
    repeats: int = Field(default=1, ge=1)
    concurrency: int = Field(default=32, ge=1)
    max_turns: int = Field(default=20, ge=1)
    episode_timeout_s: float = Field(default=900.0, gt=0)
    policy: str = "sim/novice"
    expert: str = "sim/oracle"
    reward: str = "awm"
    nudges: tuple[str, ...] = ("on_error", "on_stall:5")
    expert_calls: int | None = Field(default=3, ge=0)
    expert_tokens: int | None = Field(default=None, ge=0)
    expert_usd: float | None = Field(default=None, ge=0)
    expert_criteria: bool = False  # show LLM experts success criteria distilled from the verifier (leaks the grader)
    group_size: int | None = Field(default=None, ge=1)  # GRPO groups: rollouts per task and step
    expert_ratio: str | None = None  # expert members per group: k, a fraction, E:S, or adaptive
    advantage: Literal["zscore", "center"] = "zscore"
    on_format_error: Literal["continue", "end"] = "continue"
    tool_result_chars: int = Field(default=3000, ge=0)
    # Issue 25: the largest tool-call arguments a policy may send (bigger is its format error), and how
    # many times a GRPO group member is run in all when it keeps ending in an infrastructure error.
    max_argument_bytes: int = Field(default=1 << 20, ge=1)
    group_attempts: int = Field(default=3, ge=1)
    protocol: Literal["native", "awm", "hermes"] | None = None  # None: each policy alias's own protocol
    enable_thinking: bool | None = None  # None: the server's default (vLLM chat_template_kwargs)
    # The policy's reasoning per request, over its alias's params (issue 46): `reasoning_effort`, or Anthropic's
    # extended thinking with this budget (`thinking = {type = "enabled", budget_tokens = N}`). None: the alias's.
    reasoning_effort: ReasoningEffort | None = None
    thinking_budget: int | None = Field(default=None, ge=1024)
    arms: tuple[ArmConfig, ...] = ()
    out: Path | None = None
    resume: bool = False
    seed: int = 0
    config_path: Path | None = None
    # Model routing (issue 5): a judge role, per-role endpoint/model/key-variable overrides of the alias
    # each role uses, the preflight depth, and model-call processes (0 = litellm in this process).
    policy_base: str | None = None
    policy_model: str | None = None
    policy_key_env: str | None = None
    expert_base: str | None = None
    expert_model: str | None = None
    expert_key_env: str | None = None
    judge_base: str | None = None
    judge_model: str | None = None
    judge_key_env: str | None = None
    preflight: Literal["full", "quick", "off"] = "full"
    model_procs: int | None = Field(default=None, ge=0)  # None: auto (half the cores, 2 to 4)
    # Scheduler (issue 8): worker processes for one run, and the grace period of a stop request.
    shards: int | Literal["auto"] = "auto"
    grace_s: float = Field(default=30.0, ge=0)
    # Resume (issue 13): the model definitions a resumed run keeps, role -> alias -> definition, as
    # manifest.json stores them. Empty for a new run; filled by scheduler._resume.check_resume.
    models: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    # Runs on a Ray cluster (issue 17): its address (host:port, or auto); None runs on this machine.
    # With it, `shards` counts episode actors per node.
    ray: str | None = None
    # Checkpoints (issue 27, docs/forks.md): none, before each turn that asked or was nudged, or before every turn.
    checkpoint: Literal["none", "asks", "every"] = "none"
    # Sequential A/B (issue 26): stop when an anytime-valid test decides, or at a budget.
    until_decided: bool = False
    alpha: float = Field(default=0.05, gt=0, lt=1)
    max_episodes: int | None = Field(default=None, ge=1)
    max_usd: float | None = Field(default=None, gt=0)

    @field_validator("ray", mode="before")
    @classmethod
    def _ray(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip()
            if v in ("", "none"):
                return None
            if v.startswith("ray://"):
                raise ValueError("ray:// (Ray Client) is not supported: run awm-run on a node of the cluster and "
                                 "pass the cluster's address (host:port) or auto")
        return v

    @field_validator("shards", mode="before")
    @classmethod
    def _shards(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v)
        if isinstance(v, int) and v < 1:
            raise ValueError("must be at least 1, or 'auto'")
        return v

    @field_validator("world_env", mode="before")
    @classmethod
    def _one_env(cls, v: Any) -> Any:
        return (v,) if isinstance(v, str) else v

    @field_validator("nudges", mode="before")
    @classmethod
    def _split_nudges(cls, v: Any) -> Any:
        return _split_list(v)

    def arm_list(self) -> list[ArmConfig]:
        """The arms to run; with none given, one arm named `main` with the base settings."""
        return list(self.arms) or [ArmConfig(name="main")]

    def for_arm(self, arm: ArmConfig) -> RunConfig:
        """This config with the arm's overrides applied."""
        changes = {k: getattr(arm, k) for k in ARM_KEYS if getattr(arm, k) is not None}
        return self.model_copy(update=changes)


def _split_list(v: Any) -> Any:
    if isinstance(v, str):
        return tuple(p for p in re.split(r"[+;\s]+", v) if p) if v not in ("", "none") else ()
    return v


def parse_arm(text: str) -> ArmConfig:
    """`NAME:KEY=VAL,KEY=VAL` -> ArmConfig, with a precise error for each mistake."""
    name, _, rest = text.partition(":")
    if not _ARM_NAME.match(name):
        raise ConfigError(f"--arm {text!r}: arm name must be letters, digits, '.', '_' or '-' (NAME:KEY=VAL,...)")
    fields: dict[str, Any] = {"name": name}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or key not in ARM_KEYS:
            raise ConfigError(f"--arm {text!r}: {item!r} is not KEY=VAL with KEY one of {', '.join(ARM_KEYS)}")
        fields[key] = _split_list(value) if key == "nudges" else value
    try:
        return ArmConfig(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"--arm {text!r}: {err['loc'][0]}: {err['msg']}") from None


def env_layer(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """AWM_<FIELD> variables, e.g. AWM_CONCURRENCY=64 or AWM_POLICY=qwen3-4b."""
    env = os.environ if env is None else env
    out: dict[str, Any] = {}
    for name in RunConfig.model_fields:
        value = env.get(f"AWM_{name.upper()}")
        if value is not None and name not in ("arms", "config_path", "models"):
            out[name] = value
    return out


def build_run_config(cli: Mapping[str, Any], file: Mapping[str, Any] | None = None,
                     env: Mapping[str, str] | None = None, *,
                     file_name: str | None = None, file_keys: Collection[str] | None = None) -> RunConfig:
    """Merge the layers (CLI > file > env > defaults) and validate once, with one-line errors.

    An error names where the value came from, as it was written there: `--concurrency` for a flag,
    `FILE: [run] concurency` for a key of awm.toml (`file_name`; `file_keys` are the keys it gave, default
    all of `file`), `AWM_CONCURRENCY` for the environment."""
    merged: dict[str, Any] = {}
    where: dict[str, str] = {}
    env_values = env_layer(env)
    given = {k: v for k, v in cli.items() if v is not None}
    from_file = set(file or {}) if file_keys is None else set(file_keys)
    for layer, name in ((env_values, "env"), (dict(file or {}), "file"), (given, "cli")):
        merged.update(layer)
        where.update({k: name for k in layer})
    if "arms" in merged:
        merged["arms"] = tuple(parse_arm(a) if isinstance(a, str) else ArmConfig(**a) for a in merged["arms"])
        names = [a.name for a in merged["arms"]]
        if len(set(names)) != len(names):
            raise ConfigError(f"--arm names must be unique, got {', '.join(names)}")
    _check_sequential(merged)
    try:
        return RunConfig(**merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        field = ".".join(str(p) for p in err["loc"])
        if where.get(key) == "file" and file_name is not None and key in from_file:
            label = f"{file_name}: [run] {field}"
            if err["type"] == "extra_forbidden":
                close = difflib.get_close_matches(key, list(RunConfig.model_fields), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigError(f"{label}: unknown key{hint}; [run] takes awm-run's flags, with _ for -, "
                                  "e.g. concurrency = 64") from None
        elif where.get(key) == "env":
            label = f"AWM_{key.upper()}"
        else:
            label = "--" + field.replace("_", "-")
        raise ConfigError(f"{label}: {err['msg']} (got {err.get('input')!r})") from None


def _check_sequential(merged: Mapping[str, Any]) -> None:
    """--until-decided compares exactly two arms, one pair at a time; its budgets need it."""
    if not merged.get("until_decided"):
        for key in ("max_episodes", "max_usd"):
            if merged.get(key) is not None:
                raise ConfigError(f"--{key.replace('_', '-')} is a budget of --until-decided: add --until-decided "
                                  "--arm A:... --arm B:...")
        return
    arms = merged.get("arms") or ()
    if len(arms) != 2:
        raise ConfigError(f"--until-decided compares two arms: give exactly two --arm flags (got {len(arms)})")
    if merged.get("group_size"):
        raise ConfigError("--until-decided runs paired episodes, not GRPO groups: drop --group-size")
