"""Verifiers: the sandbox that runs untrusted verifier code, and the SQL-mode LLM judge.

Generic machinery: nothing here knows the AWM dataset (worlds/_verify.py applies it).

Names load on first use (PEP 562): the verifier server runs `awm_runtime.verifiers._fork_server`, which
imports this package first, and every process it forks would otherwise carry the judge's imports
(pydantic and the package's types) and pay for their pages on each fork.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from awm_runtime.verifiers._judge import Criteria, Judge, classify_trajectory, parse_criteria, parse_judgement
    from awm_runtime.verifiers._restrict import ALLOWED_MODULES, find_function_name
    from awm_runtime.verifiers._sandbox import Kept, KeptStats, Sandbox, SandboxResult

_HOME = {
    "ALLOWED_MODULES": "awm_runtime.verifiers._restrict",
    "Criteria": "awm_runtime.verifiers._judge",
    "Judge": "awm_runtime.verifiers._judge",
    "Kept": "awm_runtime.verifiers._sandbox",
    "KeptStats": "awm_runtime.verifiers._sandbox",
    "Sandbox": "awm_runtime.verifiers._sandbox",
    "SandboxResult": "awm_runtime.verifiers._sandbox",
    "classify_trajectory": "awm_runtime.verifiers._judge",
    "find_function_name": "awm_runtime.verifiers._restrict",
    "parse_criteria": "awm_runtime.verifiers._judge",
    "parse_judgement": "awm_runtime.verifiers._judge",
}

__all__ = [
    "ALLOWED_MODULES",
    "Criteria",
    "Judge",
    "Kept",
    "KeptStats",
    "Sandbox",
    "SandboxResult",
    "classify_trajectory",
    "find_function_name",
    "parse_criteria",
    "parse_judgement",
]


def __getattr__(name: str) -> _typing.Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'awm_runtime.verifiers' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
