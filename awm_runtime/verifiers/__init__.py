"""Verifiers: the sandbox that runs untrusted verifier code, and the SQL-mode LLM judge.

Generic machinery: nothing here knows the AWM dataset (worlds/_verify.py applies it).
"""

from awm_runtime.verifiers._judge import Criteria, Judge, classify_trajectory, parse_criteria, parse_judgement
from awm_runtime.verifiers._restrict import ALLOWED_MODULES, find_function_name
from awm_runtime.verifiers._sandbox import Sandbox, SandboxResult

__all__ = [
    "ALLOWED_MODULES",
    "Criteria",
    "Judge",
    "Sandbox",
    "SandboxResult",
    "classify_trajectory",
    "find_function_name",
    "parse_criteria",
    "parse_judgement",
]
