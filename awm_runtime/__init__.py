"""awm-runtime: run many concurrent LLM-agent episodes against Agent World Model worlds.

The public API is what this module exports; everything else is internal.

    import asyncio, awm_runtime
    result = asyncio.run(awm_runtime.run(awm_runtime.RunConfig(policy="sim/oracle", expert="none")))

`run(config)` prepares first; `prepare(config)` alone resolves and checks the run (bad input fails there,
before any episode) and `run(prepared)` executes what it returned.

Names load on first use (PEP 562), so importing one part of the package (`awm_runtime.groups`, the
CLI's `--help`) does not import the scheduler, the world engine or a model SDK.
"""

import importlib as _importlib
import typing as _typing

from awm_runtime._version import __version__ as __version__

if _typing.TYPE_CHECKING:
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
    from awm_runtime._events import EpisodeEnded, EpisodeStarted, Event, ExpertCalled, NudgeSent, ToolCalled, TurnEnded
    from awm_runtime._interfaces import (
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
    from awm_runtime.episode import (
        Checkpoint,
        EpisodeLimits,
        ExpertBudget,
        Harness,
        fork_episode,
        load_checkpoint,
        run_episode,
    )
    from awm_runtime.models import load_registry, shutdown
    from awm_runtime.scheduler import RunResult, prepare, run
    from awm_runtime.worlds import load_worlds



_HOME = {
    "Action": "awm_runtime._interfaces",
    "Advice": "awm_runtime._interfaces",
    "AdviceRequest": "awm_runtime._interfaces",
    "Advisor": "awm_runtime._interfaces",
    "AgentFacingError": "awm_runtime._errors",
    "ArmConfig": "awm_runtime._config",
    "AwmError": "awm_runtime._errors",
    "CallTool": "awm_runtime._interfaces",
    "Checkpoint": "awm_runtime.episode",
    "ConfigError": "awm_runtime._errors",
    "EpisodeEnded": "awm_runtime._events",
    "EpisodeLimits": "awm_runtime.episode",
    "EpisodeRecord": "awm_runtime._types",
    "EpisodeSpec": "awm_runtime._types",
    "EpisodeStarted": "awm_runtime._events",
    "EpisodeView": "awm_runtime._interfaces",
    "Event": "awm_runtime._events",
    "Expert": "awm_runtime._interfaces",
    "ExpertBudget": "awm_runtime.episode",
    "ExpertCalled": "awm_runtime._events",
    "FinalAnswer": "awm_runtime._interfaces",
    "FormatError": "awm_runtime._errors",
    "GroupInfo": "awm_runtime._types",
    "Harness": "awm_runtime.episode",
    "ListTools": "awm_runtime._interfaces",
    "Malformed": "awm_runtime._interfaces",
    "Message": "awm_runtime._types",
    "ModelError": "awm_runtime._errors",
    "ModelRef": "awm_runtime._types",
    "NudgeRule": "awm_runtime._interfaces",
    "NudgeSent": "awm_runtime._events",
    "Policy": "awm_runtime._interfaces",
    "PolicyTurn": "awm_runtime._interfaces",
    "RewardShaper": "awm_runtime._interfaces",
    "RunConfig": "awm_runtime._config",
    "RunResult": "awm_runtime.scheduler",
    "Sink": "awm_runtime._interfaces",
    "Task": "awm_runtime._types",
    "ToolCall": "awm_runtime._types",
    "ToolCalled": "awm_runtime._events",
    "ToolResult": "awm_runtime._types",
    "ToolSpec": "awm_runtime._types",
    "TurnEnded": "awm_runtime._events",
    "Usage": "awm_runtime._types",
    "Verdict": "awm_runtime._types",
    "VerifierError": "awm_runtime._errors",
    "World": "awm_runtime._interfaces",
    "WorldError": "awm_runtime._errors",
    "WorldSession": "awm_runtime._interfaces",
    "build_harness": "awm_runtime._build",
    "build_run_config": "awm_runtime._config",
    "fork_episode": "awm_runtime.episode",
    "load_checkpoint": "awm_runtime.episode",
    "load_registry": "awm_runtime.models",
    "load_worlds": "awm_runtime.worlds",
    "prepare": "awm_runtime.scheduler",
    "run": "awm_runtime.scheduler",
    "run_episode": "awm_runtime.episode",
    "shutdown": "awm_runtime.models",
}

__all__ = [
    "Action",
    "Advice",
    "AdviceRequest",
    "Advisor",
    "AgentFacingError",
    "ArmConfig",
    "AwmError",
    "CallTool",
    "Checkpoint",
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
    "fork_episode",
    "load_checkpoint",
    "load_registry",
    "load_worlds",
    "prepare",
    "run",
    "run_episode",
    "shutdown",
]


def __getattr__(name: str) -> _typing.Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'awm_runtime' has no attribute {name!r}")
    from awm_runtime._log import default_to_stderr

    default_to_stderr()  # the program uses the package: our log lines go to stderr, not its stdout
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
