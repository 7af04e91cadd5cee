"""Dataset code runs below the runtime: world workers and verifier jobs yield the CPU to the event loop.

Each server starts its own session, and with autogroup scheduling a session is weighed as one group against the
runtime's: the group's nice value is set as well as the process's (issue 32: the loop thread waited for a core
for most of its long iterations while world workers held both).
"""

from __future__ import annotations

import os
import subprocess
import sys

from awm_runtime.isolation import yield_cpu
from awm_runtime.isolation._confine import DATASET_NICENESS
from tests.awm_runtime.isolation.conftest import autogroup_of, nice_of


def test_yield_cpu_lowers_a_new_sessions_group_and_not_the_callers() -> None:
    before = (nice_of(os.getpid()), autogroup_of(os.getpid()))
    group = "/proc/self/autogroup"
    code = ("import os; from awm_runtime.isolation import yield_cpu; yield_cpu(); "
            f"print(os.nice(0), open({group!r}).read().split()[-1] if os.path.exists({group!r}) else 'none')")
    out = subprocess.run([sys.executable, "-c", code], start_new_session=True, capture_output=True, text=True,
                         check=True, timeout=30).stdout.split()
    assert int(out[0]) == min(19, before[0] + DATASET_NICENESS)
    assert out[1] == ("none" if before[1] is None else str(DATASET_NICENESS))
    assert (nice_of(os.getpid()), autogroup_of(os.getpid())) == before


def test_two_sessions_lowered_at_once_both_get_it() -> None:
    """Without CAP_SYS_ADMIN the kernel takes one autogroup change per 100 ms, machine-wide (EAGAIN after that):
    the world zygote and the verifier fork server start together, so the second one retries."""
    group = "/proc/self/autogroup"
    code = ("import os; from awm_runtime.isolation import yield_cpu; yield_cpu(); "
            f"print(os.nice(0), open({group!r}).read().split()[-1] if os.path.exists({group!r}) else 'none')")
    procs = [subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    expected = f"{min(19, nice_of(os.getpid()) + DATASET_NICENESS)} " + (
        str(DATASET_NICENESS) if autogroup_of(os.getpid()) is not None else "none")
    assert [p.communicate(timeout=30)[0].strip() for p in procs] == [expected] * 2


def test_a_second_call_only_lowers_it_further() -> None:
    code = "import os; from awm_runtime.isolation import yield_cpu; yield_cpu(3); yield_cpu(3); print(os.nice(0))"
    out = subprocess.run([sys.executable, "-c", code], start_new_session=True, capture_output=True, text=True,
                         check=True, timeout=30).stdout
    assert int(out) == min(19, nice_of(os.getpid()) + 6)


def test_yield_cpu_is_public() -> None:
    assert callable(yield_cpu) and yield_cpu.__doc__
