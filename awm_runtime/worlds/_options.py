"""WorldOptions (how worlds are served and judged) and PoolOptions (the world worker pool's limits)."""

from __future__ import annotations

from dataclasses import dataclass

from awm_runtime._errors import ConfigError
from awm_runtime.worlds._call_threads import IDLE_EXIT_S
from awm_runtime.worlds._verify import VerifierMode

MIN_DISK_MIB = 16  # a scenario's smallest disk quota (--world-disk-mib)


@dataclass(frozen=True, slots=True)
class WorldOptions:
    """How worlds are served and judged. Every field has the runtime's default."""

    foreign_keys: bool = False  # PRAGMA foreign_keys=ON while seeding and in every episode connection
    verifier: VerifierMode = "code"
    verifier_timeout_s: float = 20.0
    verifier_memory_mb: int = 512
    tool_timeout_s: float = 30.0
    load_timeout_s: float = 120.0
    workers: int = 0  # most world workers per scenario; 0: one per core, between 2 and 8
    max_world_workers: int = 64  # most world workers alive at once (one scenario each)
    world_memory_mb: int = 1024  # each world worker's address space
    validate_arguments: bool = True  # as mcp's server does before a fastapi-mcp tool runs
    unsafe_no_sandbox: bool = False  # run dataset code unconfined (rlimits only): --unsafe-no-sandbox
    # Verify in kept, confined workers, one per verifier code, given the DBs' bytes (docs/worlds.md): --verifier-reuse
    verifier_reuse: bool = False
    keep_idle_scenarios: int = 8  # built scenarios kept ready after their last episode; older ones are evicted
    # All of a scenario's files together (its build, imports, episode DBs), in MiB. None: sized for its template
    # and the episodes of it in flight (`AwmWorld.plan_in_flight`, else `in_flight`), at least 256 MiB.
    world_disk_mib: int | None = None
    in_flight: int = 64  # episodes of one scenario open at once, when no plan says (sizes the disk quota)

    def __post_init__(self) -> None:
        """Refuse a limit that would mean no limit (setrlimit reads a negative size as a huge one) or nothing."""
        positive = ("verifier_timeout_s", "verifier_memory_mb", "tool_timeout_s", "load_timeout_s",
                    "max_world_workers", "world_memory_mb", "in_flight")
        for name in positive:
            if not getattr(self, name) > 0:
                raise ConfigError(f"world option {name} must be positive, not {getattr(self, name)!r}")
        for name in ("workers", "keep_idle_scenarios"):
            if getattr(self, name) < 0:
                raise ConfigError(f"world option {name} must be 0 or more, not {getattr(self, name)!r}")
        if self.world_disk_mib is not None and self.world_disk_mib <= 0:
            raise ConfigError(f"world option world_disk_mib must be positive, not {self.world_disk_mib!r}")


@dataclass(frozen=True, slots=True)
class PoolOptions:
    """The pool's limits: workers per scenario and in all, timeouts, and each worker's resource limits."""

    workers: int = 0  # most workers per scenario; 0: one per core, between 2 and 8
    max_workers: int = 64  # most workers alive at once (idle ones are stopped first)
    tool_timeout_s: float = 30.0
    load_timeout_s: float = 120.0
    validate_arguments: bool = True
    memory_mb: int = 1024  # each worker's address space
    cpu_s: int = 600  # each worker's CPU seconds (it is replaced before it reaches them)
    file_mb: int = 1024  # largest file (episode DB) a worker may write
    disk_mib: int = 256  # all of a scenario's files together (a tmpfs of this size on its directory)
    unsafe: bool = False  # --unsafe-no-sandbox: rlimits only
    call_idle_exit_s: float = IDLE_EXIT_S  # a worker's call thread parked this long ends (`_call_threads`)
