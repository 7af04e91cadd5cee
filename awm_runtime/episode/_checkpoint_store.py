"""Saving an episode's checkpoints as it plays: full checkpoints between turns, and the mid-turn reply.

Files under `<run>/checkpoints/`: `<episode_id>/turn-<k>.json` (+ `.db`), `index.jsonl` (one line per
checkpoint, appended once its files are in place), and `<episode_id>/reply.json`, the turn in flight's
policy reply and expert answer (episode/_midturn.py), which `--resume` uses instead of calling again.

A full disk (ENOSPC, EDQUOT) while saving stops the episode's checkpoints, never the episode: the files
of the checkpoint being written are removed (no half file, no DB copy the index does not name, an index
line cut back), the record's `checkpoints.disk_full` says so, and the event `checkpoints_disk_full` is
logged once per run directory. Checkpoints are a convenience; the run's records are what a full disk
must not tear (logs/_rundir.py stops the run when those cannot be written).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import errno
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from awm_runtime._interfaces import Advice, CallTool, PolicyTurn
from awm_runtime._log import get_logger
from awm_runtime.episode._checkpoint import (
    INDEX,
    Checkpoint,
    CheckpointMode,
    RecordingSession,
    counters_of,
    db_of,
    preceding_of,
    sha256_file,
)
from awm_runtime.episode._midturn import REPLY, SavedReply, saved_advice, saved_policy_turn, write_durably
from awm_runtime.episode._state import EpisodeState
from awm_runtime.episode._tools import ASK_EXPERT

log = get_logger("awm_runtime.episode")
_FULL = (errno.ENOSPC, errno.EDQUOT)
_full_roots: set[str] = set()  # run directories whose checkpoints met a full disk (said once each)


class Checkpointer:
    """Saves an episode's checkpoints: before every turn (`every`), or before each turn in which the agent
    asked the expert or was nudged (`asks`: taken before every turn, kept only if the turn asked or nudged).

    With either, the turn in flight's policy reply and expert answer are saved as they arrive (`reply.json`,
    tied to the checkpoint before that turn): with `asks`, only on a turn that asks, whose checkpoint is then
    written at once, since a reply is of use only beside the checkpoint it continues."""

    def __init__(self, root: Path, mode: CheckpointMode, arm: dict[str, Any]) -> None:
        self.root = root
        self.mode = mode
        self.arm = arm
        self.count = 0
        self.bytes = 0
        self.seconds = 0.0  # time spent capturing and writing (in worker threads; queueing excluded)
        self.captures = 0  # states captured: every turn; `asks` keeps only some of them
        self.replies = 0  # mid-turn saves: policy replies and expert answers (reply.json, fsync'd)
        self.reply_bytes = 0  # bytes those saves wrote (the file is replaced: on disk, one per episode)
        self.reply_seconds = 0.0
        self._last_capture_ms = 0.0
        self._last_db: tuple[Path, str] | None = None  # the latest DB copy and its hash: an unchanged DB is linked
        self._pending: tuple[Checkpoint, Path | None] | None = None  # captured, not (yet) written
        self._reply: SavedReply | None = None  # the turn in flight's, once saved
        # The file work runs in worker threads, which a cancelled episode does not stop: `_pending` changes
        # hands under this lock, and once `_closed`, a capture that ends removes its own DB copy.
        self._lock = threading.Lock()
        self._closed = False
        self.disk_full = False  # a save met a full disk: no more checkpoints for this episode

    write = staticmethod(os.write)  # the write syscall of checkpoint files (a test injects a full disk here)

    def _write_file(self, path: Path, body: bytes, *, append: bool = False) -> None:
        """Write `body` whole to a new file (or append it whole); on failure nothing of it stays."""
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
        fd = os.open(path, flags, 0o644)
        try:
            before = os.fstat(fd).st_size if append else 0
            view = memoryview(body)
            try:
                while view:
                    view = view[self.write(fd, view):]
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, before)
                raise
        finally:
            os.close(fd)

    def _stop_on_full(self, exc: OSError) -> None:
        """A save met a full disk: say so (once per run directory) and save nothing more; other errors raise."""
        if exc.errno not in _FULL:
            raise exc
        self.disk_full = True
        self.discard()
        if str(self.root) not in _full_roots:
            _full_roots.add(str(self.root))
            log.warning("checkpoints_disk_full", root=str(self.root), error=os.strerror(exc.errno or errno.ENOSPC),
                        note="episodes go on without further checkpoints; records are unaffected")

    def _capture(self, ep: EpisodeState, session: Any) -> None:
        if self.disk_full:
            return
        started = time.perf_counter()
        try:
            try:
                captured: tuple[Checkpoint, Path | None] | None = self._capture_now(ep, session)
            except OSError as exc:
                self._stop_on_full(exc)
                return
            with self._lock:
                if not self._closed:
                    self._pending, captured = captured, None
            if captured is not None and captured[1] is not None:  # cancelled meanwhile: keep nothing
                captured[1].unlink(missing_ok=True)
        finally:
            self._last_capture_ms = (time.perf_counter() - started) * 1000
            self.seconds += time.perf_counter() - started
            self.captures += 1

    def _capture_now(self, ep: EpisodeState, session: Any) -> tuple[Checkpoint, Path | None]:
        directory = self.root / ep.episode_id
        directory.mkdir(parents=True, exist_ok=True)
        cp = Checkpoint(run_id=ep.run_id, episode_id=ep.episode_id, spec=ep.spec, task=ep.task, arm=self.arm,
                        policy=ep.policy, expert=ep.expert, turn=ep.turn - 1, preceding=preceding_of(ep.last_action),
                        messages=list(ep.messages), tools=[t.name for t in ep.tools or ()],
                        counters=copy.deepcopy(counters_of(ep)),
                        usage={k: v.model_copy() for k, v in ep.usage.items()}, seed=ep.spec.seed,
                        rng={"kind": "seed_and_turn", "seed": ep.spec.seed, "turn": ep.turn - 1})
        db = db_of(session)
        if db is not None:
            target = directory / f"turn-{cp.turn}.db"
            target.unlink(missing_ok=True)
            digest = sha256_file(db)  # no call in flight: the file is consistent
            if self._last_db is not None and self._last_db[1] == digest and self._last_db[0].exists():
                os.link(self._last_db[0], target)  # unchanged since the last checkpoint: no new bytes
                new = 0
            else:
                try:
                    shutil.copyfile(db, target)  # in-kernel (sendfile) on Linux
                except OSError:
                    target.unlink(missing_ok=True)  # no half copy
                    raise
                new = target.stat().st_size
            self._last_db = (target, digest)
            cp.world = {"kind": "db", "file": target.name, "sha256": digest, "bytes": target.stat().st_size,
                        "new_bytes": new}
            return cp, target
        if isinstance(session, RecordingSession):
            cp.world = {"kind": "replay", "calls": [c.model_dump() for c in session.calls]}
        else:
            cp.world = {"kind": "none"}
        return cp, None

    def _write_pending(self, why: list[str]) -> None:
        if self.disk_full:
            self.discard()
            return
        with self._lock:  # claimed: a cancellation from now on leaves this checkpoint to be written whole
            claimed, self._pending = self._pending, None
        if claimed is None:
            return
        cp, _ = claimed
        cp.why = why
        started = time.perf_counter()
        path = self.root / cp.episode_id / f"{cp.path_stem}.json"
        cp.saved_at = time.time()
        cp.save_ms = round((time.perf_counter() - started) * 1000 + self._last_capture_ms, 3)
        db_bytes = int(cp.world.get("new_bytes", 0))  # a DB linked to the previous checkpoint's costs nothing
        body = b""
        for _ in range(3):  # the file states its own size: settle the number of digits
            body = cp.model_dump_json().encode()
            if cp.bytes == len(body) + db_bytes:
                break
            cp.bytes = len(body) + db_bytes
        tmp = path.with_suffix(".json.tmp")
        entry = {"episode_id": cp.episode_id, "turn": cp.turn, "path": f"{cp.episode_id}/{path.name}",
                 "why": cp.why, "preceding": cp.preceding, "arm": cp.spec.arm, "scenario": cp.task.scenario,
                 "task_idx": cp.task.task_idx, "repeat": cp.spec.repeat, "seed": cp.seed, "bytes": cp.bytes,
                 "saved_at": cp.saved_at, "resumed": cp.spec.fork is not None}
        try:
            self._write_file(tmp, body)
            os.replace(tmp, path)  # a reader never sees half a checkpoint
            # one short write in append mode: shards may share the file
            self._write_file(self.root / INDEX, orjson.dumps(entry) + b"\n", append=True)
        except OSError as exc:  # nothing of this checkpoint stays: the index does not name it
            for leftover in (tmp, path, claimed[1]):
                if leftover is not None:
                    leftover.unlink(missing_ok=True)
            self._stop_on_full(exc)
            return
        self.count += 1
        self.bytes += cp.bytes
        self.seconds += time.perf_counter() - started

    def _write_reply(self, reply: SavedReply) -> None:
        if self.disk_full:
            return
        started = time.perf_counter()
        reply.saved_at = time.time()
        target = self.root / reply.episode_id / REPLY
        try:
            self.reply_bytes += write_durably(target, reply.model_dump_json().encode())
        except OSError as exc:
            target.with_name(target.name + ".tmp").unlink(missing_ok=True)
            self._stop_on_full(exc)
            return
        self.replies += 1
        self.reply_seconds += time.perf_counter() - started

    async def before_turn(self, ep: EpisodeState, session: Any) -> None:
        """At the start of turn `ep.turn`: capture the state after `ep.turn - 1` turns (and write it, `every`)."""
        if isinstance(session, RecordingSession):
            session.turn = ep.turn
        self._reply = None
        await asyncio.to_thread(self._capture, ep, session)
        if self.mode == "every":
            await asyncio.to_thread(self._write_pending, ["every"])

    async def policy_replied(self, ep: EpisodeState, pt: PolicyTurn) -> None:
        """Turn `ep.turn`'s reply has arrived: save it durably before its calls run (docs/forks.md)."""
        if self.mode == "asks":
            asking = isinstance(pt.action, CallTool) and pt.action.call.name == ASK_EXPERT
            if not asking or self._pending is None:
                return
            await asyncio.to_thread(self._write_pending, ["asked"])  # kept: the turn asks (no nudge follows an ask)
        self._reply = SavedReply(episode_id=ep.episode_id, after_turn=ep.turn - 1, policy=saved_policy_turn(pt))
        self._reply.policy.message.turn = ep.turn  # as the transcript will hold it
        await asyncio.to_thread(self._write_reply, self._reply)

    async def expert_answered(self, ep: EpisodeState, advice: Advice) -> None:
        """The expert answered turn `ep.turn`'s question: add the answer to the saved reply."""
        if self._reply is None or self._reply.after_turn != ep.turn - 1:
            return
        self._reply.advice = saved_advice(advice)
        await asyncio.to_thread(self._write_reply, self._reply)

    async def after_turn(self, ep: EpisodeState) -> None:
        """At the end of turn `ep.turn` (`asks`): keep its state if the turn asked or was nudged."""
        if self._pending is None:
            return
        why = ["asked"] if ep.last_action == "ask_expert" else []
        if ep.nudge_log and ep.nudge_log[-1].turn == ep.turn:
            why.append("nudged")
        if why:
            await asyncio.to_thread(self._write_pending, why)
        else:
            self.discard()

    def discard(self) -> None:
        """Drop a state captured and not kept (its DB copy, which no index line names)."""
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is not None and pending[1] is not None:
            pending[1].unlink(missing_ok=True)

    def cancelled(self) -> None:
        """The episode was cancelled: drop the state captured and not kept, now or when its capture ends."""
        with self._lock:
            self._closed = True
        self.discard()

    def summary(self) -> dict[str, Any]:
        """What this episode's checkpoints cost (the record's `checkpoints`)."""
        return {"mode": self.mode, "count": self.count, "captures": self.captures, "bytes": self.bytes,
                "seconds": round(self.seconds, 6), "replies": self.replies, "reply_bytes": self.reply_bytes,
                "reply_seconds": round(self.reply_seconds, 6), **({"disk_full": True} if self.disk_full else {})}
