"""The awm1k set is the built-in worlds renamed; the process sampler counts processes, never threads."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from awm_runtime.bench._awm1k_data import write_awm1k_set
from awm_runtime.bench._procs import ProcessSampler
from awm_runtime.worlds import BUILTIN_DATA, load_dataset


def test_the_set_is_the_builtin_worlds_renamed(tmp_path: Path) -> None:
    info = write_awm1k_set(BUILTIN_DATA, tmp_path / "set", 8)
    ds = load_dataset(Path(info["dir"]))
    builtin = load_dataset(BUILTIN_DATA)
    assert not ds.problems and len(ds.scenarios) == 8 and all(sc.runnable for sc in ds.scenarios.values())
    first = list(builtin.scenarios.values())
    for i, sc in enumerate(ds.scenarios.values()):
        base = first[i % len(first)]
        assert sc.title == f"{base.title} {i:04d}" and sc.tasks == base.tasks
        assert set(sc.solutions) == set(range(10)) and sc.solutions[0] == base.solutions[0]
        assert ds.source(sc.id).full_code == builtin.source(base.id).full_code
        assert ds.verifier(sc.id, 3, "code") == builtin.verifier(base.id, 3, "code")
    assert json.loads((tmp_path / "set" / "solutions.json").read_text())[0]["scenario"].endswith(" 0000")


def test_the_sampler_counts_each_process_once_and_threads_not_at_all() -> None:
    code = "import threading, time\n[threading.Thread(target=time.sleep, args=(20,), daemon=True).start() " \
           "for _ in range(8)]\nprint('up', flush=True)\ntime.sleep(20)\n"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "up"
        sampler = ProcessSampler()
        rss, pss, n = sampler.sample()
        assert n == 2 and set(sampler.seen) == {sampler.root, child.pid}  # 9 threads, one process
        assert 0 < pss <= rss and sampler.peak_rss_mib == rss
        assert sampler.processes_by_kind() == {"runtime": 1, "other": 1}
    finally:
        child.kill()
        child.wait(10)
    time.sleep(0.1)
    assert sampler.sample()[2] == 1
