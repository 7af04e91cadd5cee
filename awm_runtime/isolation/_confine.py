"""OS confinement applied inside a child process before it runs dataset code.

The process that forks the confined ones (the world zygote, the verifier fork server) first
enters its namespaces once (`enter_namespaces`: a user namespace with its uid mapped to itself,
an empty network namespace, a private SysV IPC namespace). Each child then `confine`s itself,
single-threaded, before any dataset code runs:

1. rlimits it cannot raise: address space, CPU seconds, file size, open files, no core dumps;
2. no capabilities, in any namespace (the bounding set is emptied too);
3. Landlock: read (and map) only the interpreter's files and what the spec names; write only
   existing files beneath `writable`; create files only beneath `creatable`; no TCP; no signals or
   abstract unix sockets outside the domain; nothing else of the filesystem, /proc included;
4. seccomp: no sockets, io_uring, new processes (threads only if `threads`), exec, ptrace,
   namespaces, mounts, keyrings, or signals to other processes.

`confine` fails closed: an OSError from any step ends the child before dataset code runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import resource
import signal
import sys
import sysconfig
import time
from dataclasses import dataclass
from functools import cache

from awm_runtime.isolation import _coverage as coverage
from awm_runtime.isolation import _landlock as landlock
from awm_runtime.isolation import _seccomp as seccomp

CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
_PR_SET_DUMPABLE, _PR_CAPBSET_DROP = 4, 24
_libc = ctypes.CDLL(None, use_errno=True)


def _oserror(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def mark_private() -> None:
    """Make this process non-dumpable: /proc/<pid>/environ, /proc/<pid>/mem and ptrace are then
    refused to every process without CAP_SYS_PTRACE, the same uid included. For processes that hold keys.
    """
    if sys.platform.startswith("linux") and _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise _oserror("prctl(PR_SET_DUMPABLE)")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


# How many nice steps below the runtime dataset code runs. The runtime's event loop serves every episode: when
# world workers and verifiers hold both cores, its iterations stretch (the loop thread is runnable but waits for a
# CPU). At 5 steps each of their sessions weighs 335 against the runtime's 1,024 while they compete; an idle core
# is still theirs. Measured at 10,000 episodes x 30 s on two cores (docs/runs.md): 3 steps left the loop-lag p99
# at the 100 ms line; 10 steps starved the world workers until tool calls passed their timeout.
DATASET_NICENESS = 5


def yield_cpu(niceness: int = DATASET_NICENESS) -> None:
    """Run this process, and all it forks, `niceness` steps below the runtime. Call it first thing in a server
    that starts its own session, before any thread starts (on Linux a nice value is per thread, inherited).

    Both levels are set. With autogroup scheduling (most desktop and VM kernels) each session is scheduled as
    one group beside the others, and a process's nice value counts only inside its group: the group's own
    value, in /proc/self/autogroup, is what weighs against the runtime's session."""
    for _ in range(3):
        try:
            _write("/proc/self/autogroup", str(niceness))
            break
        except BlockingIOError:  # the kernel takes one unprivileged change per 100 ms, machine-wide
            time.sleep(0.11)
        except OSError:  # no autogroup (disabled, or not Linux): the process's own value is enough
            break
    with contextlib.suppress(OSError):  # refused by a sandbox around us: the priority stays as it was
        os.nice(niceness)


def enter_namespaces() -> str:
    """Enter new user, network and IPC namespaces (this uid and gid mapped to themselves); as root
    without user namespaces, network and IPC only. Single-threaded callers only.

    Returns what was entered ("user, net, ipc", "net, ipc") or "" when the kernel refused.
    """
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC) == 0:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        return "user, net, ipc"
    if _libc.unshare(CLONE_NEWNET | CLONE_NEWIPC) == 0:  # root where user namespaces are disabled
        return "net, ipc"
    return ""


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_bounding_set_emptied = False  # by this process, or by the server it was forked from (a fork inherits both)


def empty_bounding_set() -> None:
    """Drop every capability from the bounding set (none can be gained again, even by exec); once per process
    tree. A server that forks confined children does it first (`prepare`), so that each child does not make the
    ~40 calls again: 0.4 ms of a verification's fork, measured."""
    global _bounding_set_emptied
    if _bounding_set_emptied:
        return
    for cap in range(64):
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:  # EINVAL: past the last
            break
    _bounding_set_emptied = True


