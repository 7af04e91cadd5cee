"""What remote worlds share: options, bounded retries, tasks known after `connect()`, reference solutions."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from awm_runtime._errors import ConfigError, WorldError
from awm_runtime._interfaces import WorldSession
from awm_runtime._log import get_logger
from awm_runtime._types import Task
from awm_runtime.verifiers import Judge
from awm_runtime.worlds._format import LoadProblem, Solution
from awm_runtime.worlds._load import iter_solutions, load_dataset

log = get_logger("awm_runtime.worlds")
T = TypeVar("T")


class TransientWorldError(WorldError):
    """A remote world failed in a way a new connection may fix: refused, dropped, timed out, at capacity."""


@dataclass(frozen=True, slots=True)
class RemoteOptions:
    """How remote worlds are reached. Every field has the runtime's default."""

    verifier: str = "code"  # the mode the remote `verify` is asked for (OpenEnv worlds)
    tool_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0  # OpenEnv's client default
    attempts: int = 4  # per connect / reset / recovery, with exponential backoff and jitter
    backoff_s: float = 0.25
    max_backoff_s: float = 4.0
    solutions: Path | None = None  # --solutions: reference solutions by (scenario, task_idx)
    # MCP worlds: the server's extra environment (--world-env KEY=VAL or KEY), the scenario's name when the
    # server's own will not do (--scenario-name), where stdio servers' stderr goes (<run dir>, as
    # worlds/<scenario>.log; None: a temporary folder), and a tool that resets an HTTP server's state.
    world_env: tuple[str, ...] = ()
    scenario_name: str | None = None
    log_dir: Path | None = None
    reset_tool: str | None = None
    spares: int = 2  # stdio servers started ahead of the episodes that will use them (0: start on demand)

    @property
    def message_timeout_s(self) -> float:
        """How long a reply may take: a tool call's timeout plus slack for the server's own timeout to fire."""
        return self.tool_timeout_s + 15.0


async def retried(what: str, attempts: int, options: RemoteOptions, fn: Callable[[], Awaitable[T]]) -> T:
    """Run `fn` until it succeeds or `attempts` transient failures have happened (then raise the last)."""

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning("remote_world_retry", what=what, attempt=state.attempt_number, error=str(exc))

    retrying = AsyncRetrying(stop=stop_after_attempt(max(1, attempts)), reraise=True, before_sleep=before_sleep,
                             retry=retry_if_exception(lambda e: isinstance(e, TransientWorldError)),
                             wait=wait_exponential_jitter(multiplier=options.backoff_s, max=options.max_backoff_s))
    async for attempt in retrying:
        with attempt:
            return await fn()
    raise AssertionError("unreachable")  # pragma: no cover


class RemoteWorld:
    """A World whose scenarios live elsewhere: `await connect()` once, then `tasks()` and `open()`."""

    judged_here = False  # True: our `--judge` decides verdicts (the world has no verifier of its own)

    def __init__(self, name: str, options: RemoteOptions | None = None, *, judge: Judge | None = None) -> None:
        self._name = name
        self.options = options or RemoteOptions()
        self.judge = judge
        self._tasks: list[Task] | None = None
        self._solutions: tuple[dict[tuple[str, int], Solution], dict[str, Solution]] | None = None
        self.problems: list[LoadProblem] = []

    @property
    def name(self) -> str:
        return self._name

    def tasks(self) -> Sequence[Task]:
        if self._tasks is None:
            raise ConfigError(f"world {self._name}: not connected (await world.connect() first)")
        return self._tasks

    async def connect(self) -> None:
        """Reach the world and learn its tasks; ConfigError (one line) if it cannot be reached."""
        raise NotImplementedError

    async def open(self, task: Task, *, episode_id: str) -> WorldSession:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None

    def solution(self, task: Task) -> Solution | None:
        """A reference solution for the simulations and the oracle expert: from --solutions by (scenario,
        task_idx), else the built-in worlds' solution of a task with the very same text."""
        if self._solutions is None:
            self._solutions = _load_solutions(self.options.solutions, self.problems)
        by_key, by_text = self._solutions
        return by_key.get(task.key) or by_text.get(task.text.strip())


def _load_solutions(path: Path | None, problems: list[LoadProblem]) -> tuple[dict[tuple[str, int], Solution],
                                                                               dict[str, Solution]]:
    from awm_runtime.worlds._builtin import BUILTIN_DATA

    by_key = {(sid, idx): sol for sid, idx, sol in iter_solutions(path, problems)} if path else {}
    builtin = load_dataset(BUILTIN_DATA)
    by_text: dict[str, Solution] = {}
    for sid, idx, sol in iter_solutions(BUILTIN_DATA / "solutions.json", problems):
        sc = builtin.scenarios.get(sid)
        if sc is not None and 0 <= idx < len(sc.tasks):
            by_text[sc.tasks[idx].strip()] = sol
    return by_key, by_text


async def bounded(aw: Awaitable[T], seconds: float, what: str) -> T:
    """`aw` within `seconds`, else a transient WorldError naming `what`."""
    try:
        async with asyncio.timeout(seconds):
            return await aw
    except TimeoutError:
        raise TransientWorldError(f"{what}: no reply within {seconds:g}s") from None


def as_text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
