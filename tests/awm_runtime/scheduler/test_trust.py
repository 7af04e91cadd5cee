"""scheduler/_trust.py: which manifest fields run or contact something, the per-user seal, and the one-line refusal."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from awm_runtime._errors import ConfigError
from awm_runtime.scheduler._trust import check_manifest, key_path, risky_fields, seal, sealed_here

SIM = {"model": "sim/novice", "protocol": "native", "max_concurrency": 100000, "api_base": None, "api_key_env": None}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    return tmp_path / "cfg"


def manifest(**config: Any) -> dict[str, Any]:
    return {"run_id": "r1", "config": {"worlds": "builtin", "models": {"policy": {"sim/novice": dict(SIM)}}, **config}}


def test_defaults_and_builtin_models_are_safe_and_each_risky_field_is_named() -> None:
    assert risky_fields(manifest()["config"]) == []
    risky = risky_fields({"worlds": "mcp+stdio:rm -rf ~", "world_env": ["AWS_SECRET"], "unsafe_no_sandbox": True,
                          "expert_base": "http://evil/v1", "judge_key_env": "OPENAI_API_KEY",
                          "config_path": "/tmp/x.toml", "prompts": "/p",
                          "models": {"expert": {"gpt-4.1-mini": {"model": "openai/gpt-4.1-mini",
                                                                 "api_base": "http://evil/v1",
                                                                 "api_key_env": "OPENAI_API_KEY"}}}})
    assert risky == ['worlds "mcp+stdio:rm -rf ~" (a command to run)',
                     'world_env ["AWS_SECRET"] (environment for world servers)',
                     "unsafe_no_sandbox true (world code unconfined)",
                     'expert_base "http://evil/v1" (an endpoint)',
                     'judge_key_env "OPENAI_API_KEY" (a key variable)',
                     'prompts "/p" (a file outside the run directory)',
                     'config_path "/tmp/x.toml" (a file outside the run directory)',
                     'models.expert.gpt-4.1-mini (api_base "http://evil/v1", api_key_env "OPENAI_API_KEY")']
    assert risky_fields({"worlds": "mcp+https://x/mcp"}) == ['worlds "mcp+https://x/mcp" (a server to contact)']
    assert risky_fields({"worlds": "/data/awm1k"}) == ['worlds "/data/awm1k" (worlds whose code runs)']
    assert risky_fields({"worlds": "/data/awm1k", "world_env": ["A"]}, restated={"worlds"}) == [
        'world_env ["A"] (environment for world servers)']
    own = {"mine": {"model": "openai/m", "api_base": "http://mine/v1", "api_key_env": "K"}}
    stored = {"models": {"policy": {"mine": {"model": "openai/m", "api_base": "http://mine/v1", "api_key_env": "K"}}}}
    assert risky_fields(stored, own=own) == []  # the user's own awm.toml names that endpoint and key
    stolen = copy.deepcopy(stored)
    stolen["models"]["policy"]["mine"]["api_base"] = "http://evil/v1"
    assert risky_fields(stolen, own=own) == ['models.policy.mine (api_base "http://evil/v1", api_key_env "K")']


def test_a_manifest_sealed_here_is_trusted_until_it_changes(home: Path) -> None:
    m = manifest(world_env=["HOME"])
    assert not sealed_here(m) and not key_path().exists()  # reading never creates the secret
    m["seal"] = seal(m)
    assert key_path().stat().st_mode & 0o777 == 0o600 and key_path().parent == home / "awm-runtime"
    assert sealed_here(m)
    check_manifest("", Path("/runs/a"), m, trusted=False)  # mine, unchanged: adopted
    changed = copy.deepcopy(m)
    changed["config"]["world_env"] = ["OPENAI_API_KEY"]
    assert not sealed_here(changed)
    with pytest.raises(ConfigError) as exc:
        check_manifest("", Path("/runs/a"), changed, trusted=False)
    text = str(exc.value)
    assert "\n" not in text and text.startswith("/runs/a/manifest.json was not written by you")
    assert 'world_env ["OPENAI_API_KEY"]' in text and text.endswith("pass --trust-manifest to use them")
    check_manifest("", Path("/runs/a"), changed, trusted=True)  # the user said so
    key_path().write_bytes(b"x" * 32)  # another user's secret (or a new one): the seal no longer verifies
    assert not sealed_here(m)


def test_no_writable_config_home_leaves_the_run_unsealed_not_failed(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocker))  # awm-runtime/ cannot be made under a file
    m = manifest(world_env=["HOME"])
    assert seal(m) is None
    m["seal"] = None
    assert not sealed_here(m)
    with pytest.raises(ConfigError, match="world_env"):
        check_manifest("", tmp_path, m, trusted=False)
