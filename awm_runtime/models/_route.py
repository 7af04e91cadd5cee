"""Where one role's calls go (Route) and how one attempt reaches the model (the Transport protocol)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Protocol

from awm_runtime._types import ModelRole
from awm_runtime.models._reply import ModelReply


@dataclass(frozen=True, slots=True)
class Route:
    """Where one role's calls go. The key stays in the environment; only its variable's name travels."""

    role: ModelRole
    alias: str
    model: str
    api_base: str | None
    api_key_env: str | None

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def to_wire(self) -> list[Any]:
        return [self.role, self.alias, self.model, self.api_base, self.api_key_env]


class Transport(Protocol):
    """How one model call goes over the wire (litellm, our direct HTTP, or an in-process call): one attempt
    per call, retries and limits are the client's."""

    async def attempt(self, route: Route, messages: list[dict[str, Any]], params: dict[str, Any],
                      timeout_s: float) -> ModelReply:
        """One HTTP attempt; raises AttemptError (classified, redacted) on any failure."""
        ...
