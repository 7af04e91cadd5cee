"""A seccomp-bpf filter built with libseccomp (ctypes): the system calls dataset code may not make.

The filter allows by default and refuses, with an errno, what opens a way out of the boundary:
sockets (every family) and io_uring (its operations are not seen by seccomp), new processes
(threads stay allowed for world workers), exec, ptrace and the process_vm calls, signals to
any process but itself, namespace and mount calls, keyrings, bpf and perf. libseccomp writes the
BPF program (and the architecture checks that keep i386 and x32 calls out); the program is
compiled once per process kind and loaded with prctl.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from functools import cache

_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_CMP_NE, _CMP_EQ, _CMP_MASKED_EQ = 1, 4, 7
_ATTR_BADARCH, _ATTR_NNP = 2, 3
CLONE_THREAD = 0x00010000
TIOCSTI, TIOCLINUX = 0x5412, 0x541C

REFUSED = (
    # new sockets of any family; io_uring (its socket and file operations bypass seccomp)
    "socket", "io_uring_setup", "io_uring_enter", "io_uring_register",
    # other programs, other processes' memory, handles on other processes
    "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open",
    "pidfd_getfd", "pidfd_send_signal", "tkill",
    # namespaces and mounts (a way around Landlock and the network namespace)
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr",
    # the user's keyrings, the kernel's programs and counters, file handles that skip path checks
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "name_to_handle_at",
    "open_by_handle_at", "fanotify_init", "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl", "lookup_dcookie", "vhangup",
)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


@cache
def _lib() -> ctypes.CDLL | None:
    for candidate in ("libseccomp.so.2", "find"):
        # find_library runs ldconfig: only when the usual name is missing (and never in a confined child)
        name = ctypes.util.find_library("seccomp") if candidate == "find" else candidate
        if name:
            try:
                lib = ctypes.CDLL(name, use_errno=True)
            except OSError:
                continue
            lib.seccomp_init.restype = ctypes.c_void_p
            lib.seccomp_init.argtypes = [ctypes.c_uint32]
            lib.seccomp_release.argtypes = [ctypes.c_void_p]
            lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
            lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
            lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                                   ctypes.POINTER(_ArgCmp)]
            lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
            return lib
    return None


def available() -> bool:
    return _lib() is not None


def _refuse(lib: ctypes.CDLL, ctx: int, name: str, code: int = errno.EPERM, *conds: tuple[int, int, int, int]) -> None:
    nr = lib.seccomp_syscall_resolve_name(name.encode())
    if nr < 0:
        return  # not a system call on this architecture
    arr = (_ArgCmp * max(1, len(conds)))(*[_ArgCmp(*c) for c in conds])
    rc = lib.seccomp_rule_add_array(ctypes.c_void_p(ctx), _ERRNO | code, nr, len(conds), arr)
    if rc < 0:
        raise OSError(-rc, f"seccomp rule for {name}: {os.strerror(-rc)}")


def compile_filter(*, threads: bool, pid: int) -> bytes:
    """The BPF program for a process `pid` (signals only to itself); `threads`: may it start threads."""
    lib = _lib()
    if lib is None:
        raise OSError(errno.ENOSYS, "libseccomp is not installed")
    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        raise OSError(errno.ENOMEM, "seccomp_init failed")
    try:
        lib.seccomp_attr_set(ctypes.c_void_p(ctx), _ATTR_BADARCH, _KILL_PROCESS)
        lib.seccomp_attr_set(ctypes.c_void_p(ctx), _ATTR_NNP, 0)  # set by the loader
        for name in REFUSED:
            _refuse(lib, ctx, name)
        # glibc tries clone3 first and falls back to clone on ENOSYS, whose flags seccomp can see.
        _refuse(lib, ctx, "clone3", errno.ENOSYS)
        _refuse(lib, ctx, "fork")
        _refuse(lib, ctx, "vfork")
        if threads:
            _refuse(lib, ctx, "clone", errno.EPERM, (0, _CMP_MASKED_EQ, CLONE_THREAD, 0))
            for flag in (0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x02000000,
                         0x00000080):
                _refuse(lib, ctx, "clone", errno.EPERM, (0, _CMP_MASKED_EQ, flag, flag))
        else:
            _refuse(lib, ctx, "clone")
        for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
            _refuse(lib, ctx, name, errno.EPERM, (0, _CMP_NE, pid, 0))
        for request in (TIOCSTI, TIOCLINUX):
            _refuse(lib, ctx, "ioctl", errno.EPERM, (1, _CMP_EQ, request, 0))
        read_fd, write_fd = os.pipe()
        try:
            rc = lib.seccomp_export_bpf(ctypes.c_void_p(ctx), write_fd)
            if rc < 0:
                raise OSError(-rc, f"seccomp_export_bpf: {os.strerror(-rc)}")
            os.close(write_fd)
            write_fd = -1
            chunks = []
            while chunk := os.read(read_fd, 1 << 16):
                chunks.append(chunk)
            return _x32_guard() + b"".join(chunks)
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
    finally:
        lib.seccomp_release(ctypes.c_void_p(ctx))


def _x32_guard() -> bytes:
    """x86_64 only: refuse x32 system call numbers, which a filter for x86_64 matches by number alone."""
    if os.uname().machine != "x86_64":
        return b""
    import struct

    insn = struct.Struct("=HBBI")
    return b"".join((insn.pack(0x20, 0, 0, 4),  # A = seccomp_data.arch
                     insn.pack(0x15, 0, 3, 0xC000003E),  # not AUDIT_ARCH_X86_64: on to libseccomp's checks
                     insn.pack(0x20, 0, 0, 0),  # A = seccomp_data.nr
                     insn.pack(0x35, 0, 1, 0x40000000),  # an x32 number:
                     insn.pack(0x06, 0, 0, _ERRNO | errno.ENOSYS)))  # refused


PID_PLACEHOLDER = 0x3A5C9E71  # compiled in where the process's pid goes; see for_pid


@cache
def template(*, threads: bool) -> bytes:
    """The filter for any process, with a placeholder for its pid: compiled once by the process that
    forks confined children (libseccomp takes milliseconds in a fresh fork), specialised by `for_pid`."""
    return compile_filter(threads=threads, pid=PID_PLACEHOLDER)


def for_pid(program: bytes, pid: int) -> bytes:
    """`program` with the placeholder pid replaced by `pid` (the k of each comparison that holds it)."""
    import struct

    insn = struct.Struct("=HBBI")
    out = bytearray(program)
    patched = 0
    for offset in range(0, len(out), insn.size):
        code, jt, jf, k = insn.unpack_from(out, offset)
        if k == PID_PLACEHOLDER and code & 0x07 == 0x05:  # a BPF_JMP comparing with the placeholder
            insn.pack_into(out, offset, code, jt, jf, pid)
            patched += 1
    if not patched:  # libseccomp may share one comparison between the four signal calls, but not drop it
        raise OSError("the seccomp template holds no pid comparison")
    return bytes(out)


def load(program: bytes) -> None:
    """Install a compiled filter on the calling thread (single-threaded callers: the whole process)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: required to load a filter without CAP_SYS_ADMIN
        raise OSError(ctypes.get_errno(), "no_new_privs")
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        err = ctypes.get_errno()
        raise OSError(err, f"loading the seccomp filter: {os.strerror(err)}")
