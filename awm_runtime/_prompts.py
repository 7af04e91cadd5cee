"""Prompt templates: files in `awm_runtime.prompts` (the repo's prompts/ folder), rendered with `string.Template`.

A folder of overrides (`--prompts DIR`, or `prompts = "DIR"` under `[run]` in awm.toml) replaces any packaged
template by a file of the same name, using the same variables or fewer. It is named by the environment
variable AWM_PROMPTS_DIR, so the run's worker processes read the same files.
"""

from __future__ import annotations

import os
from functools import cache
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import Any

from awm_runtime._errors import ConfigError

PROMPTS_ENV = "AWM_PROMPTS_DIR"


def _packaged(name: str) -> str:
    return files("awm_runtime.prompts").joinpath(name).read_text(encoding="utf-8")


@cache
def _template(name: str, override_dir: str) -> Template:
    override = Path(override_dir) / name if override_dir else None
    if override is not None and override.is_file():
        return Template(override.read_text(encoding="utf-8"))
    return Template(_packaged(name))


def template(name: str) -> Template:
    """The template `name`: the override folder's file when it has one, else the packaged file."""
    return _template(name, os.environ.get(PROMPTS_ENV, ""))


def render(name: str, **values: Any) -> str:
    """Render `prompts/<name>`; a missing placeholder raises KeyError (tests render every file)."""
    return template(name).substitute(**values).strip()


def names() -> list[str]:
    """The packaged templates' file names."""
    return sorted(p.name for p in files("awm_runtime.prompts").iterdir() if p.name.endswith(".md"))


def _variables(text: str) -> set[str]:
    found: set[str] = set()
    for match in Template.pattern.finditer(text):
        name = match.group("named") or match.group("braced")
        if name:
            found.add(name)
        elif match.group("invalid") is not None:
            raise ValueError(f"a stray '$' at character {match.start('invalid')} (write $$ for a dollar sign)")
    return found


def use_prompts(folder: Path | None) -> None:
    """Make `folder`'s templates replace the packaged ones for this process and its children (None: packaged
    only). ConfigError (one line) for a missing folder, an unknown file name or a variable the template lacks."""
    if folder is None:
        os.environ.pop(PROMPTS_ENV, None)
        return
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"--prompts {folder}: not a directory (a folder of template files named like "
                          f"awm_runtime/prompts/*.md)")
    known = set(names())
    for path in sorted(folder.glob("*.md")):
        if path.name not in known:
            raise ConfigError(f"--prompts {folder}: {path.name} is not a prompt template; the names are: "
                              f"{', '.join(sorted(known))}")
        try:
            extra = _variables(path.read_text(encoding="utf-8")) - _variables(_packaged(path.name))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"--prompts {path}: {exc}") from None
        if extra:
            allowed = ", ".join(f"${v}" for v in sorted(_variables(_packaged(path.name)))) or "none"
            raise ConfigError(f"--prompts {path}: unknown variable {', '.join(f'${v}' for v in sorted(extra))}; "
                              f"this template has: {allowed}")
    os.environ[PROMPTS_ENV] = str(folder.resolve())
