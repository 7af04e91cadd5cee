"""Plug-in lookup by name through entry points, with in-process registration for embedders."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from typing import Any, Literal, overload

from awm_runtime._errors import ConfigError
from awm_runtime._interfaces import Expert, NudgeRule, Policy, RewardShaper, Sink

Group = Literal["policies", "experts", "nudges", "rewards", "sinks"]

_SINGULAR = {"policies": "policy", "experts": "expert", "nudges": "nudge rule",
             "rewards": "reward shaper", "sinks": "sink"}
_local: dict[str, dict[str, Any]] = {}

# What each group's plug-in is: a factory called with the text after `NAME:` (and, for policies and experts, the
# BuildContext of _build.py, typed Any here so this module stays below _build).
PolicyFactory = Callable[[str, Any], Policy]
ExpertFactory = Callable[[str, Any], Expert]
NudgeFactory = Callable[[str], NudgeRule]
ShaperFactory = Callable[[str], RewardShaper]
SinkFactory = Callable[..., Sink]


def register(group: Group, name: str, obj: Any) -> None:
    """Register a plug-in in this process (tests, notebooks); entry points do it for packages."""
    _local.setdefault(group, {})[name] = obj


@cache
def _entry_points(group: str) -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=f"awm_runtime.{group}")}


def available(group: Group) -> list[str]:
    return sorted({*_entry_points(group), *_local.get(group, {})})


@overload
def resolve(group: Literal["policies"], name: str) -> PolicyFactory: ...
@overload
def resolve(group: Literal["experts"], name: str) -> ExpertFactory: ...
@overload
def resolve(group: Literal["nudges"], name: str) -> NudgeFactory: ...
@overload
def resolve(group: Literal["rewards"], name: str) -> ShaperFactory: ...
@overload
def resolve(group: Literal["sinks"], name: str) -> SinkFactory: ...
def resolve(group: Group, name: str) -> Any:
    """The object registered as `name` in `group`, or a ConfigError naming the choices."""
    if name in _local.get(group, {}):
        return _local[group][name]
    ep = _entry_points(group).get(name)
    if ep is None:
        choices = ", ".join(available(group)) or "none installed"
        raise ConfigError(f"unknown {_SINGULAR[group]} {name!r}; choose one of: {choices}")
    return ep.load()
