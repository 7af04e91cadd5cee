"""The Python-level second layer around verifier code (the OS boundary is `isolation._confine`).

It stops the ordinary routes before they reach the OS boundary: the code is checked before it
runs (no private or frame attributes, in attribute access, match patterns or bindings; no
`super`; allowlisted imports only), `str.format`/`format_map` refuse fields that walk attributes
or indexes, builtins lack open/exec/eval/compile, imports yield trimmed copies of allowlisted
modules, and `sqlite3.connect` opens files read-only with no ATTACH.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import os
import sqlite3
import string
import types
from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import quote, unquote, urlsplit

ALLOWED_MODULES = (
    "calendar", "collections", "collections.abc", "copy", "datetime", "decimal", "difflib", "fractions",
    "functools", "hashlib", "itertools", "json", "math", "random", "re", "sqlite3", "statistics", "string",
    "textwrap", "time", "typing", "unicodedata", "zoneinfo",
)
# Imported lazily by C functions of allowed modules; verifier code cannot name them (check_source).
_INTERNAL = frozenset({"_strptime"})
# Public names that evaluate strings or walk attributes on the caller's behalf.
_HIDDEN = {
    "typing": {"get_type_hints", "ForwardRef"},
    "functools": {"singledispatch", "singledispatchmethod"},
    "string": {"Formatter"},
    "sqlite3": {"enable_callback_tracebacks"},
}
# Attributes that lead from an ordinary object to frames, code or globals.
BLOCKED_ATTRS = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "gi_suspended", "cr_frame", "cr_code", "cr_await",
    "cr_origin", "cr_running", "cr_suspended", "ag_frame", "ag_code", "ag_await", "ag_running",
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "f_lasti", "f_lineno",
    "tb_frame", "tb_next", "tb_lasti", "tb_lineno", "co_code", "co_consts", "co_names", "co_varnames",
    "mro", "with_traceback",
})
# Names a verifier may not bind or use: `super` reaches a base class's methods (sqlite3.Connection's
# set_authorizer, around ReadOnlyConnection's refusal).
BLOCKED_NAMES = frozenset({"super"})
# str.format and format_map walk attributes and indexes named in the format string ('{0.__globals__}'):
# a verifier's `.format` goes through `_safe_format`, which refuses such fields.
FORMAT_ATTRS = frozenset({"format", "format_map"})
_FORMAT_HOOK = "__awm_format__"  # a dunder name: verifier code cannot name it, the rewritten tree can
_REMOVED_BUILTINS = ("open", "exec", "eval", "compile", "__import__", "input", "breakpoint", "help", "exit",
                     "quit", "globals", "locals", "vars", "memoryview", "getattr", "setattr", "delattr", "hasattr",
                     "super")
_REMOVED = frozenset(_REMOVED_BUILTINS)  # the lookup each verification's fresh builtins make


class Refused(Exception):
    """The verifier tried something a verifier may not do."""


def _allowed_name(name: str) -> bool:
    return not name.startswith("_") and name not in BLOCKED_ATTRS


def _check_binding(name: str | None, line: Any) -> None:
    if name is not None and ((name.startswith("__") and name != "__name__") or name in BLOCKED_NAMES):
        raise Refused(f"line {line}: name {name!r} is not allowed in a verifier")


def check_source(code: str) -> ast.Module:
    """Parse the verifier and refuse private/frame attributes (in expressions and match patterns),
    dunder and blocked names (used or bound), and unlisted imports; `.format` is routed through
    `_safe_format`."""
    tree = ast.parse(code, "<verifier>")
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Attribute) and not _allowed_name(node.attr):
            raise Refused(f"line {line}: attribute {node.attr!r} is not allowed in a verifier")
        if isinstance(node, ast.Name):
            _check_binding(node.id, line)
        elif isinstance(node, ast.MatchClass):  # `case C(attr=p)` reads C's attribute `attr` like getattr
            for attr in node.kwd_attrs:
                if not _allowed_name(attr) or attr in FORMAT_ATTRS:
                    raise Refused(f"line {line}: match pattern attribute {attr!r} is not allowed in a verifier")
        elif isinstance(node, ast.MatchAs | ast.MatchStar):
            _check_binding(node.name, line)
        elif isinstance(node, ast.MatchMapping):
            _check_binding(node.rest, line)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                _check_binding(name, line)
        elif isinstance(node, ast.alias):
            _check_binding(node.asname, line)
        elif isinstance(node, ast.ExceptHandler):
            _check_binding(node.name, line)
        if isinstance(node, ast.Import):
            for alias in node.names:
                _check_module(alias.name, line)
        elif isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                raise Refused(f"line {line}: relative imports are not allowed in a verifier")
            _check_module(node.module, line)
            for alias in node.names:
                if not _allowed_name(alias.name) or alias.name == "*":
                    raise Refused(f"line {line}: importing {alias.name!r} is not allowed in a verifier")
    return ast.fix_missing_locations(_FormatRewriter().visit(tree))


class _FormatRewriter(ast.NodeTransformer):
    """`x.format` / `x.format_map` (read) -> `__awm_format__(x, "format")`."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr in FORMAT_ATTRS and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Call(ast.Name(_FORMAT_HOOK, ast.Load()),
                                              [node.value, ast.Constant(node.attr)], []), node)
        return node


