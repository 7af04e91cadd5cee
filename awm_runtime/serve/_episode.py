"""One OpenEnv session's environment: reset, list_tools, call_tool and the hidden tools, as OpenEnv's AWM does.

The world is our engine: a reset is a DB clone, tools run in the world workers, verifiers in the sandbox.
What the client sees (reward types, texts, keys) follows OpenEnv's AWMEnvironment, with one deliberate
difference: every reset first ends the previous episode, so a failed reset never leaves a live world behind.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from awm_runtime._errors import WorldError
from awm_runtime._log import get_logger
from awm_runtime._types import Message, Task, ToolCall
from awm_runtime.serve._hub import SessionHub, Slot
from awm_runtime.serve._wire import CallToolAction, ListToolsAction, observation, tools_observation
from awm_runtime.verifiers import parse_criteria
from awm_runtime.worlds import AwmSession, Scenario

log = get_logger("awm_runtime.serve")
DEFAULT_REWARDS = {"complete": 1.0, "incomplete": 0.1, "format_error": -1.0}
FORMAT_ERROR_TYPES = frozenset({"tool_not_found", "invalid_args", "invalid_action"})
HIDDEN_TOOLS = frozenset({"done", "verify", "__list_scenarios__"})
NOT_RUNNING = "Sub-environment is not running. Call reset() first."
NOT_INITIALIZED = "environment not initialized (reset failed or not called)"
_KEYWORDS = (("tool_not_found", ("not found", "unknown tool", "no tool")),
             ("invalid_args", ("invalid", "argument", "parameter", "required property", "validation error",
                               "missing", "schema")),
             ("timeout", ("timeout", "timed out")))


def classify_tool_error(text: str) -> str:
    """OpenEnv's keyword classification of a tool error (a 404 saying "not found" is tool_not_found)."""
    lower = text.lower()
    for reward_type, words in _KEYWORDS:
        if any(w in lower for w in words):
            return reward_type
    return "server_error"


