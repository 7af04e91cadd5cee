"""awm-serve's sessions directory: named at start by default, chosen, or off; never somewhere it cannot write."""

from __future__ import annotations

from pathlib import Path

import pytest

from awm_runtime import ConfigError
from awm_runtime.cli._serve import SESSIONS_ROOT, parser, sessions_dir


def test_by_default_a_fresh_folder_under_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first, second = (sessions_dir(parser().parse_args([])) for _ in range(2))
    assert first is not None and second is not None and first != second
    assert first.parent == tmp_path / SESSIONS_ROOT and not first.exists()  # made by the first done, not now


def test_chosen_off_and_stdio(tmp_path: Path) -> None:
    assert sessions_dir(parser().parse_args(["--sessions-dir", str(tmp_path / "s")])) == tmp_path / "s"
    assert sessions_dir(parser().parse_args(["--no-trajectories"])) is None
    assert sessions_dir(parser().parse_args(["--stdio", "shop"])) is None  # an MCP episode has no done
    with pytest.raises(SystemExit):
        parser().parse_args(["--sessions-dir", "x", "--no-trajectories"])


def test_a_file_in_the_way_is_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"cannot write under .*file; choose another --sessions-dir"):
        sessions_dir(parser().parse_args(["--sessions-dir", str(tmp_path / "file" / "s")]))
