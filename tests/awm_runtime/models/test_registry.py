"""The alias registry: built-ins, awm.toml overlay, per-role routes, and one-line config errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from awm_runtime import ConfigError
from awm_runtime.models import BUILTIN_ALIASES, ModelConfig, apply_routes, load_registry
from awm_runtime.models._retry import DEFAULT_RETRIES, RetryPolicy


def test_builtin_aliases_match_the_brief() -> None:
    reg = load_registry()
    assert {"qwen3-4b", "arctic-awm-4b", "gpt-5.1", "gpt-4.1-mini", "o4-mini"} <= set(BUILTIN_ALIASES)
    assert reg.get("qwen3-4b").api_base == "http://localhost:8000/v1"
    assert reg.get("gpt-5.1").api_key_env == "OPENAI_API_KEY"


def test_toml_overlays_and_adds_aliases(tmp_path: Path) -> None:
    path = tmp_path / "awm.toml"
    path.write_text('[models.qwen3-4b]\napi_base = "http://gpu:8000/v1"\n'
                    '[models.mine]\nmodel = "openai/m"\nrpm = 60\nretries = { rate_limit = 20 }\n')
    reg = load_registry(path)
    assert reg.get("qwen3-4b").api_base == "http://gpu:8000/v1" and reg.get("qwen3-4b").protocol == "hermes"
    assert reg.get("mine").rpm == 60 and RetryPolicy.of(reg.get("mine")).retries["rate_limit"] == 20


@pytest.mark.parametrize(("body", "needle"), [
    ('[models.x]\nmodel = "openai/m"\nretries = { auth = 3 }\n', "not retryable"),
    ('[models.x]\nmodel = "openai/m"\nmax_concurency = 3\n', "max_concurency"),
    ('[models.x]\nmodel = "openai/m"\napi_key = "sk-live"\n', "api_key"),
    ('[models.x]\nmodel = "openai/m"\nretries = { server = -1 }\n', "retries.server must be a whole number >= 0"),
    ('[models.x]\nmodel = "  "\n', "[models.x] model: Value error, model must be a litellm model string"),
    ('[models.x]\nmodel = "openai/m"\ntransport = "http"\n', "transport = 'http' needs api_base"),
    ('[models.x]\nmodel = "openai/m"\ntito = true\n', 'tito = true needs protocol "hermes" or "awm"'),
    ('[models.x]\nmodel = "openai/m"\nlocal_server = { gguf = " " }\n',
     "[models.x] local_server.gguf: Value error, gguf must be a .gguf path or PACKAGE:FILE"),
    ('[models.x]\nmodel = "openai/m"\nrpm = 0\n', "[models.x] rpm: Input should be greater than or equal to 1"),
    ("models = 3\n", "[models] must be a table of aliases"),
    ("[models]\nx = 3\n", "[models.x] must be a table"),
    ("[models.x\n", "not valid TOML"),
])
def test_bad_alias_fields_are_one_line_errors(tmp_path: Path, body: str, needle: str) -> None:
    path = tmp_path / "awm.toml"
    path.write_text(body)
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    assert needle in str(info.value) and "\n" not in str(info.value) and "sk-live" not in str(info.value)


def test_a_config_file_that_is_not_there_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^config file '.*/awm\.toml' not found$"):
        load_registry(tmp_path / "awm.toml")


def test_command_line_and_manifest_aliases_are_checked_like_the_file() -> None:
    reg = load_registry()
    assert reg.with_overrides("gpt-4.1-mini", rpm=30, tpm=None).get("gpt-4.1-mini").rpm == 30
    with pytest.raises(ConfigError, match=r'^command line: \[models\."gpt-4\.1-mini"\] rpm: Input should be'):
        reg.with_overrides("gpt-4.1-mini", rpm=0)
    stored = reg.with_aliases({"old-policy": {"model": "openai/old", "max_concurrency": 3}})
    assert "old-policy" in stored and stored.get("old-policy").max_concurrency == 3 and "old-policy" not in reg
    with pytest.raises(ConfigError, match=r"^manifest\.json: \[models\.bad\] model: Field required$"):
        reg.with_aliases({"bad": {}})


def test_an_unknown_role_is_refused_and_no_route_changes_nothing() -> None:
    reg = load_registry()
    with pytest.raises(ConfigError, match=r"^unknown role 'critic'; roles are policy, expert, judge$"):
        reg.with_role_overrides(cast(Any, "critic"), api_base="http://x/v1")
    assert reg.with_role_overrides("policy", api_base=None) is reg


def test_unknown_alias_suggests_close_names() -> None:
    with pytest.raises(ConfigError, match=r"Did you mean gpt-4\.1-mini"):
        load_registry().get("gpt-4.1-mni")


def test_role_routes_change_only_that_role() -> None:
    reg = apply_routes(load_registry(), {"policy_base": "http://a:1/v1", "policy_key_env": "A_KEY",
                                         "expert_model": "openai/gpt-4.1"})
    policy, expert = reg.resolve("gpt-4.1-mini", "policy"), reg.resolve("gpt-4.1-mini", "expert")
    assert (policy.api_base, policy.api_key_env, policy.model) == ("http://a:1/v1", "A_KEY", "openai/gpt-4.1-mini")
    assert (expert.api_base, expert.model) == (None, "openai/gpt-4.1")
    assert reg.resolve("gpt-4.1-mini", "judge") == reg.get("gpt-4.1-mini")


def test_a_route_on_a_simulation_needs_a_model() -> None:
    reg = apply_routes(load_registry(), {"policy_base": "http://a:1/v1"})
    with pytest.raises(ConfigError, match="--policy-model"):
        reg.resolve("sim/novice", "policy")
    real = apply_routes(load_registry(), {"policy_base": "http://a:1/v1", "policy_model": "openai/m"})
    routed = real.resolve("sim/novice", "policy")
    assert not routed.simulated and routed.max_concurrency == ModelConfig.model_fields["max_concurrency"].default


def test_retry_policy_defaults_and_overrides() -> None:
    base = RetryPolicy.of(ModelConfig(model="openai/m"))
    assert dict(base.retries) == dict(DEFAULT_RETRIES) and base.deadline_s == 300
    flat = RetryPolicy.of(ModelConfig(model="openai/m", max_retries=1, retries={"rate_limit": 5}, timeout_s=400))
    assert flat.retries["server"] == 1 and flat.retries["rate_limit"] == 5 and flat.deadline_s == 800


@pytest.mark.parametrize("alias", ["mine", "my-policy", "gpt-5.2", "sim/novce", 'odd "quoted" name'])
def test_toml_table_headers_are_valid_toml_for_any_alias(alias: str) -> None:
    import tomllib

    from awm_runtime.models._registry import toml_table

    assert tomllib.loads(f"{toml_table(alias)}\nrpm = 1\n") == {"models": {alias: {"rpm": 1}}}
    assert tomllib.loads(f"{toml_table(alias, 'local_server')}\nport = 1\n") == {
        "models": {alias: {"local_server": {"port": 1}}}}
    assert toml_table("gpt-5.2") == '[models."gpt-5.2"]' and toml_table("mine") == "[models.mine]"


def test_an_unknown_alias_hint_is_a_valid_table() -> None:
    with pytest.raises(ConfigError, match=r'Define it under \[models\."gpt-5\.2"\] in awm\.toml'):
        load_registry().get("gpt-5.2")