class OpenEnvEpisode:
    """The environment behind one `/ws` connection. Not safe for concurrent calls: one frame at a time."""

    def __init__(self, hub: SessionHub, slot: Slot) -> None:
        self.hub = hub
        self.slot = slot
        self.episode_id: str | None = None
        self.step_count = 0
        self.rewards = dict(DEFAULT_REWARDS)
        self.session: AwmSession | None = None
        self.scenario: Scenario | None = None
        self.task: str | None = None
        self.task_idx: int | None = None
        self.has_verifier: dict[str, bool] | None = None
        self.reset_ok = False
        self.done = False
        self.trajectory: list[dict[str, Any]] = []

    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.step_count}

    def reward(self, reward_type: str) -> Any:
        if reward_type in FORMAT_ERROR_TYPES:
            return self.rewards.get("format_error", -1.0)
        return self.rewards.get(reward_type, 0.0)

    async def close(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            await session.close()

    # --- reset ----------------------------------------------------------------------------

    async def reset(self, data: dict[str, Any]) -> dict[str, Any]:
        """Start an episode. Every problem is a `reset_error` observation, never an error frame.

        Accepted: scenario, task_idx, task, reward_config, episode_id; seed and the SQL judge's `llm_*`
        settings are accepted and ignored (awm-serve's own `--judge` decides SQL-mode verdicts)."""
        scenario, task_idx, task = data.get("scenario"), data.get("task_idx"), data.get("task")
        reward_config, episode_id = data.get("reward_config"), data.get("episode_id")
        self.reset_ok = self.done = False
        await self.close()
        if not scenario:
            return observation(reward_type="reset_error", error="Parameter 'scenario' is required")
        sc = self.hub.scenario(str(scenario))
        if sc is None:
            return observation(reward_type="reset_error", error=f"Scenario '{scenario}' not found")
        self.scenario, self.task_idx, self.trajectory = sc, task_idx, []
        self.rewards = dict(reward_config) if reward_config else dict(DEFAULT_REWARDS)
        if task is not None:
            self.task = task
        elif task_idx is not None:
            if not 0 <= task_idx < len(sc.tasks):  # a non-integer index raises here, as it does in OpenEnv
                return observation(reward_type="reset_error",
                                   error=f"task_idx {task_idx} out of range (0..{len(sc.tasks) - 1})")
            self.task = sc.tasks[task_idx]
        else:
            self.task = None
        self.has_verifier = None
        if isinstance(task_idx, int) and (sc.has_verifier(task_idx, "code") or sc.has_verifier(task_idx, "sql")):
            self.has_verifier = {"sql": sc.has_verifier(task_idx, "sql"), "code": sc.has_verifier(task_idx, "code")}
        eid = str(episode_id) if episode_id else str(uuid.uuid4())
        spec = Task(scenario=sc.id, task_idx=task_idx if isinstance(task_idx, int) else -1, text=str(self.task or ""))
        try:
            self.session = await self.hub.world.open(spec, episode_id=uuid.uuid4().hex[:12])
        except (WorldError, OSError) as exc:  # scenario code that will not load; a full tmpfs
            return observation(reward_type="reset_error", error=f"Sub-environment start failed: {exc}")
        self.episode_id, self.step_count = eid, 0
        self.slot.scenario = sc.id
        self.reset_ok = True
        fields: dict[str, Any] = {"scenario": sc.id, "task": self.task, "task_idx": self.task_idx,
                                  "has_verifier": self.has_verifier, "num_tools": len(self.session.tools)}
        if not self.session.tools:
            return observation(reward_type="reset_warning", warning="Sub-env started but no tools discovered.",
                               **fields)
        return observation(reward_type="reset_ok", **fields)

    # --- step -----------------------------------------------------------------------------

    async def step(self, action: ListToolsAction | CallToolAction) -> dict[str, Any]:
        if self.done:
            return observation(done=True, reward_type="episode_already_done",
                               error="Episode has ended. Call reset() to start a new episode.")
        self.step_count += 1
        if isinstance(action, ListToolsAction):
            return self._list_tools()
        if action.tool_name == "done":
            return await self._done(action.arguments)
        if action.tool_name == "verify":
            return await self._verify(action.arguments)
        if action.tool_name == "__list_scenarios__":
            listing = self.hub.listing()
            return observation(reward_type="tool_call_ok", scenarios=listing, total=len(listing))
        return await self._call(action.tool_name, action.arguments)

    def _list_tools(self) -> dict[str, Any]:
        if self.session is None:
            self.trajectory.append({"action": "list_tools", "success": False, "error": NOT_RUNNING})
            return tools_observation([], NOT_RUNNING)
        tools = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                 for t in self.session.tools]
        self.trajectory.append({"action": "list_tools", "success": True, "num_tools": len(tools),
                                "tool_names": [t["name"] for t in tools]})
        return tools_observation(tools)

    async def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.session is None:
            return observation(reward=self.reward("server_error"), reward_type="server_error", tool_name=name,
                               error=NOT_RUNNING)
        try:
            result = await self.session.call_tool(ToolCall(id=f"call_{self.step_count}", name=name,
                                                           arguments=arguments))
        except WorldError as exc:  # a hung or crashed tool: the world's fault, reported as OpenEnv reports it
            error = str(exc)
            self.trajectory.append({"action": "call_tool", "tool_name": name, "arguments": arguments,
                                    "success": False, "result": None, "error": error})
            reward_type = classify_tool_error(error)
            return observation(reward=self.reward(reward_type), reward_type=reward_type, tool_name=name, error=error)
        self.trajectory.append({"action": "call_tool", "tool_name": name, "arguments": arguments,
                                "success": not result.is_error, "result": None if result.is_error else result.text,
                                "error": result.text if result.is_error else None})
        if not result.is_error:
            return observation(reward=self.reward("tool_call_ok"), reward_type="tool_call_ok", tool_name=name,
                               tool_result=result.text)
        reward_type = classify_tool_error(result.text)
        return observation(reward=self.reward(reward_type), reward_type=reward_type, tool_name=name,
                           error=result.text)

    # --- hidden tools ---------------------------------------------------------------------

    async def _verify(self, args: dict[str, Any]) -> dict[str, Any]:
        if not self.reset_ok or self.scenario is None or self.session is None:
            return observation(reward=self.reward("server_error"), reward_type="server_error",
                               error=f"Cannot verify: {NOT_INITIALIZED}")
        if self.task is None or self.task_idx is None:
            return observation(reward=self.reward("no_verifier"), reward_type="no_verifier",
                               error="Cannot verify: no task specified at reset")
        mode = args.get("verifier_mode", "code")
        if mode not in ("code", "sql"):
            return observation(reward=self.reward("invalid_args"), reward_type="invalid_args",
                               error=f"Invalid verifier_mode '{mode}'. Must be one of: code, sql")
        where: dict[str, Any] = {"scenario": self.scenario.id, "task": self.task, "task_idx": self.task_idx}
        if not (self.has_verifier or {}).get(mode):
            return observation(reward=self.reward("no_verifier"), reward_type="no_verifier",
                               error=f"No {mode} verifier available for this task", **where)
        answer = args.get("final_answer")
        answer = answer if isinstance(answer, str) else ""
        reward_type, result = await (self._code(answer) if mode == "code" else self._sql(answer))
        self.trajectory.append({"action": "verify", "arguments": args, "success": True, "reward_type": reward_type,
                                "reward": self.reward(reward_type), "verify_result": result})
        return observation(reward=self.reward(reward_type), reward_type=reward_type, verify_result=result,
                           steps_taken=self.step_count, **where)

    async def _code(self, answer: str) -> tuple[str, dict[str, Any]]:
        assert self.session is not None and self.scenario is not None and self.task_idx is not None
        verdict = await self.hub.world.verifier.verify(self.scenario.id, self.task_idx, self.task or "",
                                                       self.session.initial_db, self.session.db, answer, [],
                                                       mode="code")
        if verdict.result in ("complete", "others"):
            return verdict.result, {"result": verdict.result, "execution_status": "success",
                                    "raw_result": verdict.detail}
        return "judge_error", {"result": "others", "execution_status": "error",
                               "error_message": verdict.error or verdict.result}

    async def _sql(self, answer: str) -> tuple[str, dict[str, Any]]:
        assert self.session is not None and self.scenario is not None and self.task_idx is not None
        verifier = self.hub.world.verifier
        definition = verifier.definition(self.scenario.id, self.task_idx, "sql")
        assert definition is not None
        evidence = await verifier.evidence(definition, self.session.initial_db, self.session.db, answer)
        value = evidence.value
        if evidence.error is not None:
            return "judge_error", {"execution_status": "error", "error_message": evidence.error}
        result = dict(value) if isinstance(value, dict) else {"result": value}
        if self.hub.judge is None:
            result["llm_judge"] = {"error": "LLM endpoint not configured for sql verifier mode"}
            return "judge_error", result
        verdict = await self.hub.judge.classify(task=self.task or "", messages=self._transcript(answer),
                                                evidence=value, criteria=parse_criteria(definition.raw_response),
                                                final_answer=answer)
        result["llm_judge"] = {"classification": verdict.detail.get("classification", verdict.result),
                               "reasoning": verdict.detail.get("reason", verdict.error or "")}
        return verdict.result, result

    def _transcript(self, answer: str) -> list[Message]:
        """The episode's tool calls as a transcript, for the SQL-mode judge."""
        messages = [Message(role="user", content=self.task or "", source="system", turn=0)]
        for i, step in enumerate((s for s in self.trajectory if s["action"] == "call_tool"), 1):
            call = {"id": f"c{i}", "type": "function",
                    "function": {"name": step["tool_name"], "arguments": json.dumps(step["arguments"])}}
            messages += [Message(role="assistant", content=None, tool_calls=[call], source="policy", turn=i),
                         Message(role="tool", content=step["result"] or step["error"] or "", tool_call_id=f"c{i}",
                                 name=step["tool_name"], source="world", turn=i)]
        if answer:
            messages.append(Message(role="assistant", content=answer, source="policy", turn=len(messages)))
        return messages

    async def _done(self, args: dict[str, Any]) -> dict[str, Any]:
        self.done = True
        if not self.reset_ok or self.scenario is None:
            return observation(done=True, reward=self.reward("server_error"), reward_type="server_error",
                               error=f"Cannot call done: {NOT_INITIALIZED}")
        trajectory_path = session_dir = None
        where = self.hub.options.sessions_dir
        if where is not None and self.session is not None:
            trajectory_path, session_dir = await asyncio.to_thread(self._keep, where, bool(args.get("keep_session")))
        await self.close()
        done = observation(done=True, reward=0.0, reward_type="episode_done", scenario=self.scenario.id,
                           task=self.task, task_idx=self.task_idx, steps_taken=self.step_count,
                           trajectory_path=trajectory_path, session_dir=session_dir)
        done["observation"].setdefault("trajectory_path", None)  # as OpenEnv's: always there; null = none kept
        return done

    def _keep(self, root: Path, keep_session: bool) -> tuple[str | None, str | None]:
        """Write the trajectory (and, with keep_session, both DBs) under `--sessions-dir`; paths are the server's."""
        assert self.session is not None and self.scenario is not None
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.episode_id or "episode")[:64].lstrip(".")
        folder = root / f"{safe}-{uuid.uuid4().hex[:8]}"  # the id is the client's: never a path of its own
        folder.mkdir(parents=True)
        path = folder / "trajectory.json"
        path.write_text(json.dumps({"scenario": self.scenario.id, "task": self.task, "task_idx": self.task_idx,
                                    "steps": self.step_count, "trajectory": self.trajectory}, indent=2,
                                   ensure_ascii=False, default=str), encoding="utf-8")
        if not keep_session:
            return str(path), None
        shutil.copyfile(self.session.db, folder / f"{self.scenario.id}.db")
        shutil.copyfile(self.session.initial_db, folder / f"{self.scenario.id}_initial.db")
        return str(path), str(folder)
