"""The one exception tree of awm-runtime.

    AwmError
    ├── ConfigError            bad input found before a run starts (CLI exit 2)
    ├── ModelError(kind)       a model call failed: rate_limit | server | timeout | connection
    │                          | context | content_filter | auth | not_found | bad_request | fatal
    ├── WorldError             scenario code failed to load, hung, or killed its worker
    ├── VerifierError          a verifier crashed, hung or returned nonsense
    ├── WorkerLost             the process running an episode died (a Ray node or actor): not recorded
    └── AgentFacingError       errors the *agent* should see and may recover from
        └── FormatError(kind)  a reply that meant to act but cannot be executed

Everything except AgentFacingError is fatal to the episode and is recorded as
`outcome: error` (infrastructure), never as the agent's failure; except WorkerLost: an episode
whose process died has no record at all, so `--resume` runs it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from awm_runtime._types import FormatErrorKind

ModelErrorKind = Literal[
    "rate_limit",
    "server",
    "timeout",
    "connection",
    "context",
    "content_filter",
    "auth",
    "not_found",
    "bad_request",
    "fatal",
]


class AwmError(Exception):
    """Root of every error awm-runtime raises on purpose."""

    @property
    def error_class(self) -> str:
        return type(self).__name__


class ConfigError(AwmError):
    """Bad configuration or input, detected before episodes start."""


class ModelError(AwmError):
    """A model call failed for good (retries exhausted, or not retryable)."""

    def __init__(self, message: str, *, kind: ModelErrorKind, role: str = "", alias: str = "") -> None:
        super().__init__(message)
        self.kind: ModelErrorKind = kind
        self.role = role
        self.alias = alias

    @property
    def error_class(self) -> str:
        return f"ModelError.{self.kind}"


class WorldError(AwmError):
    """The world (scenario code, its DB, or its worker) failed, not the agent."""


class VerifierError(AwmError):
    """The verifier could not produce a verdict."""


class WorkerLost(AwmError):
    """The process that ran (or was to run) an episode is gone; the episode is not recorded.
    `stopping`: it was not run because the run is stopping, which is no loss."""

    def __init__(self, message: str, *, stopping: bool = False) -> None:
        super().__init__(message)
        self.stopping = stopping


class AgentFacingError(AwmError):
    """An error the agent caused and is told about; the episode goes on."""


class FormatError(AgentFacingError):
    """A policy reply that meant to call a tool but cannot be executed."""

    def __init__(self, message: str, *, kind: FormatErrorKind) -> None:
        super().__init__(message)
        self.kind: FormatErrorKind = kind
