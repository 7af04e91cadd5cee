"""awm-runtime: run many concurrent LLM-agent episodes against Agent World Model worlds.

The public API is what this module exports; everything else is internal.

    import asyncio, awm_runtime
    result = asyncio.run(awm_runtime.run(awm_runtime.RunConfig(policy="sim/oracle", expert="none")))
"""

from awm_runtime._build import build_harness
from awm_runtime._config import ArmConfig, RunConfig, build_run_config
from awm_runtime._errors import (
    AgentFacingError,
    AwmError,
    ConfigError,
    FormatError,
    ModelError,
    VerifierError,
    WorldError,
)
from awm_runtime._events import (
    EpisodeEnded,
    EpisodeStarted,
    Event,
    ExpertCalled,
    NudgeSent,
    ToolCalled,
    TurnEnded,
)
from awm_runtime._protocols import (
    Action,
    Advice,
    AdviceRequest,
    Advisor,
    CallTool,
    EpisodeView,
    Expert,
    FinalAnswer,
    ListTools,
    Malformed,
    NudgeRule,
    Policy,
    PolicyTurn,
    RewardShaper,
    Sink,
    World,
    WorldSession,
)
from awm_runtime._types import (
    EpisodeRecord,
    EpisodeSpec,
    GroupInfo,
    Message,
    ModelRef,
    Task,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    Verdict,
)
from awm_runtime.episode import EpisodeLimits, ExpertBudget, Harness, run_episode
from awm_runtime.scheduler import RunResult, prepare, run
from awm_runtime.worlds import load_worlds

__version__ = "0.1.0"

__all__ = [
    "Action",
    "Advice",
    "AdviceRequest",
    "Advisor",
    "AgentFacingError",
    "ArmConfig",
    "AwmError",
    "CallTool",
    "ConfigError",
    "EpisodeEnded",
    "EpisodeLimits",
    "EpisodeRecord",
    "EpisodeSpec",
    "EpisodeStarted",
    "EpisodeView",
    "Event",
    "Expert",
    "ExpertBudget",
    "ExpertCalled",
    "FinalAnswer",
    "FormatError",
    "GroupInfo",
    "Harness",
    "ListTools",
    "Malformed",
    "Message",
    "ModelError",
    "ModelRef",
    "NudgeRule",
    "NudgeSent",
    "Policy",
    "PolicyTurn",
    "RewardShaper",
    "RunConfig",
    "RunResult",
    "Sink",
    "Task",
    "ToolCall",
    "ToolCalled",
    "ToolResult",
    "ToolSpec",
    "TurnEnded",
    "Usage",
    "Verdict",
    "VerifierError",
    "World",
    "WorldError",
    "WorldSession",
    "build_harness",
    "build_run_config",
    "load_worlds",
    "prepare",
    "run",
    "run_episode",
]
