"""Core data types: messages, tools, tasks, episode specs, verdicts and the episode record."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Literal, get_args

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

Role = Literal["system", "user", "assistant", "tool"]
Source = Literal["policy", "world", "expert", "nudge", "system"]
# `unverified`: nothing judged the episode (no verifier, no --judge); it leaves the rates like `error`, but is no fault.
Outcome = Literal["complete", "incomplete", "format_error", "error", "unverified"]
FormatErrorKind = Literal[
    "invalid_json",
    "unclosed_tag",
    "missing_name",
    "unknown_tool",
    "schema_violation",
    "empty_reply",
    "truncated",
    "multiple_calls",
    # Arguments no wire can carry (policies/protocols/_carry.py), checked when the reply is parsed.
    "unencodable_text",
    "number_out_of_range",
    "arguments_too_deep",
    "arguments_too_large",
]
FORMAT_ERROR_KINDS: tuple[FormatErrorKind, ...] = get_args(FormatErrorKind)
# The roles a model plays in a run; each has its own client, limits and usage (a message's role is `Role`).
ModelRole = Literal["policy", "expert", "judge"]
MODEL_ROLES: tuple[ModelRole, ...] = get_args(ModelRole)
# An episode's identity in a run: (arm, scenario, task_idx, repeat), as EpisodeSpec.key and EpisodeRecord.key.
EpisodeKey = tuple[str, str, int, int]
VerdictResult = Literal[
    "complete",
    "incomplete",
    "others",
    "verifier_raised",  # the verify function raised on the final DB (e.g. the agent dropped a table)
    "verifier_error",  # the sandbox could not run the verifier (timeout, killed, limits, server died)
    "judge_error",  # no verdict for a reason that is not the agent's: broken verifier code, a judge failure
    "judge_unclassified",  # the SQL judge answered twice with no classification: the agent's incomplete
    "no_verifier",
    "not_run",
    "agent_error",  # SQL-judge labels of runs before the judge accepted only complete | incomplete
    "server_error",
]
# Why an episode ended, one closed set (docs/runs.md, "Outcomes"). The first eight are the agent's
# (or its arm's) doing; `no_verifier` is no one's (`outcome: unverified`); the rest are infrastructure
# and always come with `outcome: error`.
EndReason = Literal[
    "final_answer",
    "max_turns",
    "timeout",
    "context_overflow",
    "content_filter",
    "format_error",
    "verifier_raised",
    "judge_unclassified",  # the SQL judge's reply held no classification, twice: the agent's incomplete
    "no_verifier",  # nothing could judge the episode: outcome `unverified`
    "model_error",
    "world_error",
    "verifier_error",
    "judge_error",
    "runtime_error",
]
END_REASONS: tuple[str, ...] = EndReason.__args__  # type: ignore[attr-defined]
INFRA_END_REASONS: frozenset[str] = frozenset(
    {"model_error", "world_error", "verifier_error", "judge_error", "runtime_error"})
AskStyle = Literal["solo", "recovery", "blind"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolSpec(_Model):
    """A tool the agent may call: fastapi-mcp's shape (name, description, flat JSON schema)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }


