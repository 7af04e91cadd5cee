"""The open-file limit: raised to the hard limit at start, and one line when it is still too low."""

from __future__ import annotations

import resource
import subprocess
import sys

from awm_runtime.scheduler._fds import needed_files

PROBE = """
import resource
from awm_runtime.scheduler._fds import raise_open_files
line = raise_open_files({concurrency})
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
print(line or "")
"""


def _run(concurrency: int, soft: int, hard: int) -> tuple[int, str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    proc = subprocess.run([sys.executable, "-c", PROBE.format(concurrency=concurrency)], capture_output=True,
                          text=True, timeout=60, preexec_fn=limit, check=True)
    first, second = [*proc.stdout.splitlines(), "", ""][:2]
    return int(first), second


def test_the_soft_limit_is_raised_to_the_hard_limit() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    hard = 4096 if hard == resource.RLIM_INFINITY or hard > 4096 else hard
    soft, line = _run(100, 256, hard)
    assert soft == hard
    assert (line == "") == (hard >= needed_files(100))


def test_one_line_says_when_the_hard_limit_is_too_low_for_the_concurrency() -> None:
    soft, line = _run(10_000, 256, 1024)
    assert soft == 1024
    assert "open-file limit is 1024" in line and "10000 episodes in flight" in line and "--concurrency" in line
    soft, line = _run(100, 256, 1024)
    assert soft == 1024 and line == ""


def test_in_this_process_the_soft_limit_ends_at_the_hard_limit() -> None:
    from awm_runtime.scheduler._fds import raise_open_files

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 1024), hard))
        line = raise_open_files(10)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == (hard if hard != resource.RLIM_INFINITY else 1024)
        assert line is None
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]), hard))
