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

# In a new session: yield_cpu(), then print the process's nice value and its group's ("none": the kernel reports
# no autogroup for it, by no file or an empty one).
GROUP = "/proc/self/autogroup"
LOWERED = ("import os; from awm_runtime.isolation import yield_cpu; yield_cpu(); "
           f"print(os.nice(0), (open({GROUP!r}).read().split() or ['none'])[-1] if os.path.exists({GROUP!r}) "
           "else 'none')")


def lowered() -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", LOWERED], start_new_session=True, stdout=subprocess.PIPE, text=True)


def expected(printed: str) -> str:
    """What LOWERED should have printed, started from this process. Where the kernel reports a group for the new
    session it must be lowered. Where it reports none for the new session (no autogroup, or an empty file) only
    the process's value can be checked; but a kernel that reports one for this process makes one per session."""
    reports = autogroup_of(os.getpid()) is not None or not printed.endswith(" none")
    group = str(DATASET_NICENESS) if reports else "none"
    return f"{min(19, nice_of(os.getpid()) + DATASET_NICENESS)} {group}"


def run_lowered(*procs: subprocess.Popen[str]) -> list[tuple[str, str]]:
    """(printed, expected) for each."""
    printed = [p.communicate(timeout=30)[0].strip() for p in procs]
    return [(out, expected(out)) for out in printed]


def test_yield_cpu_lowers_a_new_sessions_group_and_not_the_callers() -> None:
    before = (nice_of(os.getpid()), autogroup_of(os.getpid()))
    [(printed, wanted)] = run_lowered(lowered())
    assert printed == wanted
    assert (nice_of(os.getpid()), autogroup_of(os.getpid())) == before


def test_two_sessions_lowered_at_once_both_get_it() -> None:
    """Without CAP_SYS_ADMIN the kernel takes one autogroup change per 100 ms, machine-wide (EAGAIN after that):
    the world zygote and the verifier fork server start together, so the second one retries."""
    for printed, wanted in run_lowered(lowered(), lowered()):
        assert printed == wanted


def test_a_second_call_only_lowers_it_further() -> None:
    code = "import os; from awm_runtime.isolation import yield_cpu; yield_cpu(3); yield_cpu(3); print(os.nice(0))"
    out = subprocess.run([sys.executable, "-c", code], start_new_session=True, capture_output=True, text=True,
                         check=True, timeout=30).stdout
    assert int(out) == min(19, nice_of(os.getpid()) + 6)


def test_yield_cpu_is_public() -> None:
    assert callable(yield_cpu) and yield_cpu.__doc__


def test_a_process_without_privilege_retries_a_change_the_kernel_rate_limits() -> None:
    """In a user namespace (no CAP_SYS_ADMIN where it counts) the kernel refuses a second autogroup change within
    100 ms with EAGAIN: yield_cpu waits and tries again, and the group ends at the second value."""
    code = ("import os; from awm_runtime.isolation import enter_namespaces, yield_cpu; enter_namespaces(); "
            f"yield_cpu(1); yield_cpu(2); print(os.nice(0), (open({GROUP!r}).read().split() or ['none'])[-1] "
            f"if os.path.exists({GROUP!r}) else 'none')")
    out = subprocess.run([sys.executable, "-c", code], start_new_session=True, capture_output=True, text=True,
                         check=True, timeout=30).stdout.strip()
    reports = autogroup_of(os.getpid()) is not None or not out.endswith(" none")
    assert out == f"{min(19, nice_of(os.getpid()) + 3)} {'2' if reports else 'none'}"
