"""Pristine templates: written once, read back only when their SHA-256 still matches, cloned for each episode.

Hashing a template on every clone and every verification cost ~0.3 ms each (a 200 KiB template read and
hashed on the event loop, twice an episode). A template whose hash matched is remembered with its file
status (inode, size, and the modification and change times in nanoseconds). Any change to its contents or
mode sets the change time to "now", which no process can set back (short of root turning the clock back),
so while the status is the same the contents are the same, and the hash is not computed again. The status
is read from the descriptor the bytes are read from, before and after, so a change during the copy is seen.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from pathlib import Path

from awm_runtime._errors import WorldError

INLINE_COPY_BYTES = 4 << 20  # below this a copy takes less time on the event loop than a hop to a thread

_Status = tuple[int, int, int, int, int]
_matched: dict[str, _Status] = {}  # template path -> its status when its bytes last hashed to its digest


def _status(st: os.stat_result) -> _Status:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _changed(path: Path) -> WorldError:
    _matched.pop(str(path), None)
    return WorldError(f"the pristine template {path} changed after it was made (its SHA-256 no longer matches); "
                      "refusing to use it")


def _read(fd: int, size: int) -> bytes:
    data = os.pread(fd, size + 1, 0)
    while len(data) <= size and (more := os.pread(fd, size + 1 - len(data), len(data))):
        data += more
    return data


def read_template(path: Path, size: int, digest: bytes | None = None) -> bytes:
    """A template's bytes, refused (WorldError) unless they hash to `digest`."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        before = _status(os.fstat(fd))
        data = _read(fd, size)
        after = _status(os.fstat(fd))
    finally:
        os.close(fd)
    if digest is None:
        return data
    if len(data) != size or hashlib.sha256(data).digest() != digest:
        raise _changed(path)
    if before == after:
        _matched[str(path)] = after
    return data


def check_template(path: Path, size: int, digest: bytes) -> None:
    """Refuse (WorldError) a template that no longer hashes to `digest`; hashed again only if its status moved."""
    if _matched.get(str(path)) != _status(os.stat(path, follow_symlinks=False)):
        read_template(path, size, digest)


def write_new(path: Path | str, data: bytes, mode: int, flags: int = 0) -> None:
    """Write `data` to a file that must not exist yet (O_EXCL), with `mode`."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flags, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _copy_unchanged(src: Path, dst: Path | str, size: int) -> bool:
    """Copy `src` to the new file `dst` in the kernel if its status is the one its hash last matched with, before
    and after the copy. False (and no `dst`) if it is not: the caller reads and hashes it."""
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if _matched.get(str(src)) != _status(os.fstat(fd)):
            return False
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            done = 0
            while done < size and (n := os.sendfile(out, fd, done, size - done)):
                done += n
        except BaseException:
            os.close(out)
            os.unlink(dst)
            raise
        os.close(out)
        if done != size or _matched.get(str(src)) != _status(os.fstat(fd)):
            os.unlink(dst)
            return False
        return True
    finally:
        os.close(fd)


def clone_checked(src: Path, dst: Path | str, size: int, digest: bytes, full: str = "") -> None:
    """Copy the pristine template to `dst` after checking its hash: the bytes checked are the bytes written.
    No room for it is a WorldError: `full`, when given, says why."""
    try:
        if _copy_unchanged(src, dst, size):  # removes its own `dst` when the copy fails
            return
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise _no_room(exc, dst, full) from None
        raise
    data = read_template(src, size, digest)  # outside the `try`: a template that cannot be read removes no `dst`
    try:
        write_new(dst, data, 0o644)
    except OSError as exc:
        if isinstance(exc, FileExistsError):
            raise
        with contextlib.suppress(OSError):
            os.unlink(dst)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise _no_room(exc, dst, full) from None
        raise


def _no_room(exc: OSError, dst: Path | str, full: str) -> WorldError:
    return WorldError(full or f"no room for an episode DB in {os.path.dirname(dst)}: {exc.strerror}")
