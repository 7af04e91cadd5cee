"""Forks: an episode started from a checkpoint instead of a reset, with the `ask` and `solo` arms.

`fork_episode` is the embeddable entry point; the scheduler runs forks as units like any other, through
`EpisodeHook` (the loop's TurnHook), which also saves checkpoints and resumes killed episodes.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from awm_runtime._errors import WorldError
from awm_runtime._interfaces import Advice, PolicyTurn, Sink, World, WorldSession
from awm_runtime._log import get_logger
from awm_runtime._seeds import episode_seed
from awm_runtime._types import EpisodeRecord, EpisodeSpec, ForkSpec
from awm_runtime.episode._checkpoint import (
    Checkpoint,
    RecordingSession,
    load_checkpoint,
    prefix_usage_removed,
    render_fork_question,
    restore_state,
    restore_world,
)
from awm_runtime.episode._checkpoint_store import Checkpointer
from awm_runtime.episode._loop import Harness, run_episode
from awm_runtime.episode._midturn import SavedReply, advice_of, load_saved_reply, policy_turn_of
from awm_runtime.episode._state import EpisodeState
from awm_runtime.episode._tools import ASK_EXPERT

log = get_logger("awm_runtime.episode")

def fork_seed(cp: Checkpoint, repeat: int) -> int:
    """Continuation `repeat` of a checkpoint: the original episode's seed first (so a fork of the same arm
    replays the original), then seeds drawn from it."""
    return cp.seed if repeat == 0 else episode_seed(cp.seed, f"fork:{cp.episode_id}", cp.turn, repeat)


class EpisodeHook:
    """The loop's TurnHook: saves checkpoints, restores a fork or a resumed episode, applies its arm."""

    def __init__(self, *, checkpointer: Checkpointer | None = None, fork: ForkSpec | None = None) -> None:
        self.checkpointer = checkpointer
        self.fork = fork
        self.cp: Checkpoint | None = load_checkpoint(fork.checkpoint) if fork is not None else None
        self.db_sha256: str | None = None
        # A resumed episode's turn in flight at the kill: its reply (and answer), if they had arrived and been saved.
        self.saved: SavedReply | None = None
        if fork is not None and fork.mode == "resume" and self.cp is not None:
            self.saved = load_saved_reply(Path(fork.checkpoint).parent, self.cp.episode_id, self.cp.turn)
        self.reused = {"policy": 0, "expert": 0}
        self._prefix_style: str = "solo"
        self._ep: EpisodeState | None = None

    @property
    def records_calls(self) -> bool:
        """A remote session must be wrapped to remember its calls (for checkpoints or a replayed fork)."""
        return self.checkpointer is not None or (self.cp is not None and self.cp.world.get("kind") == "replay")

    async def start(self, ep: EpisodeState, session: WorldSession) -> bool:
        if self.cp is None or self.fork is None:
            return False
        cp = self.cp
        offered = [t.name for t in ep.tools or ()]
        world_now = [n for n in offered if n != ASK_EXPERT]
        world_then = [n for n in cp.tools if n != ASK_EXPERT]
        if world_now != world_then:
            missing = sorted(set(world_then) - set(world_now)) or sorted(set(world_now) - set(world_then))
            raise WorldError(f"fork refused: the world's tools differ from the checkpoint's ({', '.join(missing[:5])})")
        self.db_sha256 = await restore_world(cp, Path(self.fork.checkpoint), session)
        restore_state(ep, cp)
        if self.fork.mode in ("ask", "solo"):  # the continuation's ask style is its own: re-read at its first ask
            self._prefix_style = ep.ask_style
            ep.trouble_before_first_ask = None
            self._ep = ep
        return True

    async def before_turn(self, ep: EpisodeState, session: WorldSession) -> str | None:
        if self.checkpointer is not None:
            await self.checkpointer.before_turn(ep, session)
        fork, cp = self.fork, self.cp
        if fork is None or cp is None:
            return None
        if fork.mode == "solo":
            ep.withhold_expert = fork.solo_turns is None or ep.turn <= cp.turn + fork.solo_turns
        if fork.mode == "ask" and ep.turn == cp.turn + 1:
            return render_fork_question(ep.turn)
        return None

    def _saved_for(self, ep: EpisodeState) -> SavedReply | None:
        """The saved reply, on the turn it belongs to (the first after the restored checkpoint)."""
        if self.saved is None or self.cp is None or ep.turn != self.cp.turn + 1:
            return None
        return self.saved

    async def policy_turn(self, ep: EpisodeState, act: Callable[[], Awaitable[PolicyTurn]]) -> PolicyTurn:
        saved = self._saved_for(ep)
        if saved is not None:  # the reply that had arrived before the kill: not sampled, nor billed, again
            pt = policy_turn_of(saved.policy)
            self.reused["policy"] += 1
            log.info("reply_reused", role="policy", turn=ep.turn)
        else:
            pt = await act()
        if self.checkpointer is not None:
            await self.checkpointer.policy_replied(ep, pt)
        return pt

    async def advice(self, ep: EpisodeState, ask: Callable[[], Awaitable[Advice]]) -> Advice:
        saved = self._saved_for(ep)
        if saved is not None and saved.advice is not None:
            advice = advice_of(saved.advice)
            self.reused["expert"] += 1
            log.info("reply_reused", role="expert", turn=ep.turn)
        else:
            advice = await ask()
        if self.checkpointer is not None:
            await self.checkpointer.expert_answered(ep, advice)
        return advice

    async def after_turn(self, ep: EpisodeState, session: WorldSession) -> None:
        if self.checkpointer is not None:
            await self.checkpointer.after_turn(ep)

    def cancelled(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.cancelled()

    def finish(self, record: EpisodeRecord) -> None:
        if self.checkpointer is not None:
            self.checkpointer.discard()
            record.checkpoints = self.checkpointer.summary()
        fork, cp = self.fork, self.cp
        if fork is None or cp is None:
            return
        origin = {"run": cp.run_id, "episode_id": cp.episode_id, "turn": cp.turn, "checkpoint": fork.checkpoint}
        if fork.mode == "resume":  # the killed episode's record, continued: its prefix was never recorded
            record.resumed_from = {**origin, "reused_replies": dict(self.reused)}
            return
        record.fork = {
            **origin, "mode": fork.mode, "repeat": fork.repeat, "solo_turns": fork.solo_turns, "why": cp.why,
            "preceding": cp.preceding, "prefix_messages": len(cp.messages), "source_arm": cp.spec.arm,
            "source_repeat": cp.spec.repeat, "db_sha256": self.db_sha256,
            "advice_given": any(a.turn == cp.turn + 1 for a in record.expert_answers),
            "prefix_usage": prefix_usage_removed(record, cp.usage),
            "prefix": self._prefix_removed(record, cp),
        }

    def _prefix_removed(self, record: EpisodeRecord, cp: Checkpoint) -> dict[str, Any]:
        """Count only the continuation after the fork point in the record's expert calls, nudges and ask style
        (the prefix was the source episode's); returns the prefix's, reported apart. `expert_answers` and
        `nudge_log` keep every entry: each names its turn, and `fork.turn` is the fork point."""
        c = cp.counters
        calls, nudges = int(c.get("expert_calls", 0)), len(c.get("nudge_log") or [])
        record.expert_calls = max(0, record.expert_calls - calls)
        record.nudges = max(0, record.nudges - nudges)
        if record.expert_calls == 0:
            record.ask_style = "solo"
        elif self._ep is not None:
            record.ask_style = "recovery" if self._ep.trouble_before_first_ask else "blind"
        return {"turns": cp.turn, "messages": len(cp.messages), "expert_calls": calls, "nudges": nudges,
                "ask_style": self._prefix_style}


def fork_spec(cp: Checkpoint, fork: ForkSpec, *, arm: str | None = None, repeat: int | None = None,
              seed: int | None = None) -> EpisodeSpec:
    """The spec of one continuation of `cp`."""
    return EpisodeSpec(arm=arm or cp.spec.arm, scenario=cp.task.scenario, task_idx=cp.task.task_idx,
                       repeat=cp.spec.repeat if repeat is None else repeat,
                       seed=fork_seed(cp, fork.repeat) if seed is None else seed, fork=fork)


def wrap_session(session: WorldSession, hook: EpisodeHook | None) -> WorldSession:
    """A remote session (no DB file) wrapped to remember its calls when the hook needs them."""
    if hook is None or not hook.records_calls or isinstance(getattr(session, "db", None), Path):
        return session
    return RecordingSession(session)


async def fork_episode(checkpoint: Path | str, harness: Harness, world: World, *, mode: str = "continue",
                       solo_turns: int | None = None, repeat: int = 0, arm: str | None = None,
                       sinks: Sequence[Sink] = (), run_id: str = "", episode_id: str | None = None,
                       checkpointer: Checkpointer | None = None) -> EpisodeRecord:
    """Play one continuation of the episode saved in `checkpoint` with `harness`, on a fresh session of
    `world` brought to the checkpoint's state, and return its record (`record.fork` says where from).

    `mode`: continue | ask | solo (see ForkSpec). Never raises except on cancellation: a world that cannot
    be restored (a replay that diverges) gives a record with `outcome: error` that says why."""
    fork = ForkSpec(checkpoint=str(checkpoint), mode=mode, solo_turns=solo_turns, repeat=repeat)  # type: ignore[arg-type]
    hook = EpisodeHook(checkpointer=checkpointer, fork=fork)
    assert hook.cp is not None
    spec = fork_spec(hook.cp, fork, arm=arm)
    episode_id = episode_id or uuid.uuid4().hex[:16]
    session = wrap_session(await world.open(hook.cp.task, episode_id=episode_id), hook)
    try:
        return await run_episode(spec, hook.cp.task, session, harness, sinks=sinks, run_id=run_id,
                                 episode_id=episode_id, hook=hook)
    finally:
        await session.close()