def _check_format_string(template: str) -> None:
    for _, field, spec, _ in string.Formatter().parse(template):
        if field is not None and ("." in field or "[" in field):
            raise Refused(f"format field {{{field}}} walks attributes or indexes, which a verifier may not do")
        if spec:
            _check_format_string(spec)


def _safe_format(template: str, method: str, /, *args: Any, **kwargs: Any) -> str:
    template = str.__str__(template)  # a str subclass's own parse or format would not be the one checked
    _check_format_string(template)
    return getattr(str, method)(template, *args, **kwargs)  # type: ignore[no-any-return]


def _format_attr(obj: Any, name: str) -> Any:
    """What `obj.format` is in a verifier: for strings (and `str` itself), a checked format."""
    if isinstance(obj, str):
        return functools.partial(_safe_format, obj, name)
    if obj is str:
        return lambda template, *args, **kwargs: _safe_format(str.__str__(template), name, *args, **kwargs)
    # Anything else with a .format may pass its own string to str.format unchecked (collections.UserString).
    raise Refused(f".{name} is allowed only on strings in a verifier")


def _check_module(name: str, line: Any) -> None:
    if name not in ALLOWED_MODULES:
        raise Refused(f"line {line}: import of {name!r} is not allowed in a verifier "
                      f"(allowed: {', '.join(ALLOWED_MODULES)})")


def _deny_attach(action: int, *_args: Any) -> int:
    return sqlite3.SQLITE_DENY if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH) else sqlite3.SQLITE_OK


def _read_only_target(database: Any, uri: bool) -> str:
    """`file:PATH?mode=ro` for any file; `:memory:` stays as it is (private and writable)."""
    target = os.fsdecode(database)
    if target in ("", ":memory:") or (uri and target.startswith("file::memory:")):
        return ":memory:"
    path = unquote(urlsplit(target).path) if uri and target.startswith("file:") else target
    return f"file:{quote(path)}?mode=ro"


class ReadOnlyConnection(sqlite3.Connection):
    """What `sqlite3.connect` and `sqlite3.Connection` are in a verifier: files open read-only,
    ATTACH is refused, and the authorizer and extension loading cannot be changed."""

    def __init__(self, database: Any, timeout: float = 5.0, detect_types: int = 0, isolation_level: Any = "",
                 check_same_thread: bool = True, factory: Any = None, cached_statements: int = 128,
                 uri: bool = False, **_ignored: Any) -> None:
        target = _read_only_target(database, uri)
        super().__init__(target, timeout, detect_types, isolation_level, check_same_thread,
                         sqlite3.Connection, cached_statements, uri=target != ":memory:")
        super().set_authorizer(_deny_attach)
        # A second, separate refusal of ATTACH (and VACUUM INTO, which attaches): no database slots at all.
        super().setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)

    def enable_load_extension(self, enabled: bool, /) -> None:
        raise Refused("loading SQLite extensions is not allowed in a verifier")

    def load_extension(self, *args: Any, **kwargs: Any) -> None:
        raise Refused("loading SQLite extensions is not allowed in a verifier")

    def set_authorizer(self, *args: Any, **kwargs: Any) -> None:
        raise Refused("changing the SQLite authorizer is not allowed in a verifier")

    def setlimit(self, category: int, limit: int, /) -> int:
        if category == sqlite3.SQLITE_LIMIT_ATTACHED:
            raise Refused("changing the attached-database limit is not allowed in a verifier")
        return super().setlimit(category, limit)


