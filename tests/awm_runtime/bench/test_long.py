"""awm-bench long: a long run's RSS and open files, warm against the end, and the episodes it lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from argparse import Namespace
from pathlib import Path

from awm_runtime.bench._long import Snapshots, count_records, flatness, report
from awm_runtime.bench._long_samples import FIELDS, Samples

BENCH = [sys.executable, "-c", "from awm_runtime.cli import bench_main; raise SystemExit(bench_main())", "long"]


def _sample(recorded: int, in_flight: int, rss: float, files: int) -> dict[str, float]:
    return {"t": float(recorded), "recorded": recorded, "in_flight": in_flight, "rss_runtime_mib": rss,
            "rss_all_mib": 2 * rss, "files_runtime": files, "files_runtime_own": files - 3, "files_all": 3 * files,
            "processes": 3}


def test_flatness_compares_the_second_tenth_with_the_last_tenth_at_full_concurrency() -> None:
    samples = [_sample(50, 10, 500.0, 99)]  # the first tenth: warm-up, left out
    samples += [_sample(r, 10, 100.0 + r % 3, 40) for r in range(100, 200, 10)]  # warm
    samples += [_sample(r, 10, 104.0, 42) for r in range(900, 1000, 10)]  # the end at full concurrency
    samples += [_sample(999, 2, 60.0, 12)]  # draining: left out
    flat = flatness(samples, 1000, 10)
    assert flat["warm"]["rss_runtime_mib"] == 101.0 and flat["end"]["rss_runtime_mib"] == 104.0
    assert flat["growth"]["rss_runtime_mib"] == round(104 / 101 - 1, 4)
    assert flat["growth"]["files_runtime_own"] == round(39 / 37 - 1, 4) and flat["samples"] == [10, 10]
    assert flat["end"]["files_all"] == 126  # shown beside, not judged
    assert set(flat["growth"]) == {"rss_runtime_mib", "files_runtime_own"} and flat["between"] is None


def test_a_window_without_a_sample_takes_the_nearest_and_none_is_unknown() -> None:
    flat = flatness([_sample(10, 4, 100.0, 10), _sample(95, 4, 110.0, 10)], 100, 4)
    assert flat["samples"] == [1, 1] and flat["growth"]["rss_runtime_mib"] == 0.1
    assert flatness([], 100, 4) == {"warm": None, "end": None, "growth": None, "samples": [0, 0], "between": None}
    args = Namespace(concurrency=4)
    r = report(args, 100, 97, {}, [], 1.0, (0.0, 0.0, 0.0), Path("."))
    assert r["lost"] == 3 and r["met"] == {"flat": False, "none_lost": False}
    assert "unknown" in r["table"][1][1]  # no value where none is known
    # 100 episodes, 4 in flight: the second tenth is inside the warm-up (4 episodes a slot), and the table says so
    assert r["warm_window_in_warm_up"] is True and "inside the warm-up" in r["table"][-3][2]
    later = report(args, 1000, 1000, {}, [], 1.0, (0.0, 0.0, 0.0), Path("."))
    assert later["warm_window_in_warm_up"] is False and later["table"][-3][2] == ""


def test_snapshots_sum_only_processes_that_outlive_a_pass(tmp_path: Path) -> None:
    snaps = Snapshots()
    lasting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        first = snaps.take()  # the first pass counts every process
        assert first["processes"] >= 2 and first["files_runtime"] > 0 and first["rss_runtime_mib"] > 0
        assert first["threads_all"] >= 2  # this process's and `lasting`'s
        brief = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            second = snaps.take()  # `brief` was not there the pass before
            assert second["processes"] == first["processes"]
            third = snaps.take()
            assert third["processes"] == first["processes"] + 1
        finally:
            brief.kill()
            brief.wait()
    finally:
        lasting.kill()
        lasting.wait()
    (tmp_path / "e.jsonl").write_bytes(b"{}\n" * 5)
    assert count_records(tmp_path / "e.jsonl") == 5 and count_records(tmp_path / "missing") == 0


def test_a_short_long_run_records_every_episode_and_reports_warm_and_end(tmp_path: Path) -> None:
    proc = subprocess.run([*BENCH, "--episodes", "60", "--concurrency", "6", "--scenarios", "shop*", "--every",
                           "0.1", "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "awm-bench long" in proc.stderr and "lost" in proc.stderr  # the table
    r = json.loads(proc.stdout)
    assert r["planned"] == r["recorded"] >= 60 and r["lost"] == 0 and r["met"]["none_lost"] is True
    assert r["recorded"] == count_records(tmp_path / "run" / "episodes.jsonl")
    assert set(r["warm"]) == set(r["end"]) == {"rss_runtime_mib", "rss_kept_mib", "rss_all_mib", "files_runtime",
                                               "files_runtime_own", "files_kept", "files_all", "processes",
                                               "threads_all", "forks", "files_forks"}
    between = r["processes_between_windows"]
    assert between["kept"] >= 3 and between["kept"] <= r["end"]["processes"]  # the runtime, the zygote, a worker
    assert r["end"]["rss_kept_mib"] <= r["end"]["rss_all_mib"] and r["end"]["files_kept"] <= r["end"]["files_all"]
    # the runtime's own descriptors leave out its 3 pipes to each world worker (and its pipes to the verifier server)
    assert r["end"]["files_runtime_own"] <= r["end"]["files_runtime"] - 3
    assert r["steady_malloc"] is True  # the episode pool fixed glibc's mmap threshold (glibc: this machine)
    assert "verifier forks" in proc.stderr and r["samples_taken"] >= len(r["progress"])
    assert r["progress"][0][1] < 0.5 * r["planned"] <= r["progress"][-1][1]  # spread over the run, not the windows
    assert r["end"]["threads_all"] >= 2  # the runtime's, a world worker's
    assert "threads, summed" in proc.stderr and "not judged" in proc.stderr  # shown in the table
    assert "long-lived processes" in proc.stderr and r["end"]["processes"] >= 3  # the runtime, zygote, a worker
    assert set(r["growth"]) == {"rss_runtime_mib", "rss_kept_mib", "files_runtime_own", "files_kept"}  # judged
    assert r["warm"]["files_runtime"] > 0 and r["end"]["rss_all_mib"] >= r["end"]["rss_runtime_mib"] > 0
    assert r["targets"] == {"growth": 0.05, "lost": 0} and r["progress"]
    assert all("runtime" in kinds for _, kinds in r["files_by_kind"])  # where descriptors are, by process kind


def test_the_samples_kept_are_the_windows_and_a_bounded_thinned_series() -> None:
    planned, keep = 100_000, 50
    samples = Samples(planned, keep=keep)
    for i in range(planned // 10):  # a pass every 10 episodes
        r = 10 * i
        samples.add({"t": float(i), "recorded": r, "in_flight": 64, "rss_runtime_mib": 60.0 + (r == 50_000),
                     "rss_all_mib": 600.0, "files_runtime": 35, "files_runtime_own": 29, "files_all": 300,
                     "threads_all": 40, "processes": 9, "forks": i % 7, "files_forks": 3 * (i % 7)},
                    {"runtime": 35}, {1: (60.0, 29), 2: (90.0, 40)})
    assert len(samples) == planned // 10
    assert len(samples.thinned()) < 2 * keep  # the thinned series is bounded whatever the run's length
    windows = 2 * planned // 100  # passes in the second tenth and the last tenth
    assert samples.nbytes() == 8 * (len(FIELDS) + 2 * 4) * windows  # 8 bytes a field, nothing outside them
    kept = samples.processes()  # every window sample's, and the thinned ones'
    assert windows <= len(kept) < windows + 2 * keep and kept[float(1000)] == {1: (60.0, 29), 2: (90.0, 40)}
    rows = samples.rows()
    assert sum(1 for row in rows if 10_000 <= row["recorded"] < 20_000 or row["recorded"] >= 90_000) == windows
    assert [row["t"] for row in rows] == sorted(row["t"] for row in rows)
    assert samples.peak["rss_runtime_mib"] == 61.0 and samples.peak["forks"] == 6  # the peak outside the windows
    flat = flatness(rows, planned, 64, samples.processes())
    assert flat["samples"] == [windows // 2, windows // 2] and flat["growth"]["files_kept"] == 0.0
    assert flat["warm"]["forks"] == 3 and flat["end"]["files_forks"] == 9  # shown beside, not judged
    assert set(flat["growth"]) == {"rss_runtime_mib", "rss_kept_mib", "files_runtime_own", "files_kept"}
    assert flat["warm"]["rss_kept_mib"] == 150.0 and flat["between"] == {"kept": 2, "started": 0, "ended": 0}


def test_snapshots_count_the_verifier_servers_forks_apart(tmp_path: Path) -> None:
    """A process named like the verifier server (a child of this one) and a fork of it: the fork's descriptors are
    summed apart, never into the long-lived processes' sums, and counted at the first pass that sees it."""
    ready = tmp_path / "ready"
    server = subprocess.Popen([sys.executable, "-c", "import os, sys, time  # awm_runtime.verifiers._fork_server\n"
                               "if os.fork() == 0:\n    fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(20)]\n"
                               f"    open({str(ready)!r}, 'w').close()\n"
                               "time.sleep(30)"])
    try:
        snaps = Snapshots()
        for _ in range(6000):  # the fork has opened its files (a hang guard, not a time bound)
            if ready.exists():
                break
            time.sleep(0.01)
        first = snaps.take()
        assert first["forks"] == 1 and first["files_forks"] >= 20  # the fork and its 20 files, apart
        assert first["processes"] == 2  # this process and the server: the fork is not long-lived
        assert first["files_all"] < first["files_runtime"] + 20  # none of the fork's files in the judged sum
        kinds = Snapshots().take()["files_by_kind"]
        assert kinds["verifier_fork"] >= 20 and kinds["verifier"] < 20
    finally:
        server.kill()
        server.wait()


