"""OpenEnv's AWM wire format: frame and action models, observation payloads, and the HTTP documents.

The models mirror openenv 0.3.1 and its AWM environment field for field (`/work/shared/OPENENV.md`), so a
bad frame gets the same pydantic errors OpenEnv's server sends, and `/schema` describes the same shapes.
Observation payloads are built as OpenEnv's `serialize_observation` builds them: `reward` and `done` at the
top level, and the observation without them, without `metadata` and without `None` fields.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

# Every key an AWM observation may carry (its client model forbids any other).
OBSERVATION_KEYS = frozenset({
    "reward_type", "scenario", "task", "task_idx", "has_verifier", "num_tools", "tool_name", "tool_result",
    "error", "warning", "verify_result", "steps_taken", "scenarios", "total", "trajectory_path", "session_dir",
})
ERROR_CODES = ("INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR", "EXECUTION_ERROR", "CAPACITY_REACHED",
               "FACTORY_ERROR", "SESSION_ERROR")
HTTP_NOT_SUPPORTED = {
    "error": "HTTP mode not supported for AWM environment",
    "reason": "Each session is a stateful episode that lives as long as its WebSocket; HTTP is stateless, so "
              "each request would get a new episode.",
    "solution": "Use WebSocket endpoint instead",
    "examples": ["Python: AWMEnv(base_url='http://host:port')  # uses /ws internally",
                 "Direct: connect to ws://host:port/ws"],
}


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ResetFrame(_Frame):
    type: Literal["reset"] = "reset"
    data: dict[str, Any] = Field(default_factory=dict)


class StepFrame(_Frame):
    type: Literal["step"] = "step"
    data: dict[str, Any]


class StateFrame(_Frame):
    type: Literal["state"] = "state"


class CloseFrame(_Frame):
    type: Literal["close"] = "close"


class McpFrame(_Frame):
    type: Literal["mcp"] = "mcp"
    data: dict[str, Any]


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)

    metadata: dict[str, Any] = Field(default_factory=dict, description="Additional metadata for the action")


class ListToolsAction(_Action):
    """List the scenario's tools (the hidden tools are not listed)."""

    type: Literal["list_tools"] = Field(default="list_tools", description="Action type discriminator")


class CallToolAction(_Action):
    """Call a tool, or one of the hidden tools `verify`, `done` and `__list_scenarios__`."""

    type: Literal["call_tool"] = Field(default="call_tool", description="Action type discriminator")
    tool_name: str = Field(description="Name of the tool to call")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments to pass to the tool")


ACTION = TypeAdapter(Annotated[ListToolsAction | CallToolAction, Field(discriminator="type")])


class ToolInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    input_schema: dict[str, Any]


class AwmObservation(BaseModel):
    """The AWM observation as its client parses it; used for `/schema` and to check what we send."""

    model_config = ConfigDict(extra="forbid")

    done: bool = False
    reward: bool | int | float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    reward_type: str | None = None
    scenario: str | None = None
    task: str | None = None
    task_idx: int | None = None
    has_verifier: dict[str, Any] | bool | None = None
    num_tools: int | None = None
    tool_name: str | None = None
    tool_result: Any = None
    error: str | None = None
    warning: str | None = None
    verify_result: dict[str, Any] | None = None
    steps_taken: int | None = None
    scenarios: list[Any] | None = None
    total: int | None = None
    trajectory_path: str | None = None
    session_dir: str | None = None


class State(BaseModel):
    model_config = ConfigDict(extra="allow", validate_assignment=True)

    episode_id: str | None = None
    step_count: int = Field(default=0, ge=0)


def observation(reward: float | None = None, done: bool = False, **fields: Any) -> dict[str, Any]:
    """An observation payload: the fields that are not None, with `reward` and `done` beside them."""
    obs = {k: v for k, v in fields.items() if v is not None}
    unknown = set(obs) - OBSERVATION_KEYS
    if unknown:
        raise ValueError(f"not an AWM observation key: {sorted(unknown)}")
    return {"observation": obs, "reward": reward, "done": done}


def tools_observation(tools: list[dict[str, Any]], error: str | None = None) -> dict[str, Any]:
    """A list_tools payload: `tools` and `error` (null on success, as OpenEnv's list-tools model dumps it)."""
    return {"observation": {"tools": tools, "error": error}, "reward": None, "done": False}


def error_frame(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **extra}}


def schema() -> dict[str, Any]:
    """`GET /schema`: the action, observation and state JSON schemas."""
    return {"action": ACTION.json_schema(), "observation": AwmObservation.model_json_schema(),
            "state": State.model_json_schema()}


def metadata() -> dict[str, Any]:
    """`GET /metadata`, in OpenEnv's EnvironmentMetadata shape."""
    return {"name": "AWMEnvironment", "description": "AWMEnvironment environment served by awm-runtime (awm-serve)",
            "readme_content": None, "version": "1.0.0", "author": "awm-runtime", "documentation_url": None}
