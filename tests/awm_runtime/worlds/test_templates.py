"""Pristine templates: hashed when first read, then trusted only while their file status is unchanged."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from awm_runtime._errors import WorldError
from awm_runtime.worlds import _templates
from awm_runtime.worlds._templates import check_template, clone_checked, read_template


def _template(tmp_path: Path, size: int = 200 << 10) -> tuple[Path, int, bytes]:
    path = tmp_path / "pristine.db"
    data = os.urandom(size)
    path.write_bytes(data)
    path.chmod(0o444)
    return path, size, hashlib.sha256(data).digest()


def test_a_matched_template_is_cloned_by_the_kernel_and_not_hashed_again(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path, size, digest = _template(tmp_path)
    clone_checked(path, tmp_path / "a.db", size, digest)  # first: read and hashed
    hashed: list[int] = []
    real = hashlib.sha256
    def counting(data: bytes = b"") -> Any:
        hashed.append(len(data))
        return real(data)

    monkeypatch.setattr(_templates.hashlib, "sha256", counting)
    clone_checked(path, tmp_path / "b.db", size, digest)
    check_template(path, size, digest)
    assert hashed == []
    assert (tmp_path / "b.db").read_bytes() == (tmp_path / "a.db").read_bytes() == path.read_bytes()
    assert oct((tmp_path / "b.db").stat().st_mode & 0o777) == oct(0o644)


def test_a_change_is_refused_even_with_its_size_and_times_put_back(tmp_path: Path) -> None:
    path, size, digest = _template(tmp_path)
    check_template(path, size, digest)
    st = path.stat()
    path.chmod(0o644)
    with open(path, "r+b") as fh:
        fh.seek(100)
        fh.write(b"tampered")
    path.chmod(0o444)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the change time cannot be put back
    with pytest.raises(WorldError, match="changed after it was made"):
        check_template(path, size, digest)
    with pytest.raises(WorldError, match="changed after it was made"):
        clone_checked(path, tmp_path / "c.db", size, digest)
    assert not (tmp_path / "c.db").exists()


def test_a_template_replaced_by_another_file_is_hashed_again(tmp_path: Path) -> None:
    path, size, digest = _template(tmp_path)
    read_template(path, size, digest)
    other = tmp_path / "other.db"
    other.write_bytes(os.urandom(size))
    os.replace(other, path)  # a new inode under the same name
    with pytest.raises(WorldError, match="changed after it was made"):
        clone_checked(path, tmp_path / "d.db", size, digest)


def test_a_full_disk_during_the_kernel_copy_is_the_quota_s_error(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path, size, digest = _template(tmp_path)
    check_template(path, size, digest)

    def full(*args: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_templates.os, "sendfile", full)
    with pytest.raises(WorldError, match="limited to 1 MiB"):
        clone_checked(path, tmp_path / "e.db", size, digest, full="limited to 1 MiB")
    assert not (tmp_path / "e.db").exists()


def test_a_template_that_cannot_be_read_removes_no_file_at_the_destination(tmp_path: Path) -> None:
    """A clone whose template cannot be opened fails before it writes: whatever is at `dst` stays."""
    path, size, digest = _template(tmp_path)
    path.unlink()
    os.symlink(tmp_path / "elsewhere.db", path)  # refused: templates are opened with O_NOFOLLOW
    dst = tmp_path / "taken.db"
    dst.write_bytes(b"another episode's DB")
    with pytest.raises(OSError):
        clone_checked(path, dst, size, digest)
    assert dst.read_bytes() == b"another episode's DB"


def test_a_first_clone_onto_a_taken_name_is_refused_and_leaves_it(tmp_path: Path) -> None:
    path, size, digest = _template(tmp_path)  # never matched yet: the clone reads, hashes and writes it
    dst = tmp_path / "taken.db"
    dst.write_bytes(b"another episode's DB")
    with pytest.raises(FileExistsError):
        clone_checked(path, dst, size, digest)
    assert dst.read_bytes() == b"another episode's DB"


def test_a_full_disk_while_writing_a_hashed_copy_is_no_room_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, size, digest = _template(tmp_path)

    def full(*args: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_templates.os, "write", full)
    with pytest.raises(WorldError, match=rf"^no room for an episode DB in {tmp_path}: No space left on device$"):
        clone_checked(path, tmp_path / "f.db", size, digest)
    assert not (tmp_path / "f.db").exists()
    monkeypatch.undo()
    clone_checked(path, tmp_path / "f.db", size, digest)  # room again: the same clone works
    assert (tmp_path / "f.db").read_bytes() == path.read_bytes()
