"""A client that speaks OpenEnv's wire protocol with OpenEnv's own code: openenv 0.3.1's MCPToolClient and models.

AWMEnv (OpenEnv's AWM client) is MCPToolClient with a `_parse_result` that builds its observation models, which
forbid unknown keys; the two models here declare the AWM fields as OPENENV.md lists them, on openenv's bases.
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsObservation
from openenv.core.env_server.types import Observation
from openenv.core.mcp_client import MCPToolClient
from pydantic import ConfigDict


class AwmObservation(Observation):
    model_config = ConfigDict(extra="forbid")

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

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        kwargs.setdefault("exclude_none", True)
        return super().model_dump(**kwargs)


class AwmListToolsObservation(ListToolsObservation):
    model_config = ConfigDict(extra="forbid")

    error: str | None = None


class AwmClient(MCPToolClient):
    """OpenEnv's MCPToolClient, parsing replies into the AWM models as AWMEnv does."""

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(base_url=base_url, **kwargs)
        self.payloads: list[dict[str, Any]] = []  # every observation payload, as received

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Any]:
        self.payloads.append(payload)
        obs = payload.get("observation", {})
        observation = AwmListToolsObservation(**obs) if "tools" in obs else AwmObservation(**obs)
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    async def call(self, tool: str, **arguments: Any) -> StepResult[Any]:
        return await self.step(CallToolAction(tool_name=tool, arguments=arguments))
