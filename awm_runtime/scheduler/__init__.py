"""The scheduler: plans a run's episodes and runs them concurrently, isolated, stoppable and resumable."""

from awm_runtime._seeds import episode_seed
from awm_runtime._units import Unit
from awm_runtime.scheduler._admission import endpoint_gates, gate_notes
from awm_runtime.scheduler._control import LoopLag, RunControl, cpu_s, must_finish, rss_mib
from awm_runtime.scheduler._decide import PairWatch, require_prices
from awm_runtime.scheduler._entry import run
from awm_runtime.scheduler._episode_pool import EpisodePool, error_record
from awm_runtime.scheduler._fds import raise_open_files
from awm_runtime.scheduler._forks import (
    ForkPlanner,
    fork_arms,
    fork_config,
    parse_filter,
    parse_fork_arm,
    pin_checkpoints,
    pinned_checkpoints,
    plan_forks,
    select_checkpoints,
)
from awm_runtime.scheduler._launch import Launch
from awm_runtime.scheduler._plan import (
    order_tasks,
    parse_task_spec,
    plan_episodes,
    resolve_shards,
    scenario_matches,
    select_tasks,
)
from awm_runtime.scheduler._prepare import PreparedRun, prepare, ready, revise
from awm_runtime.scheduler._progress import RunProgress
from awm_runtime.scheduler._run import RunResult
from awm_runtime.scheduler._trust import check_manifest, own_models

__all__ = [
    "EpisodePool",
    "ForkPlanner",
    "Launch",
    "LoopLag",
    "PairWatch",
    "PreparedRun",
    "RunControl",
    "RunProgress",
    "RunResult",
    "Unit",
    "check_manifest",
    "cpu_s",
    "endpoint_gates",
    "episode_seed",
    "error_record",
    "fork_arms",
    "fork_config",
    "gate_notes",
    "must_finish",
    "order_tasks",
    "own_models",
    "parse_filter",
    "parse_fork_arm",
    "parse_task_spec",
    "pin_checkpoints",
    "pinned_checkpoints",
    "plan_episodes",
    "plan_forks",
    "prepare",
    "raise_open_files",
    "ready",
    "require_prices",
    "resolve_shards",
    "revise",
    "rss_mib",
    "run",
    "scenario_matches",
    "select_checkpoints",
    "select_tasks",
]
