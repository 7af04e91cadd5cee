"""awm-bench scale runs end to end and reports throughput against the ideal, lag, RSS and CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = [sys.executable, "-c", "from awm_runtime.cli import bench_main; raise SystemExit(bench_main())", "scale"]


def bench(*args: str) -> dict[str, object]:
    proc = subprocess.run([*BENCH, *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "awm-bench scale" in proc.stderr  # the table
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_scheduler_stack_holds_n_in_flight_near_the_ideal() -> None:
    r = bench("--stack", "scheduler", "--episodes", "40", "--latency", "0.2", "--waves", "4")
    assert r["episodes"] == 180 and r["outcomes"] == {"complete": 180}  # 3 repeats of 60 tasks
    assert r["mean_model_calls_per_episode"] == 5.0
    assert 0.3 < r["efficiency"] <= 1.1  # type: ignore[operator]
    assert r["rss_per_in_flight_episode_mib"] < 1  # type: ignore[operator]
    assert set(r["cpu_s_per_episode"]) == {"runtime", "world", "model_server"}  # type: ignore[call-overload]
    assert r["targets"] == {"efficiency": None, "loop_lag_p99_ms": 50.0}  # no target at this size
    slices = r["loop_slices"]  # how the episodes shared the loop: every one asked once per model call at least
    assert slices["steps"] >= 180 * 5 and 0 <= slices["waited"] <= slices["steps"]  # type: ignore[index,operator]


def test_full_stack_against_the_loopback_server_in_another_process() -> None:
    r = bench("--episodes", "4", "--latency", "0.05", "--waves", "2", "--scenarios", "shop*", "--shards", "1")
    assert r["episodes"] == 10 and r["outcomes"] == {"complete": 10}
    assert r["mean_model_calls_per_episode"] > 1 and r["ideal_episodes_per_s"] > 0  # type: ignore[operator]
    assert r["loop_lag_p99_ms_per_process"] and r["cpus"]
    per_call: dict[str, float] = r["cpu_ms_per_model_call"]  # type: ignore[assignment]
    per_episode: dict[str, float] = r["cpu_s_per_episode"]  # type: ignore[assignment]
    calls: float = r["mean_model_calls_per_episode"]  # type: ignore[assignment]
    assert set(per_call) == {"runtime", "world", "model_server"}
    for part, ms in per_call.items():  # per episode is rounded to 0.1 ms
        assert ms == pytest.approx(1000 * per_episode[part] / calls, abs=0.06)
    assert r["targets"] == {"efficiency": None, "loop_lag_p99_ms": 50.0}  # no target at this size
    assert r["met"]["efficiency"] is None  # type: ignore[index]


def test_a_batch_reports_its_makespan_and_the_peaks_of_the_run() -> None:
    """Smoke test of --batch (issue 32): every episode at once, on one scenario (the GRPO shape)."""
    r = bench("--batch", "--episodes", "10", "--latency", "0.1", "--scenarios", "shop*", "--shards", "1")
    assert r["episodes"] == 10 and r["outcomes"] == {"complete": 10}
    assert r["planned"] == 10 and r["lost"] == 0  # issue 49's row: none planned went unrecorded
    batch: dict[str, float] = r["batch"]  # type: ignore[assignment]
    assert batch["ideal_makespan_s"] >= 0.2 and batch["makespan_s"] >= batch["ideal_makespan_s"] * 0.9
    assert 0 < batch["efficiency"] <= 1.1 and batch["target"] == 0.85
    # Issue 49's share of ideal runs to the last episode recorded, after the last reply: never more than the
    # model side's own window.
    assert batch["first_request_to_last_record_s"] >= batch["makespan_s"]
    assert 0 < batch["share_of_ideal"] <= batch["efficiency"]
    assert batch["prepare_s"] >= 0 and batch["run_start_to_first_request_s"] >= 0
    # Where the batch waited between model calls, turn by turn: every episode made 2 or more calls here.
    gaps: dict[str, dict[str, float]] = batch["reply_to_next_request_s"]  # type: ignore[assignment]
    assert list(gaps)[:1] == ["1"] and gaps["1"]["episodes"] == r["episodes"]
    assert all(0 <= g["p50"] <= g["max"] < 60 for g in gaps.values())
    assert r["peak_rss_mib"] > 0 and r["peak_open_files_runtime"] > 0  # type: ignore[operator]
    assert 0 < r["peak_pss_mib"] <= r["peak_rss_mib"] and r["bench_sampler_cpu_s"] >= 0  # type: ignore[operator]
    assert r["peak_open_files_all"] >= r["peak_open_files_runtime"]  # type: ignore[operator]
    assert r["open_files_limit"] >= 1024 and r["loop_lag_p99_ms"] >= 0  # type: ignore[operator]
    assert set(r["cpu_ms_per_model_call"]) == {"runtime", "world", "model_server"}  # type: ignore[call-overload]


def test_a_batch_can_verify_in_kept_workers(tmp_path: Path) -> None:
    """--verifier-reuse runs the batch's verifications in kept workers, as `awm-run --verifier-reuse` does, and the
    JSON says which verifier ran."""
    r = bench("--batch", "--episodes", "6", "--latency", "0.05", "--scenarios", "shop*", "--shards", "1",
              "--verifier-reuse", "--out", str(tmp_path / "run"))
    assert r["outcomes"] == {"complete": r["planned"]} and r["verifier"] == "kept workers"  # whole repeats
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["verifier_reuse"] is True


def test_the_headline_row_gives_share_lost_and_lag_and_no_share_where_none_is_known() -> None:
    from awm_runtime.bench._scale_peaks import headline

    row = headline({"share_of_ideal": 0.8123}, 2, 998, 64.4, 100.0)
    assert row[1] == "81.2% of ideal | 2 of 1,000 | 64 ms" and row[2] == ">= 90%, 0 lost, lag < 100 ms"
    assert headline(None, 0, 10, 3.0, 50.0)[1].startswith("unknown | 0 of 10")  # a steady run has no makespan
    assert headline({"share_of_ideal": None}, 0, 10, 3.0, 50.0)[1].startswith("unknown")


def test_the_loop_slices_of_the_parent_and_every_shard_add_up() -> None:
    from awm_runtime.bench._scale_peaks import slices_figures

    one = {"steps": 10, "waited": 4, "wait_s": 0.4, "max_wait_ms": 150.0}
    two = {"steps": 30, "waited": 6, "wait_s": 0.2, "max_wait_ms": 90.0}
    total = slices_figures({"loop_slices": one}, [{"loop_slices": two}, {"exit": -9}])  # a shard that died says nothing
    assert total == {"steps": 40, "waited": 10, "wait_s": 0.6, "mean_wait_ms": 60.0, "max_wait_ms": 150.0}
    assert slices_figures({}, [])["mean_wait_ms"] == 0.0


def test_the_peaks_sampler_reads_rss_every_pass_and_pss_every_tenth() -> None:
    """RSS comes from the kernel's counters (statm) on every pass; PSS walks page tables, so it is read on
    every `pss_every`-th pass and at the end (issue 32: 55-65 ms of CPU per pass of a 1,000-episode batch)."""
    from awm_runtime.bench._procs import _memory, resident_mib
    from awm_runtime.bench._scale_peaks import Peaks

    rss, _ = _memory(os.getpid())
    assert resident_mib(os.getpid()) == pytest.approx(rss, rel=0.1)
    assert resident_mib(2**22 + 12345) == 0.0  # no such process
    peaks = Peaks(pss_every=3)
    peaks.sample()  # the first pass reads PSS
    assert peaks.pss_mib > 0 and peaks.rss_mib > 0 and peaks.files_runtime > 0
    peaks.pss_mib = 0.0
    peaks.sample()
    peaks.sample()
    assert peaks.pss_mib == 0.0  # passes 2 and 3 skipped it
    peaks.sample()
    assert peaks.pss_mib > 0  # pass 4 read it
    peaks.pss_mib = 0.0
    peaks.stop()  # the last pass reads it whatever the count
    assert peaks.pss_mib > 0 and peaks.to_dict()["bench_sampler_cpu_s"] >= 0


def test_the_peaks_sampler_runs_in_a_process_of_its_own_and_ends_with_the_bench() -> None:
    """The /proc scans run outside the measured process (no GIL, no CPU of the runtime's), leave themselves
    out of the counts, report their own CPU (reaped: this process's children's), and end when the bench does,
    killed or not."""
    import resource
    import time

    from awm_runtime.bench._scale_peaks import Peaks

    sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        peaks = Peaks(every_s=0.1)
        peaks.start()
        assert peaks._proc is not None
        sampler = peaks._proc.pid
        time.sleep(1.0)
        assert peaks.other_rss_mib > 0  # passes arrive while it runs: the sleepers, as the bench reads them
        peaks.stop()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert not os.path.exists(f"/proc/{sampler}")  # ended and reaped
        assert peaks.processes == 4  # this process and the three sleepers: never the sampler itself
        assert peaks.files_runtime > 0 and peaks.files_all > peaks.files_runtime and peaks.pss_mib > 0
        reaped = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        assert 0 < peaks.cpu_s <= reaped + 0.05  # what it reports is what this process reaped of it
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    # A bench that is killed closes the sampler's pipes: it notices, and ends without a traceback.
    code = ("from awm_runtime.bench._scale_peaks import Peaks; import time; p = Peaks(every_s=0.05); p.start(); "
            "print(p._proc.pid, flush=True); time.sleep(60)")
    bench_proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert bench_proc.stdout is not None and bench_proc.stderr is not None
    sampler = int(bench_proc.stdout.readline())
    time.sleep(0.5)
    bench_proc.kill()
    bench_proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{sampler}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            break
        if state == "Z":  # exited; its new parent reaps it
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the sampler outlived the bench by 10 s")
    assert bench_proc.stderr.read() == b""
