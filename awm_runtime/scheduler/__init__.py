"""The scheduler: plans a run's episodes and runs them concurrently, isolated, stoppable and resumable."""

from awm_runtime.scheduler._control import LoopLag, RunControl, must_finish
from awm_runtime.scheduler._plan import episode_seed, parse_task_spec, plan_episodes, select_tasks
from awm_runtime.scheduler._pool import EpisodePool, error_record
from awm_runtime.scheduler._progress import RunProgress
from awm_runtime.scheduler._runtime import PreparedRun, RunResult, Unit, prepare, run
from awm_runtime.scheduler._shards import resolve_shards

__all__ = ["EpisodePool", "LoopLag", "PreparedRun", "RunControl", "RunProgress", "RunResult", "Unit",
           "episode_seed", "error_record", "must_finish", "parse_task_spec", "plan_episodes", "prepare",
           "resolve_shards", "run", "select_tasks"]
