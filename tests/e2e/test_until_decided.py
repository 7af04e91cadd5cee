"""`awm-run --until-decided` as a user runs it: a real difference stops early; identical arms run to the budget."""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path

from awm_runtime.testing import FakeOpenAI, Reply, teach_builtin
from tests.e2e.test_awm_run import awm_run

Awm = Callable[..., subprocess.CompletedProcess[str]]
DIFFERENT = ("--arm", "novice:policy=sim/novice,expert=none", "--arm", "oracle:policy=sim/oracle,expert=none")
IDENTICAL = ("--arm", "one:policy=sim/novice,expert=none", "--arm", "two:policy=sim/novice,expert=none")


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]


def test_a_real_difference_stops_early_with_fewer_episodes_than_the_plan(awm: Awm, tmp_path: Path) -> None:
    out = tmp_path / "decided"
    proc = awm("run", *DIFFERENT, "--until-decided", "--repeats", "2", "--concurrency", "4", "--out", str(out),
               "--preflight", "off")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    seq = summary["sequential"]
    assert seq["decided"] and seq["stop_reason"].startswith("decided: oracle completes more often")
    assert seq["e_value"] >= 20 and seq["theta_interval"][0] > 0.5 and not summary["interrupted"]
    records = _lines(out)
    assert len(records) < summary["planned"] / 4, (len(records), summary["planned"])
    # the order is random, not the plan's first scenario: the early pairs span several scenarios
    assert len({r["scenario"] for r in records}) >= 2
    assert proc.stdout.startswith("until-decided: decided") and "e-value" in proc.stdout  # it leads the summary
    assert "provider economics" in proc.stdout and "unknown" in proc.stdout  # sims have no price: never $0
    arm = summary["arms"]["oracle"]["economics"]
    assert arm["cost_known"] is False and arm["usd_per_completed_task"] is None
    assert arm["model_calls"]["policy"]["latency"]["n"] == sum(r["usage"]["policy"]["calls"] for r in records
                                                                 if r["arm"] == "oracle")
    c = summary["paired"][0]
    assert (c["a"], c["b"]) == ("novice", "oracle") and c["completion_diff"] > 0  # Δ = later arm − earlier


def test_identical_arms_run_to_the_budget_and_say_not_decided(awm: Awm, tmp_path: Path) -> None:
    out = tmp_path / "undecided"
    proc = awm("run", *IDENTICAL, "--until-decided", "--max-episodes", "30", "--concurrency", "4",
               "--out", str(out), "--preflight", "off")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    seq = summary["sequential"]
    assert not seq["decided"] and seq["stop_reason"] == "max-episodes budget of 30 spent: not decided"
    assert seq["e_value"] == 1.0 and seq["theta_interval"] == [0.0, 1.0]
    assert len(_lines(out)) == 30 and not summary["interrupted"]
    assert proc.stdout.startswith("until-decided: not decided")


def test_bad_flags_say_what_to_do(awm: Awm, tmp_path: Path) -> None:
    proc = awm("run", "--until-decided", "--out", str(tmp_path / "x"))
    assert proc.returncode == 2 and "give exactly two --arm flags" in proc.stderr
    proc = awm("run", *DIFFERENT, "--max-episodes", "4", "--out", str(tmp_path / "y"))
    assert proc.returncode == 2 and "add --until-decided" in proc.stderr
    proc = awm("run", *DIFFERENT, "--until-decided", "--max-usd", "1", "--out", str(tmp_path / "z"),
               "--preflight", "off")
    assert proc.returncode == 2 and "--max-usd: no price for policy sim/" in proc.stderr
    assert not (tmp_path / "z" / "episodes.jsonl").exists()


def _censoring_responder() -> Callable[[dict], Reply]:
    """Two novices with the same true completion rate over one loopback server: `fair` and `flaky` draw their
    slips from different streams; `flaky`'s provider fails (HTTP 503) on 60% of the replies where its novice
    gives up, so many of its failures end as infrastructure errors rather than failures."""
    from awm_runtime.models.sim import simulate

    def respond(request: dict) -> Reply:
        params = {k: v for k, v in request.items() if k not in ("messages", "model")}
        behaviour = "novice" if request["model"] == "fair" else "novice-b"  # same knobs, another random stream
        message = simulate(f"sim/{behaviour}", request["messages"], params)
        coin = random.Random(f"{params.get('seed')}:{len(request['messages'])}").random()
        if request["model"] == "flaky" and "not able to finish" in (message.get("content") or "") and coin < 0.6:
            return Reply.error(503, "upstream overloaded")
        return Reply(content=message.get("content"), tool_calls=message.get("tool_calls"))

    return respond


def test_arm_dependent_infra_errors_with_equal_true_rates_never_decide_and_say_why(tmp_path: Path) -> None:
    """The censoring of issue #51 through the real scheduler: equal true rates, one arm's failures turned
    into infrastructure errors. The accountable view alone would pick `flaky`; the run refuses and says why."""
    teach_builtin()
    config = tmp_path / "awm.toml"
    out = tmp_path / "censored"
    with FakeOpenAI(key="censor-key-51", models=("fair", "flaky"), responder=_censoring_responder(),
                    max_lifetime_s=300) as server:
        config.write_text("".join(f"""
[models.{name}]
model = "openai/{name}"
api_base = "{server.url}"
api_key_env = "CENSOR_KEY"
max_retries = 0
max_concurrency = 8
""" for name in ("fair", "flaky")))
        proc = awm_run("--config", str(config), "--arm", "fair:policy=fair,expert=none",
                       "--arm", "flaky:policy=flaky,expert=none", "--until-decided", "--repeats", "4",
                       "--seed", "51", "--concurrency", "4", "--out", str(out), "--preflight", "off",
                       env={"CENSOR_KEY": "censor-key-51"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    seq = json.loads((out / "summary.json").read_text())["sequential"]
    assert not seq["decided"] and seq["refused"], seq
    assert seq["stop_reason"].startswith("refused: infrastructure errors depend on the arm (fair 0, flaky ")
    assert seq["infra_errors"]["fair"] == 0 and seq["infra_errors"]["flaky"] >= 8
    records = _lines(out)
    assert {r["outcome"] for r in records if r["arm"] == "flaky"} >= {"error"}
    assert not [r for r in records if r["arm"] == "fair" and r["outcome"] == "error"]
    said = " ".join(proc.stdout.split())  # the sequential result leads the summary on stdout (wrapped to the terminal)
    assert "until-decided: not decided (refused: infrastructure errors depend on the arm" in said, proc.stdout
