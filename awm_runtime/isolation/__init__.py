"""The boundary around untrusted code (world workers, verifier jobs): frames, child processes, confinement."""

from awm_runtime.isolation._children import (
    die_with_parent,
    kill_process,
    module_code,
    process_cpu_s,
    protocol_fds,
    scrubbed_env,
    signal_process,
    stop_process,
)
from awm_runtime.isolation._confine import (
    Confinement,
    Limits,
    confine,
    enter_namespaces,
    interpreter_paths,
    mark_private,
    narrow,
    prepare,
    yield_cpu,
)
from awm_runtime.isolation._containment import UNSAFE_FLAG, Containment, probe, require
from awm_runtime.isolation._coverage import checkpoint as checkpoint_coverage
from awm_runtime.isolation._coverage import save as save_coverage
from awm_runtime.isolation._frames import (
    HEADER,
    MAX_FRAME,
    FrameError,
    decode,
    encode,
    read_exact,
    read_frame,
    read_frame_fd,
    write_all,
)
from awm_runtime.isolation._mounts import (
    enter_mount_namespace,
    join_namespaces,
    mount_quota,
    namespace_fds,
    resize_quota,
)

__all__ = [
    "HEADER",
    "MAX_FRAME",
    "UNSAFE_FLAG",
    "Confinement",
    "Containment",
    "FrameError",
    "Limits",
    "checkpoint_coverage",
    "confine",
    "decode",
    "die_with_parent",
    "encode",
    "enter_mount_namespace",
    "enter_namespaces",
    "interpreter_paths",
    "join_namespaces",
    "kill_process",
    "mark_private",
    "module_code",
    "mount_quota",
    "namespace_fds",
    "narrow",
    "prepare",
    "probe",
    "process_cpu_s",
    "protocol_fds",
    "read_exact",
    "read_frame",
    "read_frame_fd",
    "require",
    "resize_quota",
    "save_coverage",
    "scrubbed_env",
    "signal_process",
    "stop_process",
    "write_all",
    "yield_cpu",
]
