"""Help that teaches and hints that work as written: grouped --help with the --arm keys, valid TOML in alias
hints, config errors that name the file and key, one install hint, and a README whose command lines parse."""

from __future__ import annotations

import importlib
import re
import shlex
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from awm_runtime._config import ARM_KEYS
from tests.e2e.conftest import awm_subprocess

ROOT = Path(__file__).resolve().parents[2]
GROUPS = ("run", "models", "experts and nudges", "worlds", "A/B and stopping", "output", "scale")


def test_awm_run_help_is_grouped_and_lists_the_arm_keys() -> None:
    proc = awm_subprocess("run", "--help")  # the program's own --help, in its own process
    assert proc.returncode == 0, proc.stderr
    headings = [line[:-1] for line in proc.stdout.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert [h for h in headings if h in GROUPS] == list(GROUPS)
    assert "options" in headings  # only -h is left outside the groups
    options = proc.stdout.split("options:\n", 1)[1].split("\n\n", 1)[0]
    assert options.strip().startswith("-h, --help") and "--" not in options.replace("--help", "")
    flat = " ".join(proc.stdout.split())
    assert f"KEY one of {', '.join(ARM_KEYS)}" in flat  # from the code that parses --arm
    assert "--arm solo:expert=none --arm asked:expert=sim/oracle" in flat


def test_the_arm_example_in_the_help_parses() -> None:
    from awm_runtime._config import build_run_config
    from awm_runtime.cli._run_args import ARM_EXAMPLE, parser

    args = parser().parse_args(shlex.split(ARM_EXAMPLE))
    config = build_run_config({"arms": args.arms})
    assert [a.name for a in config.arm_list()] == ["solo", "asked"]


@pytest.mark.parametrize("alias", ["gpt-5.2", "sim/novce"])
def test_the_unknown_alias_hint_is_valid_toml(alias: str, tmp_path: Path, awm: Callable[..., Any]) -> None:
    proc = awm("run", "--policy", alias, "--out", str(tmp_path / "run"), "--quiet")
    assert proc.returncode == 2
    header = re.search(r"Define it under (\[models\.[^\]]*\]) in awm\.toml", proc.stderr)
    assert header is not None, proc.stderr
    table = tomllib.loads(f'{header.group(1)}\nmodel = "openai/x"\n')
    assert table == {"models": {alias: {"model": "openai/x"}}}  # one alias, not a nested table


def test_a_misspelled_run_key_names_the_file_and_the_key_as_written(tmp_path: Path,
                                                                  awm: Callable[..., Any]) -> None:
    config = tmp_path / "awm.toml"
    config.write_text("[run]\nconcurency = 8\n")
    proc = awm("run", "--config", str(config), "--out", str(tmp_path / "run"), "--quiet")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"awm-run: error: {config}: [run] concurency: unknown key (did you mean "
                                   "'concurrency'?); [run] takes awm-run's flags, with _ for -, e.g. concurrency = 64")
    config.write_text("[run]\nrepeats = \"many\"\n")
    proc = awm("run", "--config", str(config), "--out", str(tmp_path / "run"), "--quiet")
    assert proc.returncode == 2 and f"awm-run: error: {config}: [run] repeats: " in proc.stderr
    proc = awm("run", "--repeats", "0", "--out", str(tmp_path / "run"), "--quiet")  # a flag is named as a flag
    assert proc.returncode == 2 and "--repeats" in proc.stderr


def test_one_install_hint_for_the_report_extra_everywhere() -> None:
    from awm_runtime._extras import REPORT_INSTALL
    from awm_runtime.report._html import MATPLOTLIB_MISSING

    assert MATPLOTLIB_MISSING.endswith(REPORT_INSTALL)
    for doc in ("README.md", "docs/report.md"):
        text = (ROOT / doc).read_text()
        assert f"`{REPORT_INSTALL}`" in text, doc
        assert '".[report]"' not in text and "matplotlib>=" not in text, doc
    run_source = (ROOT / "awm_runtime/cli/_run.py").read_text()
    assert "REPORT_INSTALL" in run_source and "pip install" not in run_source


def test_docs_link_only_to_files_in_the_repo() -> None:
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text()
        assert "shared/" not in text, doc
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (doc.parent / target).exists(), (doc, target)


def test_bench_help_names_no_issue(awm: Callable[..., Any]) -> None:
    from awm_runtime.cli._bench import parser

    p = parser()
    texts = [p.format_help()]
    sub = next(a for a in p._actions if a.dest == "suite")
    texts += [sp.format_help() for sp in sub.choices.values()]  # type: ignore[union-attr]
    for text in texts:
        assert not re.search(r"\bissues? ?#?\d+|#\d+", text), text


PARSERS = {"awm-run": "awm_runtime.cli._run_args", "awm-report": "awm_runtime.cli._report",
           "awm-fork": "awm_runtime.cli._fork", "awm-export": "awm_runtime.cli._export",
           "awm-serve": "awm_runtime.cli._serve", "awm-worlds": "awm_runtime.cli._worlds",
           "awm-view": "awm_runtime.cli._view", "awm-bench": "awm_runtime.cli._bench"}


def readme_commands() -> list[str]:
    """Every awm-* command line of the README: in its shell blocks, and the first column of its command table
    (where `a\\|b` offers choices: the first is taken)."""
    text = (ROOT / "README.md").read_text()
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            for part in line.split("#", 1)[0].split("&&"):
                if part.strip().startswith("awm-"):
                    lines.append(part.strip())
    for cell in re.findall(r"^\| `(awm-[^`]*)` \|", text, re.M):
        lines.append(re.sub(r"\\\|[^ ]*", "", re.sub(r"\[[^\]]*\]", "", cell)).strip())
    return lines


def test_the_readme_has_command_lines_to_check() -> None:
    commands = readme_commands()
    assert {c.split()[0] for c in commands} == set(PARSERS)
    assert any(c.startswith("awm-fork ") and "--out" in c for c in commands)


@pytest.mark.parametrize("line", readme_commands())
def test_every_readme_command_line_parses(line: str) -> None:
    name, *argv = shlex.split(line)
    parser = importlib.import_module(PARSERS[name]).parser()
    try:
        parser.parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"README: {line!r} does not parse (exit {exc.code})") from None


def test_the_readme_keeps_no_measurement_history() -> None:
    text = (ROOT / "README.md").read_text()
    assert "previous README" not in text and "14 min" not in text
    assert "14 min" in (ROOT / "docs/changes.md").read_text()
