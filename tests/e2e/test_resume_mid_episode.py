"""kill -9 in the middle of long episodes, then --resume: they continue from their last checkpoint, and no
model call whose reply had arrived before the kill is made again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from awm_runtime import load_checkpoint
from awm_runtime.testing import FakeOpenAI, Reply, sim_responder, teach_builtin
from tests.e2e.test_awm_run import awm_run
from tests.e2e.test_resume_shutdown import keys, records, wait_for

CMD = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())"]


def checkpoints(out: Path) -> int:
    path = out / "checkpoints" / "index.jsonl"
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def test_kill_9_mid_episode_then_resume_continues_from_checkpoints(tmp_path: Path) -> None:
    config = tmp_path / "awm.toml"
    config.write_text('[models.slow]\nmodel = "sim/novice"\nprotocol = "native"\nmax_concurrency = 64\n'
                      "params = { sim = { latency_s = 0.3 } }\n")
    out = tmp_path / "run"
    proc = subprocess.Popen([*CMD, "--config", str(config), "--policy", "slow", "--expert", "sim/oracle",
                             "--out", str(out), "--quiet", "--checkpoint", "every", "--scenarios", "code*,home*",
                             "--tasks", "0-3", "--concurrency", "4", "--shards", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: checkpoints(out) >= 14 or proc.poll() is not None)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    recorded = {json.loads(x)["episode_id"] for x in (out / "episodes.jsonl").read_text().splitlines()} \
        if (out / "episodes.jsonl").is_file() else set()
    index = [json.loads(x) for x in (out / "checkpoints" / "index.jsonl").read_text().splitlines()]
    in_flight: dict[str, int] = {}
    for e in index:
        if e["episode_id"] not in recorded:
            in_flight[e["episode_id"]] = max(in_flight.get(e["episode_id"], -1), e["turn"])
    assert in_flight, "the kill found no episode in flight"
    killed_at = records(out)

    resumed = awm_run("--out", str(out), "--resume", "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    got = keys(out)
    assert len(got) == len(set(got)) == 8  # each record written exactly once
    after = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()][killed_at:]
    continued = [r for r in after if r.get("resumed_from")]
    assert {r["resumed_from"]["episode_id"] for r in continued} == set(in_flight)
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines() if x.endswith("}")]
    for r in continued:
        origin = r["resumed_from"]
        assert origin["turn"] == in_flight[origin["episode_id"]]  # the last checkpoint
        cp = load_checkpoint(origin["checkpoint"])
        n = len(cp.messages)
        assert r["messages"][:n] == [m.model_dump(mode="json") for m in cp.messages]  # the prefix, as it was
        policy_turns = sum(1 for m in r["messages"] if m["source"] == "policy")
        new_calls = sum(1 for e in events if e.get("event") == "model_called" and e.get("role") == "policy"
                        and e.get("episode_id") == r["episode_id"])
        reused = origin["reused_replies"]["policy"]  # the reply of the turn in flight, if it had arrived
        assert new_calls == policy_turns - cp.turn - reused  # no turn before the kill was sampled again
        assert r["usage"]["policy"]["calls"] == policy_turns  # the record bills the whole episode once
        assert r.get("fork") is None
    summary = json.loads((out / "summary.json").read_text())
    assert summary["already_done"] == killed_at and summary["not_run"] == 0
    assert any(e.get("event") == "run_started" and e.get("resumed_mid_episode") == len(in_flight) for e in events)


class Gate:
    """The model on loopback: answers like sim/novice (policy) and the sim expert, and counts what it answered.
    Once shut (at an expert question), it answers nothing more: every call then hangs until the kill."""

    def __init__(self, shut_after_expert_answers: int) -> None:
        self.sim = sim_responder("novice")
        self.shut_after = shut_after_expert_answers
        self.shut = False
        self.phase = "killed"  # then "resumed", then "unkilled"
        self.answered: Counter[tuple[str, str]] = Counter()  # (phase, role)
        self.hung: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        role = "expert" if request.get("model") == "expert-7b" else "policy"
        with self.lock:
            phase = self.phase
            if phase == "killed" and not self.shut and role == "expert" and self.answered[("killed", "expert")] \
                    >= self.shut_after:
                self.shut = True  # this question's episode has its policy reply saved: the kill comes now
            if phase == "killed" and self.shut:
                self.hung[role] += 1
                return Reply(hang=True)
            self.answered[(phase, role)] += 1
        return self.sim(request)


def test_kill_9_while_the_expert_answers_then_resume_repeats_no_model_call(tmp_path: Path) -> None:
    """Policy and expert on a loopback model server that counts the calls it answers. The run is killed while
    an expert question is in flight (its policy reply arrived and was saved) and every other episode waits on
    a call that will never be answered. Answered calls before the kill + calls of the resumed run = the calls
    of an unkilled run = the episodes' turns (and expert answers): no answered call is ever made twice."""
    teach_builtin()
    gate = Gate(shut_after_expert_answers=2)
    with FakeOpenAI(key="loop-key-0001", models=("novice-7b", "expert-7b"), responder=gate,
                    max_lifetime_s=280) as server:
        config = tmp_path / "awm.toml"
        config.write_text("".join(f"""
[models.{name}]
model = "openai/{name}-7b"
api_base = "{server.url}"
api_key_env = "LOOP_KEY"
protocol = "native"
max_concurrency = 8
timeout_s = 240
""" for name in ("novice", "expert")))
        env = {**os.environ, "LOOP_KEY": "loop-key-0001"}
        args = ["--config", str(config), "--policy", "novice", "--expert", "expert", "--quiet",
                "--scenarios", "code*,home*", "--tasks", "0-3", "--concurrency", "4", "--shards", "1",
                "--preflight", "off"]
        out = tmp_path / "run"
        proc = subprocess.Popen([*CMD, *args, "--out", str(out), "--checkpoint", "every"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            wait_for(lambda: gate.shut or proc.poll() is not None, timeout=120)
            # Every episode in flight now waits on a call that is never answered (all it did before is saved):
            # as many calls hang as episodes are left, up to the concurrency.
            wait_for(lambda: server.in_flight >= min(4, 8 - records(out)) or proc.poll() is not None, timeout=120)
            time.sleep(0.3)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            proc.kill()
            proc.communicate()
        assert proc.returncode == -signal.SIGKILL and gate.hung["expert"] >= 1
        killed_at = records(out)
        assert killed_at < 8

        with gate.lock:
            gate.phase = "resumed"
        resumed = awm_run("--out", str(out), "--resume", "--quiet", env={"LOOP_KEY": "loop-key-0001"})
        assert resumed.returncode == 0, resumed.stderr
        with gate.lock:
            gate.phase = "unkilled"
        unkilled = tmp_path / "unkilled"
        whole = awm_run(*args, "--out", str(unkilled), env={"LOOP_KEY": "loop-key-0001"})
        assert whole.returncode == 0, whole.stderr

    got = keys(out)
    assert len(got) == len(set(got)) == 8  # each record written exactly once
    recs = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    continued = [r for r in recs[killed_at:] if r.get("resumed_from")]
    assert continued
    reused: Counter[str] = Counter()
    for r in continued:
        reused.update(r["resumed_from"]["reused_replies"])
    # the episodes whose expert question was in flight: their policy reply was saved, and is not sampled again
    assert reused["policy"] == gate.hung["expert"] and reused["expert"] == 0
    turns = sum(r["turns"] for r in recs)
    expert_answers = sum(r["expert_calls"] for r in recs)
    for role, total in (("policy", turns), ("expert", expert_answers)):
        made = gate.answered[("killed", role)] + gate.answered[("resumed", role)]
        assert made == total == gate.answered[("unkilled", role)], role  # no answered call made twice
    assert all(r["usage"]["policy"]["calls"] == r["turns"] for r in recs)  # and each billed once
    whole_recs = {(r["scenario"], r["task_idx"]): r for r in (json.loads(x) for x in
                  (unkilled / "episodes.jsonl").read_text().splitlines())}
    for r in recs:  # the killed-and-resumed episodes played as the unkilled ones did
        same = whole_recs[(r["scenario"], r["task_idx"])]
        assert (r["turns"], r["expert_calls"], r["outcome"]) == (same["turns"], same["expert_calls"], same["outcome"])
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines() if x.endswith("}")]
    assert sum(1 for e in events if e.get("event") == "reply_reused" and e.get("role") == "policy") == reused["policy"]
