"""ReplayPolicy: re-play a logged run's policy replies against fresh worlds.

For regression and re-verification: the replies come from a run directory's episodes.jsonl,
are parsed again by the one parser against today's tools, and their calls go to a fresh
world. A replay of a deterministic run reproduces its verdicts exactly.

An episode is matched to its logged twin by task and seed (seeds derive from `--seed`, the
task and the repeat, so a replay with the same `--seed` and `--repeats` pairs every repeat);
a task logged once matches whatever the seed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from awm_runtime._errors import ConfigError
from awm_runtime._interfaces import FinalAnswer, PolicyTurn
from awm_runtime._prompts import render
from awm_runtime._types import Message, ModelRef, Source, Task, ToolSpec
from awm_runtime.logs import EPISODES, iter_records
from awm_runtime.policies.protocols import ToolProtocol

log = structlog.get_logger("policies.replay")


@dataclass(frozen=True, slots=True)
class LoggedEpisode:
    """What a replay needs from one logged record."""

    arm: str
    scenario: str
    task_idx: int
    repeat: int
    seed: int
    task: str
    protocol: str
    policy: ModelRef
    replies: tuple[Message, ...]
    final_answer: str


def _message(raw: dict[str, Any]) -> Message:
    return Message(**{k: v for k, v in raw.items() if k in Message.model_fields})


def infer_protocol(messages: Sequence[dict[str, Any]]) -> str:
    """For records written before the protocol was logged: read it off the transcript."""
    if any(m.get("source") == "policy" and m.get("tool_calls") for m in messages):
        return "native"
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    if "call_tool(" in system:
        return "awm"
    return "hermes" if "<tools>" in system else "native"


def logged_episode(record: dict[str, Any]) -> LoggedEpisode:
    messages = record.get("messages") or []
    policy = record.get("policy") or {}
    ref = ModelRef(**{k: v for k, v in policy.items() if k in ModelRef.model_fields}) if policy \
        else ModelRef(alias="unknown", model="unknown")
    return LoggedEpisode(
        arm=str(record.get("arm", "")), scenario=str(record["scenario"]), task_idx=int(record["task_idx"]),
        repeat=int(record.get("repeat", 0)), seed=int(record.get("seed", 0)), task=str(record.get("task", "")),
        protocol=ref.protocol or infer_protocol(messages), policy=ref,
        replies=tuple(_message(m) for m in messages if m.get("source") == "policy" and m.get("role") == "assistant"),
        final_answer=str(record.get("final_answer") or ""),
    )


def load_logged(spec: str) -> tuple[Path, list[LoggedEpisode]]:
    """`PATH` or `PATH#ARM`: a run directory or an episodes.jsonl file, optionally one arm of it."""
    path_text, _, arm = spec.partition("#")
    if not path_text:
        raise ConfigError("replay needs a run: --policy replay:RUN_DIR (or replay:RUN_DIR#ARM)")
    path = Path(path_text)
    root = path.parent if path.is_file() else path
    if not (root / EPISODES).is_file() or (path.is_file() and path.name != EPISODES):
        raise ConfigError(f"replay:{spec}: {path} is not a run directory with an {EPISODES}")
    episodes = [logged_episode(r) for r in iter_records(root)]
    arms = sorted({e.arm for e in episodes})
    if arm:
        if arm not in arms:
            raise ConfigError(f"replay:{spec}: no arm {arm!r} in {root} (arms: {', '.join(arms) or 'none'})")
        episodes = [e for e in episodes if e.arm == arm]
    if not episodes:
        raise ConfigError(f"replay:{spec}: {root / EPISODES} holds no episodes")
    protocols = sorted({e.protocol for e in episodes})
    if len(protocols) > 1:
        raise ConfigError(f"replay:{spec}: its arms speak different protocols ({', '.join(protocols)}); "
                          f"pick one arm with replay:{path_text}#ARM (arms: {', '.join(arms)})")
    return root, episodes


class ReplayPolicy:
    """Plays back logged replies. Shared by concurrent episodes; it holds no episode state."""

    def __init__(self, episodes: Iterable[LoggedEpisode], *, label: str, tool_result_chars: int = 3000) -> None:
        self.episodes = list(episodes)
        self.label = label
        protocols = {e.protocol for e in self.episodes}
        if len(protocols) != 1:
            raise ConfigError(f"replay:{label}: needs episodes of exactly one protocol, got {sorted(protocols)}")
        self.speaker = ToolProtocol(protocols.pop(), tool_result_chars=tool_result_chars)
        self._by_task: dict[str, list[LoggedEpisode]] = defaultdict(list)
        for e in self.episodes:
            self._by_task[render("task.md", task=e.task)].append(e)

    @property
    def ref(self) -> ModelRef:
        models = {e.policy.model for e in self.episodes}
        first = self.episodes[0].policy
        return ModelRef(alias=f"replay:{self.label}", model=models.pop() if len(models) == 1 else "replay",
                        simulated=first.simulated, protocol=self.speaker.name)

    def begin(self, task: Task, tools: Sequence[ToolSpec]) -> list[Message]:
        return self.speaker.begin(task, tools)

    def find(self, messages: Sequence[Message], seed: int) -> LoggedEpisode:
        """The logged episode this one replays: same task text, then same seed."""
        task_text = next((m.content for m in messages if m.role == "user" and m.source == "system"), None) or ""
        candidates = self._by_task.get(task_text, [])
        seeded = [e for e in candidates if e.seed == seed]
        if len(seeded) == 1 or (seeded and len({e.arm for e in seeded}) == 1):
            return seeded[0]
        if len(candidates) == 1:
            return candidates[0]
        what = "no logged episode" if not candidates else f"{len(candidates)} logged episodes and none with its seed"
        raise ConfigError(f"replay:{self.label}: {what} for this task (seed {seed}); replay with the logged "
                          f"run's --seed and --repeats, or pick one arm with #ARM")

    async def act(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, seed: int = 0) -> PolicyTurn:
        logged = self.find(messages, seed)
        n = sum(1 for m in messages if m.role == "assistant" and m.source == "policy")
        if n >= len(logged.replies):
            # The logged episode ended here (final answer, turn limit, format error or infrastructure
            # error); end this one the same way, with the logged final answer.
            note = Message(role="assistant", content=render("replay_exhausted.md", turns=n), source="system")
            return PolicyTurn(message=note, action=FinalAnswer(logged.final_answer))
        reply = logged.replies[n]
        parsed = self.speaker.parse(reply.content, reply.tool_calls, tools, call_id=self.speaker.call_id(messages),
                                    finish_reason=reply.finish_reason)
        if parsed.format_error != reply.format_error:
            log.warning("replay_parse_changed", scenario=logged.scenario, task_idx=logged.task_idx, turn=n + 1,
                        logged=reply.format_error, now=parsed.format_error)
        message = reply.model_copy(update={"format_error": parsed.format_error, "turn": None})
        return PolicyTurn(message=message, action=parsed.action, warnings=parsed.warnings)

    def observe(self, turn: PolicyTurn, text: str, source: Source) -> list[Message]:
        return self.speaker.observe(turn, text, source)
