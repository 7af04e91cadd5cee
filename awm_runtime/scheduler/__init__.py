"""The scheduler: plans a run's episodes and runs them concurrently, isolated, stoppable and resumable."""

from awm_runtime._seeds import episode_seed
from awm_runtime._units import Unit
from awm_runtime.scheduler._control import LoopLag, RunControl, must_finish
from awm_runtime.scheduler._decide import PairWatch, require_prices
from awm_runtime.scheduler._episode_pool import EpisodePool, error_record
from awm_runtime.scheduler._plan import order_tasks, parse_task_spec, plan_episodes, select_tasks
from awm_runtime.scheduler._prepare import PreparedRun, prepare
from awm_runtime.scheduler._processes import resolve_shards
from awm_runtime.scheduler._progress import RunProgress
from awm_runtime.scheduler._run import RunResult, run

__all__ = ["EpisodePool", "LoopLag", "PairWatch", "PreparedRun", "RunControl", "RunProgress", "RunResult", "Unit",
           "episode_seed", "error_record", "must_finish", "order_tasks", "parse_task_spec", "plan_episodes",
           "prepare", "require_prices", "resolve_shards", "run", "select_tasks"]