def drop_capabilities() -> None:
    """No capabilities left, and none to regain (the bounding set is emptied first)."""
    empty_bounding_set()
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    if _libc.capset(ctypes.byref(header), (_CapData * 2)()) != 0:
        raise _oserror("capset")


@dataclass(frozen=True, slots=True)
class Limits:
    """rlimits of a confined process: hard limits, which it cannot raise."""

    memory_mb: int
    cpu_s: int
    file_mb: int = 0
    open_files: int = 64
    processes: int | None = None  # RLIMIT_NPROC; None: unchanged (it counts the user's threads too)


def set_limits(limits: Limits) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))  # SIGXCPU at the soft limit says why
    for limit, value in ((resource.RLIMIT_AS, limits.memory_mb << 20), (resource.RLIMIT_NOFILE, limits.open_files),
                         (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(limit, (value, value))
    file_size = limits.file_mb << 20
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, coverage.file_size_hard_limit(file_size)))
    if limits.processes is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    coverage.keep_measuring()


@cache
def interpreter_paths() -> tuple[str, ...]:
    """What an already-started Python process reads to import a module: the standard library,
    site-packages, this package's folders (editable installs map them elsewhere), system libraries
    and time zones. Not the repository root, not $HOME: a project may keep a .env beside its code."""
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    # sys.path entries that hold installed code; a project root on sys.path (PYTHONPATH, old editable
    # installs) is left out: this package's own folders are added below.
    paths |= {p for p in sys.path if os.path.isdir(p) and
              (p.endswith(("site-packages", "dist-packages", "lib-dynload")) or p.startswith(sys.base_prefix))}
    paths.add(os.path.realpath(os.path.dirname(os.path.dirname(__file__))))  # the awm_runtime folder
    for sub in ("policies", "experts", "prompts"):  # installed inside the package from the repo's top level
        spec = importlib.util.find_spec(f"awm_runtime.{sub}")
        if spec is not None:
            paths |= {os.path.realpath(p) for p in spec.submodule_search_locations or ()}
    paths |= {"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib", "/etc/ld.so.cache", "/usr/share/zoneinfo",
              "/etc/localtime"}
    return tuple(sorted(p for p in paths if os.path.exists(p)))


@dataclass(frozen=True, slots=True)
class Confinement:
    """What one confined process may touch, beyond the interpreter's own files."""

    limits: Limits
    readable: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()  # existing files beneath these may be written and truncated
    creatable: tuple[str, ...] = ()  # files may also be created and removed beneath these
    threads: bool = False


def _rules(spec: Confinement) -> list[tuple[str, int]]:
    rules = [(p, landlock.READ) for p in (*interpreter_paths(), *spec.readable)]
    rules += [("/dev/null", landlock.READ_FILE | landlock.WRITE_FILE), ("/dev/urandom", landlock.READ_FILE)]
    rules += [(p, landlock.READ | landlock.WRITE_EXISTING) for p in spec.writable]
    rules += [(p, landlock.READ | landlock.WRITE_EXISTING | landlock.MAKE_REG | landlock.REMOVE_FILE)
              for p in (*spec.creatable, *coverage.data_rules())]  # the second: only while a test run measures
    return rules


def prepare() -> None:
    """In a process that forks confined children: load libseccomp, list the interpreter's paths and empty the
    capability bounding set once, so that each child inherits them instead of paying for them. (The bounding set
    only limits what an exec could gain: the server keeps the capabilities it has, a mount included.)"""
    empty_bounding_set()
    if seccomp.available():
        seccomp.template(threads=True)
        seccomp.template(threads=False)
    interpreter_paths()
    landlock.abi_version()


def confine(spec: Confinement, *, unsafe: bool = False) -> None:
    """Confine the calling (single-threaded) process as `spec` says; `unsafe`: rlimits only."""
    if unsafe:
        set_limits(spec.limits)
        return
    abi = landlock.abi_version()
    if abi < 1:
        raise OSError("Landlock is not available: the process was not confined")
    program = seccomp.for_pid(seccomp.template(threads=spec.threads), os.getpid())  # before Landlock: it reads files
    rules = _rules(spec)
    set_limits(spec.limits)
    drop_capabilities()
    landlock.restrict(abi, rules)
    seccomp.load(program)


def narrow(spec: Confinement, *, unsafe: bool = False) -> None:
    """Add a further Landlock layer: from now on only what `spec` allows (an intersection with before)."""
    if not unsafe:
        landlock.restrict(landlock.abi_version(), _rules(spec))
