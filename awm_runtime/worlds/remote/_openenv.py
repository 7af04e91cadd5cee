"""`--worlds openenv+http://HOST:PORT`: episodes against an OpenEnv AWM server, one WebSocket per episode.

Tasks come from `__list_scenarios__`; the verdict from the server's `verify` (in `--verifier`'s mode, with the
final answer), called by the runtime after the episode, never by the agent. A reset that fails or a socket
that drops is retried within bounds; a socket that drops mid-episode is replaced by a new one that replays
the episode's tool calls on a fresh reset (an AWM world's state is a function of its calls), then the
interrupted call is sent again.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson

from awm_runtime._errors import ConfigError, WorldError
from awm_runtime._log import get_logger
from awm_runtime._types import Message, Task, ToolCall, ToolResult, ToolSpec, Verdict
from awm_runtime.worlds.remote._base import (
    RemoteOptions,
    RemoteWorld,
    TransientWorldError,
    as_text,
    bounded,
    retried,
)

log = get_logger("awm_runtime.worlds")
MAX_MESSAGE_BYTES = 100 << 20  # OpenEnv's client allows 100 MB replies
AGENT_FACING = ("Error calling ", "Unknown tool: ", "Input validation error: ")
HIDDEN_TOOLS = frozenset({"verify", "done", "__list_scenarios__"})
VERDICTS = {"complete", "others", "incomplete", "agent_error", "server_error", "judge_error", "no_verifier"}
_STATUS = re.compile(r"Status code: (\d{3})")


class _Socket:
    """One `/ws` connection: a request gets exactly one reply, so one request is in flight at a time."""

    def __init__(self, ws: Any, timeout_s: float, where: str) -> None:
        self.ws = ws
        self.timeout_s = timeout_s
        self.where = where

    @classmethod
    async def open(cls, url: str, options: RemoteOptions) -> _Socket:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidHandshake, InvalidURI

        try:
            ws = await bounded(connect(url, open_timeout=options.connect_timeout_s, max_size=MAX_MESSAGE_BYTES,
                                       ping_interval=20, ping_timeout=20, close_timeout=2),
                               options.connect_timeout_s + 1, f"connect {url}")
        except (OSError, InvalidHandshake) as exc:
            raise TransientWorldError(f"cannot connect to {url}: {exc}") from exc
        except InvalidURI as exc:
            raise WorldError(f"{url}: {exc}") from exc
        return cls(ws, options.message_timeout_s, url)

    async def request(self, frame: dict[str, Any]) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        try:
            await self.ws.send(orjson.dumps(frame).decode())
            raw = await bounded(self.ws.recv(), self.timeout_s, f"{self.where} ({frame.get('type')})")
        except ConnectionClosed as exc:
            raise TransientWorldError(f"{self.where}: the socket closed ({exc})") from exc
        try:
            reply = json.loads(raw)
        except ValueError as exc:
            raise WorldError(f"{self.where}: reply is not JSON: {str(raw)[:200]!r}") from exc
        if reply.get("type") == "error":
            data = reply.get("data") or {}
            text = f"{self.where}: server error {data.get('code')}: {data.get('message')}"
            raise TransientWorldError(text) if data.get("code") == "CAPACITY_REACHED" else WorldError(text)
        return dict(reply.get("data") or {})

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        data = await self.request({"type": "step", "data": action})
        return dict(data.get("observation") or {}) | {"_reward": data.get("reward"), "_done": data.get("done")}

    async def close(self) -> None:
        with contextlib.suppress(Exception):  # already gone: closing is best effort
            await self.ws.send('{"type":"close"}')
        with contextlib.suppress(Exception):
            await self.ws.close()


def _ws_url(base: str) -> str:
    parts = urlsplit(base)
    scheme = {"http": "ws", "https": "wss"}[parts.scheme]
    return f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}/ws"


class OpenEnvWorld(RemoteWorld):
    """An OpenEnv AWM server (OpenEnv's own, or awm-serve) as a World."""

    def __init__(self, base_url: str, options: RemoteOptions | None = None) -> None:
        parts = urlsplit(base_url)
        try:
            _ = parts.port  # read for its check: a port that is not a number in 0-65535 raises
        except ValueError as exc:
            raise ConfigError(f"--worlds openenv+{base_url}: {exc}; expected openenv+http://HOST:PORT") from None
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"--worlds openenv+{base_url}: expected openenv+http://HOST:PORT")
        super().__init__(f"openenv+{base_url}", options)
        self.url = _ws_url(base_url)

    async def connect(self) -> None:
        try:
            sock = await _Socket.open(self.url, self.options)
        except WorldError as exc:
            raise ConfigError(f"--worlds {self.name}: {exc}") from None
        try:
            obs = await sock.step({"type": "call_tool", "tool_name": "__list_scenarios__", "arguments": {}})
        except WorldError as exc:
            raise ConfigError(f"--worlds {self.name}: __list_scenarios__ failed: {exc}") from None
        finally:
            await sock.close()
        if not isinstance(obs.get("scenarios"), list):
            raise ConfigError(f"--worlds {self.name}: __list_scenarios__ answered {obs.get('reward_type')}: "
                              f"{obs.get('error')}")
        self._tasks = [Task(scenario=str(s["name"]), task_idx=i, text=str(text), scenario_title=str(s["name"]))
                       for s in obs["scenarios"] if isinstance(s, dict) and s.get("name")
                       for i, text in enumerate(s.get("tasks") or [])]
        log.info("remote_world_connected", world=self.name, tasks=len(self._tasks))

    async def open(self, task: Task, *, episode_id: str) -> OpenEnvSession:
        session = OpenEnvSession(self, task, episode_id)
        await retried("reset", self.options.attempts, self.options, session.start)
        return session


