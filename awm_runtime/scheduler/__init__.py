"""The scheduler: plans a run's episodes and runs them concurrently, isolated and resumable."""

from awm_runtime.scheduler._plan import episode_seed, parse_task_spec, plan_episodes, select_tasks
from awm_runtime.scheduler._runtime import PreparedRun, RunResult, Unit, error_record, prepare, run

__all__ = ["PreparedRun", "RunResult", "Unit", "episode_seed", "error_record", "parse_task_spec", "plan_episodes",
           "prepare", "run", "select_tasks"]
