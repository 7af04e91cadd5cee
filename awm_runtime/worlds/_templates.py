"""Pristine templates: written once, read back only when their SHA-256 still matches, cloned for each episode."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from pathlib import Path

from awm_runtime._errors import WorldError


def read_template(path: Path, size: int, digest: bytes | None = None) -> bytes:
    """A template's bytes, refused (WorldError) unless they hash to `digest`."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        data = os.pread(fd, size + 1, 0)
        while len(data) <= size and (more := os.pread(fd, size + 1 - len(data), len(data))):
            data += more
    finally:
        os.close(fd)
    if digest is not None and (len(data) != size or hashlib.sha256(data).digest() != digest):
        raise WorldError(f"the pristine template {path} changed after it was made (its SHA-256 no longer "
                         "matches); refusing to use it")
    return data


def write_new(path: Path | str, data: bytes, mode: int, flags: int = 0) -> None:
    """Write `data` to a file that must not exist yet (O_EXCL), with `mode`."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flags, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def clone_checked(src: Path, dst: Path | str, size: int, digest: bytes, full: str = "") -> None:
    """Copy the pristine template to `dst` after checking its hash: the bytes checked are the bytes written.
    No room for it is a WorldError: `full`, when given, says why."""
    data = read_template(src, size, digest)
    try:
        write_new(dst, data, 0o644)
    except OSError as exc:
        if isinstance(exc, FileExistsError):
            raise
        with contextlib.suppress(OSError):
            os.unlink(dst)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise WorldError(full or f"no room for an episode DB in {os.path.dirname(dst)}: {exc.strerror}") from None
        raise
