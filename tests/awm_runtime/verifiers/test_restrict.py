"""`run_verifier`: the keyword arguments a verifier's function is given, and the fresh builtins each run gets."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from awm_runtime.verifiers._restrict import (
    _parameters,
    compile_verifier,
    module_proxies,
    restricted_builtins,
    run_verifier,
)

KWARGS = {"initial_db_path": "/i.db", "final_db_path": "/f.db", "final_answer": "done"}


def _plain(initial_db_path: str, final_answer: str = "") -> None: ...
def _keywords(final_db_path: str, **more: Any) -> None: ...
def _keyword_only(*, final_answer: str) -> None: ...
def _positional_only(final_db_path: str, /, final_answer: str = "") -> None: ...
def _star(*args: Any, final_db_path: str) -> None: ...


class _Callable:
    def __call__(self, final_answer: str) -> None: ...


def _wrapped(final_db_path: str) -> None: ...
def _wrapper(*args: Any, **kwargs: Any) -> None: ...


_wrapper.__wrapped__ = _wrapped  # type: ignore[attr-defined]  # as functools.wraps leaves it


@pytest.mark.parametrize("fn", [_plain, _keywords, _keyword_only, _positional_only, _star, _Callable(), _wrapper])
def test_parameters_are_what_inspect_signature_reads(fn: Any) -> None:
    """Read from a plain function's code object, or by `inspect.signature` for anything else: the same names
    (and whether it takes any keyword) either way, so the same arguments are passed."""
    params = inspect.signature(fn).parameters
    names, takes_all = _parameters(fn)
    assert set(names) == set(params)
    assert takes_all == any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


@pytest.mark.parametrize(("signature", "returns", "expected"), [
    ("initial_db_path, final_answer=''", "[initial_db_path, final_answer]", ["/i.db", "done"]),
    ("**kw", "sorted(kw)", sorted(KWARGS)),
    ("final_db_path, *, final_answer", "[final_db_path, final_answer]", ["/f.db", "done"]),
    ("x=1", "x", 1),
])
def test_a_verifier_is_given_the_arguments_it_accepts(signature: str, returns: str, expected: Any) -> None:
    code = compile_verifier(f"def verify_x({signature}):\n    return {returns}\n")
    assert run_verifier({"function": "verify_x", "kwargs": KWARGS}, module_proxies(), code) == expected


def test_each_run_gets_its_own_copy_of_the_builtins_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that runs many jobs builds the restricted builtins once and gives each run a copy: what one run
    does to its builtins (which verifier code cannot name: an escaped one could) never reaches the next."""
    import awm_runtime.verifiers._restrict as restrict

    proxies = module_proxies()
    base = restricted_builtins(proxies)
    pristine = dict(base)
    code = compile_verifier("def verify_x():\n    return len([1, 2])\n")
    seen: list[dict[str, Any]] = []

    def poisoning_exec(compiled: Any, namespace: dict[str, Any]) -> None:
        seen.append(namespace["__builtins__"])
        namespace["__builtins__"]["len"] = lambda _: 99
        exec(compiled, namespace)

    monkeypatch.setattr(restrict, "exec", poisoning_exec, raising=False)
    job: dict[str, Any] = {"function": "verify_x", "kwargs": {}}
    assert [run_verifier(job, proxies, code, base) for _ in range(2)] == [99, 99]
    monkeypatch.undo()
    assert seen[0] is not seen[1] and all(b is not base for b in seen)
    assert base == pristine
    assert run_verifier(job, proxies, code, base) == 2
