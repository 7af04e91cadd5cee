"""awm-run in each protocol, then awm-export in every format, loaded as trainers load it (datasets).

The checks a trainer relies on: every assistant turn is a policy reply (no expert or nudge text is
ever a target), tool schemas come with every protocol, and each ATIF trajectory validates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest

from awm_runtime.export import validate
from awm_runtime.logs import read_tool_sets
from tests.e2e._inproc import Result, run_cli
from tests.e2e.test_awm_run import awm_run, records

ARMS = ("--arm", "native:policy=sim/novice", "--arm", "awm:policy=sim/novice-awm",
        "--arm", "hermes:policy=sim/novice-hermes")


def awm_export(*args: str) -> Result:
    """awm-export, in process (tests/e2e/_inproc.py): these tests are about the files it writes."""
    return run_cli("export", *args, timeout=300)


def load(path: Path) -> datasets.Dataset:
    return datasets.load_dataset("json", data_files=str(path), split="train")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three protocols, the oracle expert, nudges, GRPO groups of 4 mixing expert and solo members."""
    out = tmp_path_factory.mktemp("export") / "run"
    proc = awm_run("--expert", "sim/oracle", *ARMS, "--scenarios", "shopfront*,flowpilot*", "--tasks", "0-2",
                   "--group-size", "4", "--reward", "try-first", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    return out


def texts(record: dict[str, Any], *sources: str) -> set[str]:
    return {m["content"] for m in record["messages"] if m["source"] in sources and m.get("content")}


def test_every_record_names_its_tool_set_which_the_run_keeps_once(run: Path) -> None:
    recs = records(run)
    sets = read_tool_sets(run)
    assert len((run / "tools.jsonl").read_text().splitlines()) == len(sets)  # each set written once
    assert {r["tools_id"] for r in recs} == set(sets)
    for r in recs:
        names = {t["function"]["name"] for t in sets[r["tools_id"]]}
        assert ("ask_expert" in names) == bool((r.get("group") or {}).get("with_expert"))
        if r["policy"]["protocol"] == "native":
            called = {c["function"]["name"] for m in r["messages"] if m["source"] == "policy"
                      and not m.get("format_error") for c in (m.get("tool_calls") or [])[:1]}
            assert called <= names


def test_sft_targets_are_policy_replies_in_every_protocol(run: Path, tmp_path: Path) -> None:
    proc = awm_export(str(run), "--format", "sft", "--out", str(tmp_path / "sft.jsonl"))
    assert proc.returncode == 0, proc.stderr
    by_id = {r["episode_id"]: r for r in records(run)}
    ds = load(tmp_path / "sft.jsonl")
    assert {row["protocol"] for row in ds} == {"native", "awm", "hermes"}
    for row in ds:
        record = by_id[row["episode_id"]]
        other = texts(record, "expert", "nudge", "world")
        policy = [m.get("content") or "" for m in record["messages"] if m["source"] == "policy"]
        assistants = [m for m in row["messages"] if m["role"] == "assistant"]
        assert [m["content"] for m in assistants] == policy  # the text the model produced, nothing else
        assert not any(m["content"] in other for m in assistants if m["content"])
        assert json.loads(row["tool_schemas"]) == read_tool_sets(run)[record["tools_id"]]
        assert json.loads(row["tools"]) == (json.loads(row["tool_schemas"]) if row["protocol"] == "native" else [])


def test_grpo_pairs_and_atif_load_and_hold_together(run: Path, tmp_path: Path) -> None:
    for fmt in ("grpo", "pairs", "atif"):
        proc = awm_export(str(run), "--format", fmt, "--out", str(tmp_path / f"{fmt}.jsonl"))
        assert proc.returncode == 0, proc.stderr
    recs = records(run)
    prompts, rollouts = load(tmp_path / "grpo.jsonl"), load(tmp_path / "grpo.rollouts.jsonl")
    assert len(prompts) == 3 * 2 * 3 and len(rollouts) == 4 * len(prompts) == len(recs)
    assert all(abs(sum(r["advantage"] for r in rollouts if r["group_id"] == p["group_id"])) < 1e-9 for p in prompts)
    for row in load(tmp_path / "pairs.jsonl"):
        record = next(r for r in recs if r["episode_id"] == row["episode_id"])
        advice_and_nudges = texts(record, "expert", "nudge")
        for m in (*row["chosen"], *row["rejected"]):
            assert m["role"] == "assistant" and m["content"] not in advice_and_nudges
    trajectories = load(tmp_path / "atif.jsonl")
    assert len(trajectories) == len(recs)
    asked = 0
    for t in trajectories:
        t = json.loads(json.dumps(t))
        assert validate(t) == [], validate(t)
        asked += len(t["extra"]["subagent_trajectories"])
    assert asked == sum(r["expert_calls"] for r in recs) > 0


def test_a_sharded_run_writes_each_tool_set_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = awm_run("--expert", "sim/oracle", "--scenarios", "shopfront*,flowpilot*,homehub*", "--tasks", "0-3",
                   "--shards", "2", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line)["tools_id"] for line in (out / "tools.jsonl").read_text().splitlines()]
    assert sorted(lines) == sorted(set(lines)) and len(lines) == 3
    assert {r["tools_id"] for r in records(out)} == set(lines)