def tool_set(tools: Sequence[ToolSpec]) -> tuple[str, list[dict[str, Any]]]:
    """The OpenAI function tools of a tool set, and its id: a hash of their canonical JSON.

    Runs write each distinct set once to tools.jsonl and records carry only the id: a scenario's
    35 tools are ~10-40 KB of JSON, which would otherwise repeat in every episode's record."""
    functions = [t.to_openai() for t in tools]
    digest = hashlib.sha256(orjson.dumps(functions, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"sha256:{digest[:24]}", functions


class ToolCall(_Model):
    """A parsed, executable call: the tool's name and its decoded arguments."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(_Model):
    """What a tool call returned, as the agent will see it."""

    text: str
    is_error: bool = False
    status: int | None = None
    elapsed_ms: float = 0.0


class Message(_Model):
    """One chat message in OpenAI format, tagged with who produced it.

    Extra fields beyond OpenAI's (`source`, `turn`, `reasoning`, `format_error`, token data)
    are dropped by `to_openai()` before a message goes to a model; `provider_state` goes back to the model
    that returned it.
    """

    role: Role
    content: str | None = None
    source: Source
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    turn: int | None = None
    reasoning: str | None = None
    format_error: str | None = None
    tool_error: bool | None = None  # on world results: the call failed (HTTP >= 400, bad arguments, ...)
    logprobs: list[Any] | None = None
    token_ids: list[int] | None = None
    finish_reason: str | None = None  # on policy replies: why generation stopped (`length`: cut at max_tokens)
    # The prompt's token ids as the serving engine tokenised it (vLLM `prompt_token_ids`): kept in memory for
    # rollouts (integrations.trl), never written to episodes.jsonl, where it would grow with the square of the turns.
    prompt_token_ids: list[int] | None = Field(default=None, exclude=True)
    # Token in, token out (an alias with `tito = true`): the prompt tokens this reply's turn added after the
    # previous reply's ids (the whole prompt on the first reply). Every reply's `prompt_delta_ids` then its
    # `token_ids`, in order, are the episode's exact token sequence (models/_tito.py).
    prompt_delta_ids: list[int] | None = None
    # On policy replies: what the provider needs back on every later request of the episode, verbatim (issue 46):
    # {"model": the model that produced it, "fields": {"thinking_blocks": Anthropic's signed blocks,
    # "provider_specific_fields": litellm's (Gemini thought signatures ...), "reasoning_content": vLLM's}}.
    # `to_openai(model)` hands the fields back to that model only (models/_reasoning.py).
    provider_state: dict[str, Any] | None = None
    # On a policy reply: its request asked the model to reason, but the previous reply's tool call went back without
    # that model's reasoning state (a transcript from another model or an older run): the provider refused it, or
    # answered without its earlier thinking (litellm's modify_params, Gemini's dummy signature). Counted per arm.
    reasoning_dropped: bool | None = None

    def to_openai(self, model: str | None = None) -> dict[str, Any]:
        """The message as OpenAI chat sends it; with `model`, plus the provider state `model` itself returned."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            out["name"] = self.name
        if self.provider_state and model is not None and self.provider_state.get("model") == model:
            out.update(self.provider_state.get("fields") or {})
        return out


class Task(_Model):
    """A natural-language task in one scenario of a world set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario: str  # normalised scenario name: the join key across AWM files
    task_idx: int
    text: str
    scenario_title: str = ""
    has_verifier: bool = True
    # app: an AWM scenario's API, used for its current user; mcp: the tools of an MCP server (no app, no user).
    kind: Literal["app", "mcp"] = "app"

    @property
    def key(self) -> tuple[str, int]:
        return (self.scenario, self.task_idx)


class ForkSpec(_Model):
    """An episode started from a checkpoint instead of a reset (episode/_checkpoint.py, docs/forks.md).

    `mode`: `continue` plays on with the arm as it is; `ask` gives the expert's advice at the fork turn;
    `solo` withholds ask_expert from the fork turn on (or for `solo_turns` turns); `resume` continues an
    episode that a killed run left in flight (its record then replaces the one never written)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    checkpoint: str  # path of the checkpoint's JSON file
    mode: Literal["continue", "ask", "solo", "resume"] = "continue"
    solo_turns: int | None = None
    repeat: int = 0  # which continuation of this checkpoint and arm


class EpisodeSpec(_Model):
    """Which episode to run. `key` identifies it for resume."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arm: str = "default"
    scenario: str
    task_idx: int
    repeat: int = 0
    seed: int = 0
    group_id: str | None = None
    with_expert: bool = True  # False: a solo member of a GRPO group runs without the arm's expert
    fork: ForkSpec | None = None  # start from a checkpoint instead of a reset

    @property
    def key(self) -> EpisodeKey:
        return (self.arm, self.scenario, self.task_idx, self.repeat)


# No model's context holds more in one call; a usage count above it is the provider's (or its proxy's) error.
MAX_TOKENS_PER_CALL = 10_000_000


class Usage(_Model):
    """Token and cost accounting for one role within an episode."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    # Provider economics (issue 26): each answered call's latency, retried attempts, and whether every
    # call had a price (None: no call has said; an unpriced call makes the cost unknown, never $0).
    latency_s: list[float] = Field(default_factory=list)
    retries: int = 0
    cost_known: bool | None = None
    # Of completion_tokens, those the model spent reasoning (OpenAI / vLLM `completion_tokens_details.reasoning_tokens`,
    # Gemini `thoughtsTokenCount`). None: not reported by some call of this role (Anthropic's wire never says how many
    # of its output tokens were thinking), never 0. Billed as output tokens: already inside completion_tokens.
    reasoning_tokens: int | None = None

    @field_validator("cost_usd", mode="before")
    @classmethod
    def _unknown_cost_reads_back(cls, value: Any) -> Any:
        return 0.0 if value is None else value  # a record's null cost: unknown, and cost_known says so

    @field_serializer("cost_usd")
    def _unknown_cost_is_null(self, value: float) -> float | None:
        """A role whose calls were not all priced has no known cost: its records say null, never a partial $."""
        return None if self.cost_known is False else value

    def add(self, other: Usage) -> None:
        if other.calls:  # a role's reasoning total is known only while every call of it reported its own
            self.reasoning_tokens = other.reasoning_tokens if not self.calls else (
                None if self.reasoning_tokens is None or other.reasoning_tokens is None
                else self.reasoning_tokens + other.reasoning_tokens)
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost_usd += other.cost_usd
        self.latency_s.extend(other.latency_s)
        self.retries += other.retries
        if other.cost_known is not None:
            self.cost_known = other.cost_known and self.cost_known is not False


class Verdict(_Model):
    """The verifier's judgement of the final world state."""

    result: VerdictResult
    mode: Literal["code", "sql", "none"] = "code"
    detail: dict[str, Any] = Field(default_factory=dict)
    elapsed_ms: float = 0.0
    error: str | None = None

    @property
    def complete(self) -> bool:
        return self.result == "complete"


class ModelRef(_Model):
    """Which model played a role: the alias the user chose and the model it resolved to."""

    alias: str
    model: str
    simulated: bool = False
    protocol: str | None = None  # the policy's tool-call protocol: how to re-parse its replies


class WorkerRef(_Model):
    """Which process ran an episode: its Ray node id (None off Ray), host and pid."""

    node: str | None = None
    host: str = ""
    pid: int = 0


class ErrorInfo(_Model):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    error_class: str = Field(alias="class")
    message: str


class ExpertAnswer(_Model):
    """Who answered one ask_expert call, and how long it took."""

    turn: int
    answered_by: str
    latency_s: float
    fallback: bool = False


class NudgeEvent(_Model):
    turn: int
    rule: str
    followed_by_ask: bool = False


class GroupInfo(_Model):
    """A GRPO group member's place in its group (the group's id is the record's `group_id`)."""

    step: int
    size: int
    expert_members: int
    with_expert: bool
    phase: str | None = None  # adaptive curriculum phase, None for a fixed --expert-ratio
    complete: bool = True  # False: a member still failed (infrastructure) after its re-run
    retried: dict[str, Any] | None = None  # {episode_id, error} of the attempt this record replaced


class EpisodeRecord(_Model):
    """One finished episode: the contract of `episodes.jsonl` (BRIEF §5)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    episode_id: str
    run_id: str = ""
    arm: str
    scenario: str
    task_idx: int
    repeat: int
    seed: int = 0
    task: str = ""
    policy: ModelRef
    expert: ModelRef | None = None
    outcome: Outcome
    end_reason: EndReason | None = None  # None only in records written before end reasons existed
    end_detail: str | None = None  # what ended an episode early (deadline, overflow text), when not `error`
    verdict: VerdictResult
    verdict_detail: dict[str, Any] = Field(default_factory=dict)
    reward: float = 0.0
    reward_components: dict[str, Any] = Field(default_factory=dict)
    ask_style: AskStyle = "solo"
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    format_errors: dict[str, int] = Field(default_factory=dict)
    expert_calls: int = 0
    expert_answers: list[ExpertAnswer] = Field(default_factory=list)
    nudges: int = 0
    nudge_log: list[NudgeEvent] = Field(default_factory=list)
    final_answer: str = ""
    messages: list[Message] = Field(default_factory=list)
    usage: dict[str, Usage] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    error: ErrorInfo | None = None
    group_id: str | None = None
    advantage: float | None = None
    group: GroupInfo | None = None
    worker: WorkerRef | None = None
    replaced_chars: int = 0  # lone surrogates in the record's text written as U+FFFD (_encodable.py)
    tools_id: str | None = None  # the tool set offered to the policy: a line of the run's tools.jsonl
    # Forks (docs/forks.md): where this episode was forked from, {run, episode_id, turn, mode, repeat, ...}.
    fork: dict[str, Any] | None = None
    # Checkpoints this episode saved: {mode, count, bytes, seconds}.
    checkpoints: dict[str, Any] | None = None
    # A mid-episode resume: the checkpoint this record continued from, {episode_id, turn, path}.
    resumed_from: dict[str, Any] | None = None
    # The OpenAI function tools behind tools_id, in memory only: the run directory keeps each set once.
    tools: list[dict[str, Any]] | None = Field(default=None, exclude=True)

    @property
    def key(self) -> EpisodeKey:
        return (self.arm, self.scenario, self.task_idx, self.repeat)

    @property
    def format_error_count(self) -> int:
        return sum(self.format_errors.values())
