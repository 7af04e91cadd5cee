"""A mount namespace for the process that forks confined children, and a size-limited tmpfs per scenario in it.

The world zygote enters a mount namespace of its own (`enter_mount_namespace`), after its user namespace,
so that it may mount there without privileges. Each scenario's directory then gets a tmpfs of its own
(`mount_quota`) whose `size=` the kernel enforces: a scenario that fills it gets ENOSPC in its own files
and nobody else's. The runtime, in the first namespace, reaches those files through a descriptor of the
mount namespace's root that the zygote sends it (`/proc/self/fd/N/<dir>/...`: one descriptor for every
scenario). The namespaces outlive a zygote that dies:
the runtime keeps descriptors of them, and the next zygote joins them (`join_namespaces`).
"""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
_CLONE_NEWIPC, _CLONE_NEWNET = 0x08000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x20, 0x4000, 0x40000
_MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)
INODES_PER_MIB = 64  # files a scenario may create per MiB of quota (an episode is one file)


def _fail(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def enter_mount_namespace() -> None:
    """Enter a new mount namespace whose mounts propagate nowhere (single-threaded callers only)."""
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise _fail("unshare(CLONE_NEWNS)")
    if _libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise _fail("making mounts private")


def namespace_fds(user: bool) -> list[int]:
    """Descriptors of this process's mount namespace and, if `user` (it entered one), its user namespace first."""
    names = ("user", "mnt") if user else ("mnt",)
    return [os.open(f"/proc/self/ns/{name}", os.O_RDONLY | os.O_CLOEXEC) for name in names]


def join_namespaces(fds: list[int]) -> str:
    """Join the namespaces `namespace_fds` gave (a user namespace first, then the mount namespace), then enter
    new network and IPC namespaces. Returns what was entered, as `confine.enter_namespaces` does."""
    kinds = [CLONE_NEWUSER if os.readlink(f"/proc/self/fd/{fd}").startswith("user:") else CLONE_NEWNS for fd in fds]
    for fd, kind in zip(fds, kinds, strict=True):
        if _libc.setns(fd, kind) != 0:
            raise _fail("setns")
        os.close(fd)
    if _libc.unshare(_CLONE_NEWNET | _CLONE_NEWIPC) != 0:
        raise _fail("unshare(CLONE_NEWNET | CLONE_NEWIPC)")
    return "user, net, ipc" if CLONE_NEWUSER in kinds else "net, ipc"


def _size(mib: int) -> str:
    return f"size={mib}m,nr_inodes={max(1024, mib * INODES_PER_MIB)}"


def mount_quota(directory: str, mib: int) -> int:
    """Mount a tmpfs of `mib` MiB on `directory` (mode 0700, nosuid, nodev, noexec) and return an O_DIRECTORY
    descriptor of its root (the caller closes it)."""
    options = f"{_size(mib)},mode=0700".encode()
    if _libc.mount(b"awm-scenario", directory.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, options) != 0:
        raise _fail(f"mounting a {mib} MiB tmpfs on {directory}")
    return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def resize_quota(directory: str, mib: int) -> None:
    """Set the size of the tmpfs `mount_quota` put on `directory` to `mib` MiB (its files stay as they are)."""
    flags = _MS_REMOUNT | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    if _libc.mount(b"awm-scenario", directory.encode(), b"tmpfs", flags, _size(mib).encode()) != 0:
        raise _fail(f"resizing the tmpfs on {directory} to {mib} MiB")


def unmount(directory: str) -> None:
    """Detach the tmpfs on `directory`; its memory goes once nothing holds a file of it open."""
    if _libc.umount2(directory.encode(), _MNT_DETACH) != 0:
        raise _fail(f"unmounting {directory}")