class ReplayDiverged(WorldError):
    """A replayed call (reconnect or fork) succeeded where it had failed, or the reverse."""

    def __init__(self, message: str, *, index: int) -> None:
        super().__init__(message)
        self.index = index


class OpenEnvSession:
    """One episode on an OpenEnv server. The agent reaches only the scenario's tools."""

    def __init__(self, world: OpenEnvWorld, task: Task, episode_id: str) -> None:
        self.world = world
        self.task = task
        self.episode_id = episode_id
        self._sock: _Socket | None = None
        self._tools: list[ToolSpec] = []
        self._history: list[tuple[str, dict[str, Any], bool]] = []  # completed calls: name, arguments, failed
        self.reconnects = 0

    @property
    def tools(self) -> Sequence[ToolSpec]:
        return self._tools

    async def start(self) -> None:
        """A new socket, a reset to this task, and the tool list (retried by the caller)."""
        await self._drop()
        sock = self._sock = await _Socket.open(self.world.url, self.world.options)
        reset = await sock.request({"type": "reset", "data": {"scenario": self.task.scenario,
                                                              "task_idx": self.task.task_idx}})
        obs = reset.get("observation") or {}
        if obs.get("reward_type") not in ("reset_ok", "reset_warning"):
            error = f"{self.world.name}: reset {self.task.scenario}/{self.task.task_idx}: {obs.get('error')}"
            final = "not found" in str(obs.get("error")) or "out of range" in str(obs.get("error"))
            raise WorldError(error) if final else TransientWorldError(error)
        listing = await sock.step({"type": "list_tools"})
        if listing.get("error") or not isinstance(listing.get("tools"), list):
            raise TransientWorldError(f"{self.world.name}: list_tools failed: {listing.get('error')}")
        self._tools = [ToolSpec(name=t["name"], description=t.get("description") or "",
                                input_schema=t.get("input_schema") or {"type": "object", "properties": {}})
                       for t in listing["tools"]]

    async def _drop(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            await sock.close()

    async def _recover(self) -> None:
        """A new socket for this episode: reset, then replay the calls made so far (each must fail or not alike)."""
        self.reconnects += 1
        log.warning("remote_world_reconnect", world=self.world.name, episode_id=self.episode_id,
                    replay=len(self._history))
        await self.start()
        await self._replay("after a reconnect")

    async def _replay(self, when: str) -> None:
        assert self._sock is not None
        for i, (name, arguments, failed) in enumerate(self._history, 1):
            obs = await self._sock.step({"type": "call_tool", "tool_name": name, "arguments": arguments})
            if (obs.get("reward_type") != "tool_call_ok") != failed:
                raise ReplayDiverged(f"{self.world.name}: {when}, replaying call {i} ({name}) gave a different "
                                     f"outcome: {obs.get('error') or 'ok'} (it {'failed' if failed else 'succeeded'} "
                                     "before)", index=i)

    async def replay(self, history: Sequence[tuple[str, dict[str, Any], bool]]) -> None:
        """Bring this fresh session to a recorded prefix (a fork), the way a reconnect does: replay each call,
        which must fail or succeed as it did; ReplayDiverged (`index`: the call) when one does not."""
        self._history = list(history)
        await self._replay("for a fork")

    async def _step(self, action: dict[str, Any]) -> dict[str, Any]:
        """One step, on a recovered socket if the current one drops (within the world's retry bounds)."""
        first = True

        async def once() -> dict[str, Any]:
            nonlocal first
            if not first or self._sock is None:
                await self._recover()
            first = False
            assert self._sock is not None
            return await self._sock.step(action)

        return await retried("step", self.world.options.attempts, self.world.options, once)

    async def call_tool(self, call: ToolCall) -> ToolResult:
        if call.name in HIDDEN_TOOLS:  # the server's reward channel: never the agent's, whatever it asks
            return ToolResult(text=f"Unknown tool: {call.name}", is_error=True)
        obs = await self._step({"type": "call_tool", "tool_name": call.name, "arguments": call.arguments})
        reward_type, error = obs.get("reward_type"), obs.get("error")
        if reward_type == "tool_call_ok":
            self._history.append((call.name, call.arguments, False))
            return ToolResult(text=as_text(obs.get("tool_result", "")), is_error=False)
        text = str(error or "")
        if text.startswith(AGENT_FACING) or reward_type in ("tool_not_found", "invalid_args"):
            self._history.append((call.name, call.arguments, True))
            status = _STATUS.search(text)
            return ToolResult(text=text, is_error=True, status=int(status.group(1)) if status else None)
        raise WorldError(f"{self.world.name}: tool {call.name}: {reward_type}: {text[:500]}")

    async def verify(self, final_answer: str, messages: Sequence[Message]) -> Verdict:
        mode = self.world.options.verifier
        obs = await self._step({"type": "call_tool", "tool_name": "verify",
                                "arguments": {"verifier_mode": mode, "final_answer": final_answer}})
        reward_type = str(obs.get("reward_type"))
        result = obs.get("verify_result")
        detail: dict[str, Any] = result if isinstance(result, dict) else {}
        if reward_type == "no_verifier":
            return Verdict(result="no_verifier", mode="none", error=obs.get("error"))
        if reward_type not in VERDICTS:
            return Verdict(result="judge_error", mode=mode, detail=detail,  # type: ignore[arg-type]
                           error=f"remote verify answered {reward_type}: {obs.get('error')}")
        error = obs.get("error") or (detail.get("error_message") if reward_type == "judge_error" else None)
        return Verdict(result=reward_type, mode=mode, detail=detail, error=error)  # type: ignore[arg-type]

    async def close(self) -> None:
        await self._drop()
