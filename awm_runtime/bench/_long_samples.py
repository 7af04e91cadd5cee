"""What `awm-bench long`'s sampler keeps: bounded, whatever the run's length.

The sampler runs in the runtime's process, whose RSS it judges, so what it keeps must not grow with the run.
A dict a pass (a second), and one of descriptors by process kind, were ~610 B (tracemalloc): over 100,000
episodes on a loaded machine (6 episodes/s, 16,700 passes) ~10 MiB, more than the 5% it checks for (0.8 MiB
quiet, at 77 episodes/s). Now ~23 B a pass. Kept now: the samples inside the two windows `flatness` compares (the
second tenth of the episodes and the last tenth), as rows of doubles (8 bytes a field), with each long-lived
process's RSS and descriptors in them (4 doubles a process a pass), and a thinned series of
at most `2 * keep` samples (every sample until it is full, then every other one, and so on) for the progress
shown and the window fallback; the peaks as running maxima.
"""

from __future__ import annotations

from array import array
from typing import Any

FIELDS = ("t", "recorded", "in_flight", "rss_runtime_mib", "rss_all_mib", "files_runtime", "files_runtime_own",
          "files_all", "threads_all", "processes", "forks", "files_forks")
WARM, END = (0.10, 0.20), 0.90  # flatness's windows, as shares of the planned episodes


class Samples:
    """The sampler's memory: the samples of the warm and end windows (one array of doubles) with each process's
    RSS and descriptors in them (another), a thinned series of samples with their descriptors by process kind (at
    most `2 * keep`), and each field's peak."""

    def __init__(self, planned: int, keep: int = 50) -> None:
        self.planned = planned
        self.keep = keep
        self._windows = array("d")
        self._processes = array("d")  # in the windows: (t, pid, RSS MiB, open files) a process a pass
        self._thinned: list[tuple[dict[str, float], dict[str, int]]] = []
        self._thinned_processes: list[dict[int, tuple[float, int]]] = []  # beside `_thinned` (a window's fallback)
        self._stride = 1  # the thinned series keeps every `_stride`-th sample
        self._seen = 0
        self.peak: dict[str, float] = {}

    def add(self, sample: dict[str, float], kinds: dict[str, int],
            processes: dict[int, tuple[float, int]] | None = None) -> None:
        """Keep `sample` (FIELDS; a missing one is NaN) and `processes` (pid: its RSS and open files) if it is in a
        window, thin it otherwise."""
        for name in FIELDS:
            if name in sample and sample[name] > self.peak.get(name, float("-inf")):
                self.peak[name] = sample[name]
        share = sample["recorded"] / self.planned if self.planned else 1.0
        if WARM[0] <= share < WARM[1] or share >= END:
            self._windows.extend(float(sample.get(name, float("nan"))) for name in FIELDS)
            for pid, (rss, files) in (processes or {}).items():
                self._processes.extend((sample["t"], float(pid), rss, float(files)))
        if self._seen % self._stride == 0:
            self._thinned.append((sample, kinds))
            self._thinned_processes.append(dict(processes or {}))
            if len(self._thinned) >= 2 * self.keep:
                self._thinned = self._thinned[::2]
                self._thinned_processes = self._thinned_processes[::2]
                self._stride *= 2
        self._seen += 1

    def __len__(self) -> int:
        return self._seen

    def rows(self) -> list[dict[str, float]]:
        """The kept samples as dicts, in the order taken: the windows' and the thinned ones (once each)."""
        width = len(FIELDS)
        out = {s["t"]: s for s, _ in self._thinned}
        for i in range(0, len(self._windows), width):
            row = {name: v for name, v in zip(FIELDS, self._windows[i:i + width], strict=True) if v == v}  # NaN: absent
            out.setdefault(row["t"], row)
        return [out[t] for t in sorted(out)]

    def processes(self) -> dict[float, dict[int, tuple[float, int]]]:
        """Each kept sample's processes (the windows' and the thinned ones), by the sample's `t`: pid -> (RSS MiB,
        open files)."""
        out = {s["t"]: ps for (s, _), ps in zip(self._thinned, self._thinned_processes, strict=True)}
        rows = self._processes
        for i in range(0, len(rows), 4):
            out.setdefault(rows[i], {})[int(rows[i + 1])] = (rows[i + 2], int(rows[i + 3]))
        return out

    def thinned(self) -> list[tuple[dict[str, float], dict[str, int]]]:
        """At most `2 * keep` samples spread over the run, each with its descriptors by process kind."""
        return list(self._thinned)

    def nbytes(self) -> int:
        """What the windows' rows hold (the thinned series is bounded by `keep`)."""
        return self._windows.itemsize * len(self._windows) + self._processes.itemsize * len(self._processes)


def thin(items: list[Any], at_most: int) -> list[Any]:
    """Every k-th item, k chosen so at most about `at_most` remain."""
    return items[:: max(1, len(items) // at_most)]


__all__ = ["FIELDS", "Samples", "thin"]