def test_a_step_in_the_summed_rss_shows_beside_a_process_more() -> None:
    """A world worker started mid-run steps the sums over every process; the judged sums are over the processes that
    live through both windows, so the step is shown (with the count) and a creep in any of those is still caught."""
    samples = [{**_sample(r, 10, 100.0, 40), "processes": 3} for r in range(100, 200, 10)]
    samples += [{**_sample(r, 10, 100.0, 40), "rss_all_mib": 290.0, "processes": 4} for r in range(900, 1000, 10)]
    warm = {float(r): {1: (100.0, 37), 2: (90.0, 30)} for r in range(100, 200, 10)}
    end = {float(r): {1: (100.0, 37), 2: (90.0 + 2 * (r == 950), 30), 3: (90.0, 31)} for r in range(900, 1000, 10)}
    r = report(Namespace(concurrency=10), 1000, 1000, {}, samples, 1.0, (0.0, 0.0, 0.0), Path("."),
               processes={**warm, **end})
    row = next(row for row in r["table"] if row[0] == "long-lived processes")
    assert row[1] == "3 -> 4 (peak 4): 2 through both windows; 1 started, 0 ended between" and "not judged" in row[2]
    assert r["growth"] == {"rss_runtime_mib": 0.0, "rss_kept_mib": 0.0, "files_runtime_own": 0.0, "files_kept": 0.0}
    assert r["end"]["rss_all_mib"] == 290.0 and r["met"]["flat"] is True  # the step: shown, not judged
    assert [p[-1] for p in r["progress"]][:1] == [3] and r["progress"][-1][-1] == 4
    creep = {**warm, **{t: {**ps, 2: (110.0, 30)} for t, ps in end.items()}}  # process 2 grew by 22%
    crept = report(Namespace(concurrency=10), 1000, 1000, {}, samples, 1.0, (0.0, 0.0, 0.0), Path("."),
                   processes=creep)
    assert crept["growth"]["rss_kept_mib"] == round(210 / 190 - 1, 4) and crept["met"]["flat"] is False
    unknown = report(Namespace(concurrency=10), 1000, 1000, {}, samples, 1.0, (0.0, 0.0, 0.0), Path("."))
    assert unknown["met"]["flat"] is False  # without each process's figures the kept sums are unknown, not flat
    assert next(row for row in unknown["table"] if "through both" in row[0])[1] == "unknown"


def test_the_runtime_s_own_descriptors_leave_out_its_pipes_to_its_processes() -> None:
    """A child holding the other end of three pipes (as a world worker does): the runtime's own count drops by 3,
    its whole count does not, and the child's figures are reported per process."""
    ends = [os.pipe() for _ in range(3)]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                             pass_fds=[r for r, _ in ends])
    try:
        snaps = Snapshots()
        seen = snaps.take()
        assert seen["files_runtime_own"] <= seen["files_runtime"] - 3
        assert child.pid in seen["per_process"] and seen["per_process"][os.getpid()][1] == seen["files_runtime_own"]
    finally:
        child.kill()
        child.wait()
        for r, w in ends:
            os.close(r)
            os.close(w)