def connect_read_only(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
    kwargs.pop("factory", None)
    return ReadOnlyConnection(database, *args, **kwargs)


def module_proxies() -> dict[str, types.ModuleType]:
    """Trimmed copies of the allowlisted modules: public, non-module attributes only."""
    proxies: dict[str, types.ModuleType] = {}
    for name in ALLOWED_MODULES:
        real = importlib.import_module(name)
        proxy = types.ModuleType(name)
        hidden = _HIDDEN.get(name, set())
        for key, value in vars(real).items():
            if _allowed_name(key) and key not in hidden and not isinstance(value, types.ModuleType):
                setattr(proxy, key, value)
        proxies[name] = proxy
    proxies["collections"].abc = proxies["collections.abc"]  # type: ignore[attr-defined]
    proxies["sqlite3"].connect = connect_read_only  # type: ignore[attr-defined]
    proxies["sqlite3"].Connection = ReadOnlyConnection  # type: ignore[attr-defined]
    return proxies


def _guard(name: Any) -> None:
    # Exactly str: a str subclass can override startswith/__eq__/__hash__ and pass for a public name.
    if type(name) is not str or not _allowed_name(name):
        raise Refused(f"attribute {name!r} is not allowed in a verifier")


def restricted_builtins(proxies: dict[str, types.ModuleType]) -> dict[str, Any]:
    def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if type(name) is not str:
            raise ImportError("import of a non-string name is not allowed in a verifier")
        if name in _INTERNAL and not level:  # C code (datetime.strptime) imports these through our frame
            return importlib.import_module(name)
        if level or name not in proxies:
            raise ImportError(f"import of {name!r} is not allowed in a verifier")
        return proxies[name] if fromlist else proxies[name.split(".")[0]]

    def _getattr(obj: Any, name: str, *default: Any) -> Any:
        _guard(name)
        if name in FORMAT_ATTRS:
            return _format_attr(obj, name)
        return getattr(obj, name, *default)

    def _hasattr(obj: Any, name: str) -> bool:
        _guard(name)
        return hasattr(obj, name)

    def _setattr(obj: Any, name: str, value: Any) -> None:
        _guard(name)
        setattr(obj, name, value)

    def _delattr(obj: Any, name: str) -> None:
        _guard(name)
        delattr(obj, name)

    safe = {k: v for k, v in vars(builtins).items() if k not in _REMOVED}
    safe.update(__import__=_import, getattr=_getattr, hasattr=_hasattr, setattr=_setattr, delattr=_delattr)
    safe[_FORMAT_HOOK] = _format_attr
    return safe


@functools.lru_cache(maxsize=1024)
def find_function_name(code: str, default: str) -> str:
    """The first line starting with `def verify_` names the function; else the mode's default (the last 1,024
    answers kept: a batch verifies the same few codes again and again)."""
    for line in code.splitlines():
        if line.startswith("def verify_"):
            return line[len("def "):].split("(", 1)[0].strip()
    return default


def compile_verifier(code: str) -> types.CodeType:
    """The verifier's module code, once `check_source` has passed (and rewritten) it."""
    return compile(check_source(code), "<verifier>", "exec")


def run_verifier(job: dict[str, Any], proxies: dict[str, types.ModuleType], compiled: types.CodeType,
                 builtins_: dict[str, Any] | None = None) -> Any:
    """Execute the verifier's `compiled` module code (from `compile_verifier`) and call its function with the
    keyword arguments it accepts. Its builtins are a fresh dict: `restricted_builtins(proxies)`, or a copy of
    `builtins_` (one of those, built once by a process that runs many jobs)."""
    fresh = dict(builtins_) if builtins_ is not None else restricted_builtins(proxies)
    namespace: dict[str, Any] = {"__name__": "awm_verifier", "__builtins__": fresh}
    exec(compiled, namespace)
    fn: Callable[..., Any] | None = namespace.get(job["function"])
    if not callable(fn):
        raise Refused(f"verifier defines no function {job['function']!r}")
    names, takes_all = _parameters(fn)
    kwargs = {k: v for k, v in job["kwargs"].items() if takes_all or k in names}
    return fn(**kwargs)


def _parameters(fn: Callable[..., Any]) -> tuple[Collection[str], bool]:
    """The names of `fn`'s parameters, and whether it takes any keyword (`**kwargs`). A plain function's come from
    its code object (what `inspect.signature` reads for one, at a fiftieth of the cost); anything else's from
    `inspect.signature`."""
    if type(fn) is types.FunctionType and not {"__wrapped__", "__signature__"} & fn.__dict__.keys():
        code = fn.__code__
        star, stars = bool(code.co_flags & inspect.CO_VARARGS), bool(code.co_flags & inspect.CO_VARKEYWORDS)
        return code.co_varnames[:code.co_argcount + code.co_kwonlyargcount + star + stars], stars
    params = inspect.signature(fn).parameters
    return params, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
