"""Run configuration: layering, arms, and one-line errors."""

from __future__ import annotations

import pytest

from awm_runtime import ConfigError, build_run_config
from awm_runtime._config import parse_arm


def test_precedence_cli_over_file_over_env_over_defaults() -> None:
    env = {"AWM_CONCURRENCY": "7", "AWM_POLICY": "gpt-5.1", "AWM_REPEATS": "3"}
    file = {"concurrency": 9, "policy": "qwen3-4b"}
    cfg = build_run_config({"concurrency": 11, "policy": None}, file, env)
    assert cfg.concurrency == 11 and cfg.policy == "qwen3-4b" and cfg.repeats == 3 and cfg.max_turns == 20


def test_expert_none_means_disabled_and_missing_means_default() -> None:
    assert build_run_config({}, env={}).expert == "sim/oracle"
    assert build_run_config({"expert": "none"}, env={}).expert == "none"


def test_bad_values_name_the_flag() -> None:
    with pytest.raises(ConfigError, match="--concurrency"):
        build_run_config({"concurrency": 0}, env={})
    with pytest.raises(ConfigError, match="--split"):
        build_run_config({"split": "dev"}, env={})


def test_arms_parse_and_override() -> None:
    cfg = build_run_config({"arms": ["solo:expert=none", "asked:expert=sim/oracle,max_turns=9,nudges=on_error"]},
                           env={})
    solo, asked = cfg.arm_list()
    assert cfg.for_arm(solo).expert == "none"
    assert cfg.for_arm(asked).max_turns == 9 and cfg.for_arm(asked).nudges == ("on_error",)


@pytest.mark.parametrize("bad", ["", "a b:x=1", "a:colour=red", "a:max_turns=zero", "a:policy"])
def test_bad_arms_are_config_errors(bad: str) -> None:
    with pytest.raises(ConfigError, match="--arm"):
        parse_arm(bad)


def test_duplicate_arm_names_rejected() -> None:
    with pytest.raises(ConfigError, match="unique"):
        build_run_config({"arms": ["a:expert=none", "a:expert=oracle"]}, env={})


def test_arms_may_switch_protocol_and_thinking() -> None:
    arm = parse_arm("meta:protocol=awm,enable_thinking=false")
    assert arm.protocol == "awm" and arm.enable_thinking is False
    config = build_run_config({"arms": ["meta:protocol=awm,enable_thinking=false"], "protocol": "hermes"})
    assert config.protocol == "hermes"
    assert config.for_arm(config.arm_list()[0]).protocol == "awm"


def test_ray_address_none_means_this_machine_and_ray_client_is_refused() -> None:
    assert build_run_config({}, env={}).ray is None
    assert build_run_config({"ray": " auto "}, env={}).ray == "auto"
    assert build_run_config({"ray": "none"}, {"ray": "10.0.0.1:6379"}, env={}).ray is None  # --ray none beats a file
    assert build_run_config({}, env={"AWM_RAY": "10.0.0.1:6379"}).ray == "10.0.0.1:6379"
    with pytest.raises(ConfigError, match=r"--ray: .*Ray Client"):
        build_run_config({"ray": "ray://head:10001"}, env={})


def test_a_bad_file_key_names_the_file_and_the_key_as_written() -> None:
    with pytest.raises(ConfigError, match=r"^awm\.toml: \[run\] concurency: unknown key \(did you mean "
                                          r"'concurrency'\?\)"):
        build_run_config({}, {"concurency": 8}, env={}, file_name="awm.toml")
    with pytest.raises(ConfigError, match=r"^awm\.toml: \[run\] max-turns: unknown key \(did you mean 'max_turns'"):
        build_run_config({}, {"max-turns": 8}, env={}, file_name="awm.toml")
    with pytest.raises(ConfigError, match=r"^awm\.toml: \[run\] repeats: "):
        build_run_config({}, {"repeats": 0}, env={}, file_name="awm.toml")
    with pytest.raises(ConfigError, match=r"^--repeats: "):  # the flag won: it is named as a flag
        build_run_config({"repeats": 0}, {"repeats": 2}, env={}, file_name="awm.toml")
    with pytest.raises(ConfigError, match=r"^--repeats: "):  # a key the manifest gave, not the file
        build_run_config({}, {"repeats": 0}, env={}, file_name="awm.toml", file_keys=())
    with pytest.raises(ConfigError, match=r"^AWM_REPEATS: "):
        build_run_config({}, {}, env={"AWM_REPEATS": "0"}, file_name="awm.toml")


def test_an_arm_sets_the_policy_s_reasoning_effort_or_thinking_budget() -> None:
    from awm_runtime._config import parse_arm

    assert parse_arm("high:reasoning_effort=high").reasoning_effort == "high"
    assert parse_arm("big:thinking_budget=8000").thinking_budget == 8000
    with pytest.raises(ConfigError, match="reasoning_effort"):
        parse_arm("x:reasoning_effort=extreme")
    with pytest.raises(ConfigError, match="thinking_budget"):
        parse_arm("x:thinking_budget=100")  # Anthropic's minimum is 1,024
