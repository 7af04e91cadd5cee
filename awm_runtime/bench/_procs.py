"""The memory and CPU of a run's processes: this process and its descendants, each counted once.

A process is a /proc/PID entry whose parent chain reaches the root; threads (/proc/PID/task) are
not processes and are never counted twice. Memory is reported two ways: the sum of RSS (pages
shared between forked processes counted in each: an upper bound) and the sum of PSS (each shared
page split between its sharers: what the run really occupies).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE_MIB = (os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096) / 2**20


@dataclass(slots=True)
class Proc:
    pid: int
    kind: str
    rss_mib: float = 0.0
    pss_mib: float = 0.0
    cpu_s: float = 0.0


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(parent pid, CPU seconds, CPU seconds of the children it has reaped) from /proc/PID/stat: utime + stime,
    cutime + cstime. None when there is no such process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK, (int(fields[13]) + int(fields[14])) / _TICK
    except (OSError, ValueError, IndexError):
        return None


def cpu_seconds(pid: int | None, *, reaped: bool = False) -> float:
    """CPU seconds of a live process; with `reaped`, plus those of the children it has reaped. 0 when there is
    no such process."""
    st = _stat(pid) if pid is not None else None
    if st is None:
        return 0.0
    return st[1] + st[2] if reaped else st[1]


def _memory(pid: int) -> tuple[float, float]:
    """(RSS, PSS) in MiB from /proc/PID/smaps_rollup, (0, 0) if the process is gone."""
    rss = pss = 0.0
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) / 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return rss, pss


def resident_mib(pid: int) -> float:
    """RSS in MiB from /proc/PID/statm, 0 if the process is gone. The kernel keeps this count, so reading it costs
    microseconds; smaps_rollup (PSS) walks the page tables, 2-4 ms per process of a run."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * _PAGE_MIB
    except (OSError, ValueError, IndexError):
        return 0.0


def fd_targets(pid: int) -> list[str]:
    """What each open descriptor of a live process points at (`pipe:[inode]`, `socket:[inode]`, a path); [] if
    the process is gone. The two ends of a pipe name the same inode, so a pipe between two processes shows in both."""
    out = []
    try:
        with os.scandir(f"/proc/{pid}/fd") as entries:
            for entry in entries:
                try:
                    out.append(os.readlink(entry.path))
                except OSError:  # closed meanwhile
                    continue
    except OSError:
        return []
    return out


def fd_count(pid: int) -> int:
    """How many descriptors a live process has open (no link read); 0 if the process is gone."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def thread_count(pid: int) -> int:
    """Threads of a live process (/proc/PID/stat, a kernel count), 0 if the process is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[17])
    except (OSError, ValueError, IndexError):
        return 0


KINDS = ((b"_world_worker", "world_worker"), (b"_fork_server", "verifier"), (b"_process_main", "shard"),
         (b"_call_procs", "call_proc"))


def kind_of(pid: int, root: int) -> str:
    """runtime (the root), world_worker, verifier (the fork server and its jobs), shard, call_proc or other,
    from the command line; "" when it cannot be read (a process exiting)."""
    if pid == root:
        return "runtime"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    if not cmd:
        return ""
    return next((kind for marker, kind in KINDS if marker in cmd), "other")


def descendants(root: int, parents: dict[int, int] | None = None) -> set[int]:
    """`root` and every live process whose parent chain reaches it (`parents` gets each one's parent)."""
    parents = {} if parents is None else parents
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (st := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = st[0]
    mine, frontier = {root}, {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier and pid not in mine}
        mine |= frontier
    return mine


@dataclass(slots=True)
class ProcessSampler:
    """Samples the process tree under `root`: peak memory sums, and CPU seconds per process kind."""

    root: int = field(default_factory=os.getpid)
    peak_rss_mib: float = 0.0
    peak_pss_mib: float = 0.0
    peak_processes: int = 0
    peak_by_kind: dict[str, float] = field(default_factory=dict)  # PSS per kind at the PSS peak
    seen: dict[int, Proc] = field(default_factory=dict)  # every process ever sampled, last values

    def sample(self) -> tuple[float, float, int]:
        """One pass over the tree (blocking: ~1 ms per process); returns (RSS sum, PSS sum, processes)."""
        rss_sum = pss_sum = 0.0
        by_kind: dict[str, float] = {}
        parents: dict[int, int] = {}
        pids = descendants(self.root, parents)
        for pid in sorted(pids):  # parents before their children: a child's kind can fall back on its parent's
            st = _stat(pid)
            if st is None:
                continue
            proc = self.seen.get(pid)
            if proc is None:
                parent = self.seen.get(parents.get(pid, -1))
                kind = kind_of(pid, self.root) or (parent.kind if parent is not None else "other")
                proc = self.seen[pid] = Proc(pid, kind)
            proc.rss_mib, proc.pss_mib = _memory(pid)
            proc.cpu_s = st[1]
            rss_sum += proc.rss_mib
            pss_sum += proc.pss_mib
            by_kind[proc.kind] = by_kind.get(proc.kind, 0.0) + proc.pss_mib
        if pss_sum > self.peak_pss_mib:
            self.peak_pss_mib, self.peak_by_kind = pss_sum, by_kind
        if rss_sum > self.peak_rss_mib:
            self.peak_rss_mib, self.peak_processes = rss_sum, len(pids)
        return rss_sum, pss_sum, len(pids)

    def cpu_by_kind(self) -> dict[str, float]:
        """CPU seconds per kind, as last sampled (a process's last moments before it exits are missed)."""
        out: dict[str, float] = {}
        for proc in self.seen.values():
            out[proc.kind] = out.get(proc.kind, 0.0) + proc.cpu_s
        return out

    def processes_by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for proc in self.seen.values():
            out[proc.kind] = out.get(proc.kind, 0) + 1
        return out


__all__ = ["ProcessSampler", "cpu_seconds", "descendants", "fd_count", "fd_targets", "kind_of", "resident_mib",
           "thread_count"]
