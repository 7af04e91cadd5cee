"""The session manager behind awm-serve: one world, a cap on live sessions, shared by both adapters.

A session is one OpenEnv WebSocket or one MCP session. It costs a slot here and, once it has an episode,
one DB clone in the world's workdir; everything else (scenario code, verifiers) is shared by the world.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_runtime._errors import AwmError
from awm_runtime.verifiers import Judge
from awm_runtime.worlds import AwmWorld, Scenario, normalize_scenario


class CapacityReached(AwmError):
    """The server already holds its maximum number of sessions."""

    def __init__(self, active: int, limit: int) -> None:
        super().__init__(f"Server at capacity: {active}/{limit} sessions active. Cannot accept new connections.")
        self.active = active
        self.limit = limit


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """How awm-serve runs. Every field has the server's default."""

    max_sessions: int = 10_000  # OpenEnv's AWM server caps at the same number
    idle_timeout_s: float | None = 1800.0  # a session with no message for this long is closed; None = never
    sessions_dir: Path | None = None  # where `done` writes trajectories (and kept sessions); None = nowhere


@dataclass(slots=True)
class Slot:
    """One live session's bookkeeping, for `/stats`."""

    kind: str  # "ws" | "mcp"
    scenario: str | None = None
    last_active: float = field(default_factory=time.monotonic)

    def touch(self) -> None:
        self.last_active = time.monotonic()


class SessionHub:
    """Admits sessions up to the cap and hands them the world."""

    def __init__(self, world: AwmWorld, options: ServeOptions | None = None, *, judge: Judge | None = None) -> None:
        self.world = world
        self.options = options or ServeOptions()
        self.judge = judge
        self._live: dict[int, Slot] = {}
        self._listing: list[dict[str, Any]] | None = None
        self.started = time.monotonic()
        self.served = Counter[str]()
        self.reset_ms: deque[float] = deque(maxlen=10_000)  # the server's own time per reset, for /stats

    @property
    def active(self) -> int:
        return len(self._live)

    def claim(self, kind: str) -> Slot:
        if len(self._live) >= self.options.max_sessions:
            raise CapacityReached(len(self._live), self.options.max_sessions)
        slot = Slot(kind)
        self._live[id(slot)] = slot
        self.served[kind] += 1
        return slot

    def release(self, slot: Slot) -> None:
        self._live.pop(id(slot), None)

    def scenario(self, name: str) -> Scenario | None:
        """The runnable scenario a client names (any spelling that normalises to its id), else None."""
        sc = self.world.dataset.scenarios.get(normalize_scenario(name)) if name else None
        return sc if sc is not None and sc.runnable else None

    def listing(self) -> list[dict[str, Any]]:
        """`__list_scenarios__`: every runnable scenario of the dataset, in its file order (one that lacks a
        data file cannot be reset, so it is not offered)."""
        if self._listing is None:
            self._listing = [{"name": sc.id, "description": sc.description, "num_tasks": len(sc.tasks),
                              "tasks": list(sc.tasks)} for sc in self.world.dataset.scenarios.values() if sc.runnable]
        return self._listing

    def stats(self) -> dict[str, Any]:
        now = time.monotonic()
        idle = [now - s.last_active for s in self._live.values()]
        return {"total_sessions": len(self._live), "max_sessions": self.options.max_sessions,
                "sessions_by_kind": dict(Counter(s.kind for s in self._live.values())),
                "scenarios": dict(Counter(s.scenario or "unknown" for s in self._live.values())),
                "max_idle_s": round(max(idle), 1) if idle else 0, "idle_timeout_s": self.options.idle_timeout_s,
                "served": dict(self.served), "uptime_s": round(now - self.started, 1),
                "reset_ms": _percentiles(self.reset_ms)}


def _percentiles(values: deque[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}
    return {"n": len(ordered), "p50": round(ordered[len(ordered) // 2], 3),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3)}
