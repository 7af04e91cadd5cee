"""`--worlds awm-1k[@REV]`: the dataset comes from the Hugging Face cache when it is there, and a missing
snapshot is one actionable error, offline or when the Hub cannot be reached (a closed loopback port)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from huggingface_hub import constants

from awm_runtime import ConfigError
from awm_runtime.worlds import is_remote, resolve_worlds_dir, snapshot_commit
from awm_runtime.worlds._hub import REPO_ID, fetch_awm_1k, is_hub_spec

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return tmp_path / "hub"


def cache_snapshot(cache: Path, ref: str) -> Path:
    storage = cache / f"datasets--{REPO_ID.replace('/', '--')}"
    (storage / "refs").mkdir(parents=True, exist_ok=True)
    (storage / "refs" / ref).write_text(COMMIT)
    snapshot = storage / "snapshots" / COMMIT
    snapshot.mkdir(parents=True, exist_ok=True)
    (snapshot / "README.md").write_text("AgentWorldModel-1K\n")
    return snapshot


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("spec", "hub"), [("awm-1k", True), ("awm-1k@v1", True), ("awm-1k-mine", False),
                                           ("builtin", False), ("./awm-1k", False)])
def test_hub_specs(spec: str, hub: bool) -> None:
    assert is_hub_spec(spec) is hub and not is_remote(spec)


def test_a_cached_snapshot_is_used_without_a_request_and_names_its_commit(hub_cache: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{closed_port()}")  # any request would fail
    snapshot = cache_snapshot(hub_cache, "v1")
    assert fetch_awm_1k("awm-1k@v1").resolve() == snapshot.resolve()
    assert snapshot_commit(fetch_awm_1k("awm-1k@v1")) == COMMIT
    cache_snapshot(hub_cache, "main")
    assert resolve_worlds_dir("awm-1k").resolve() == snapshot.resolve()


@pytest.mark.parametrize("path", ["/data/awm", "snapshots/abc", "/x/models--a--b/snapshots/abc"])
def test_a_path_outside_the_hub_cache_has_no_commit(path: str) -> None:
    assert snapshot_commit(Path(path)) is None


def test_offline_without_the_snapshot_says_how_to_get_it(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConfigError, match=r"^--worlds awm-1k@v2: Snowflake/AgentWorldModel-1K \(v2\) is not in the "
                                          r"Hugging Face cache \(.*\) and HF_HUB_OFFLINE is set: run once online"):
        fetch_awm_1k("awm-1k@v2")


def test_a_hub_that_cannot_be_reached_is_one_line(hub_cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    with pytest.raises(ConfigError) as err:
        fetch_awm_1k("awm-1k")
    said = str(err.value)
    assert said.startswith(f"--worlds awm-1k: cannot download {REPO_ID} (main) from {endpoint}: ") and "\n" not in said
    assert f"downloading {REPO_ID} (main) from {endpoint}" in capsys.readouterr().err
