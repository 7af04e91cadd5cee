"""`--policy replay:RUN` re-plays a logged run against fresh worlds and reproduces its verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.test_awm_run import awm_run, records

SAME = ("outcome", "verdict", "reward", "turns", "tool_calls", "tool_errors", "format_errors", "final_answer",
        "expert_calls", "nudges", "ask_style")


def by_key(out: Path) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    return {(r["arm"], r["scenario"], r["task_idx"], r["repeat"]): r for r in records(out)}


def replies(record: dict[str, Any]) -> list[tuple[Any, Any]]:
    return [(m["content"], m.get("tool_calls")) for m in record["messages"] if m["source"] == "policy"]


def assert_reproduced(original: Path, replayed: Path) -> None:
    first, again = by_key(original), by_key(replayed)
    assert first.keys() == again.keys()
    for key, rec in first.items():
        twin = again[key]
        assert {f: twin[f] for f in SAME} == {f: rec[f] for f in SAME}, (key, twin["error"])
        assert replies(twin) == replies(rec), key
        assert twin["policy"]["alias"].startswith("replay:") and twin["policy"]["model"] == rec["policy"]["model"]
        assert twin["usage"]["policy"]["calls"] == 0


def test_replay_of_an_oracle_run_reproduces_its_verdicts_exactly(tmp_path: Path) -> None:
    original, replayed = tmp_path / "oracle", tmp_path / "replay"
    first = awm_run("--policy", "sim/oracle", "--expert", "none", "--out", str(original), "--quiet")
    assert first.returncode == 0, first.stderr
    again = awm_run("--policy", f"replay:{original}", "--expert", "none", "--out", str(replayed), "--quiet")
    assert again.returncode == 0, again.stderr
    assert len(records(original)) == 60 and all(r["verdict"] == "complete" for r in records(original))
    assert_reproduced(original, replayed)


def test_replay_of_a_noisy_run_with_an_expert_reproduces_it(tmp_path: Path) -> None:
    """Format errors, tool errors, nudges and expert calls, two repeats told apart by their seeds."""
    original, replayed = tmp_path / "novice", tmp_path / "replay"
    common = ("--expert", "sim/oracle", "--scenarios", "homehub*,zapline*", "--tasks", "0-4", "--repeats", "2",
              "--quiet")
    first = awm_run("--policy", "sim/novice-hermes", *common, "--out", str(original))
    assert first.returncode == 0, first.stderr
    again = awm_run("--policy", f"replay:{original / 'episodes.jsonl'}", *common, "--out", str(replayed))
    assert again.returncode == 0, again.stderr
    recs = records(original)
    assert sum(sum(r["format_errors"].values()) for r in recs) > 0 and sum(r["expert_calls"] for r in recs) > 0
    assert any(replies(a) != replies(b) for a in recs for b in recs
               if (a["scenario"], a["task_idx"]) == (b["scenario"], b["task_idx"]) and a["repeat"] != b["repeat"])
    assert_reproduced(original, replayed)


def test_replay_of_a_missing_run_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = awm_run("--policy", f"replay:{tmp_path / 'nothing'}", "--out", str(tmp_path / "x"), timeout=120)
    assert proc.returncode == 2 and "is not a run directory" in proc.stderr and "Traceback" not in proc.stderr
