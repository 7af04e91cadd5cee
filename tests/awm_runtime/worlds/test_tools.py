"""Tools match fastapi-mcp: the same listing as its converter on the same apps, and its call texts."""

from __future__ import annotations

from enum import StrEnum
from os import PathLike
from typing import Annotated, Any

import pytest
from fastapi import Body, FastAPI, Header, Path, Query
from fastapi.openapi.utils import get_openapi
from fastapi_mcp.openapi.convert import convert_openapi_to_mcp_tools
from pydantic import BaseModel, Field

from awm_runtime import ToolCall
from awm_runtime.worlds import BUILTIN_SOURCES
from awm_runtime.worlds._host import ScenarioHost, import_scenario_app
from awm_runtime.worlds._tools import query_value, result_text, split_arguments, tools_from_openapi
from tests.conftest import FIXTURES, task_of


class Colour(StrEnum):
    red = "red"
    blue = "blue"


class Address(BaseModel):
    street: str = Field(..., description="Street and number")
    city: str | None = None


class Person(BaseModel):
    name: str = Field(..., examples=["Ada"])
    age: int | None = Field(None, ge=0)
    colour: Colour = Colour.red
    addresses: list[Address] = []


def odd_app() -> FastAPI:
    """Routes with the shapes generated code can have: headers, unions, enums, nested bodies, no summary."""
    app = FastAPI(title="Odd")

    @app.get("/people/{person_id}", operation_id="get_person", summary="Get a person", response_model=Person,
             responses={404: {"description": "Not found"}})
    async def get_person(person_id: Annotated[int, Path(description="Id")], verbose: Annotated[bool, Query()] = False,
                         limit: Annotated[int | None, Query(description="At most")] = None,
                         x_trace: Annotated[str, Header()] = "") -> Any:
        return {}

    @app.post("/people", operation_id="create_person", description="No summary here.", status_code=201,
              response_model=Person)
    async def create_person(person: Annotated[Person, Body()], dry_run: Annotated[bool, Query()] = False) -> Any:
        return person

    @app.put("/people/{person_id}/tags", operation_id="set_tags", summary="Replace tags")
    async def set_tags(person_id: int, tags: Annotated[list[str], Body(embed=True)],
                       colour: Annotated[Colour, Query()] = Colour.red) -> Any:
        return {"tags": tags}

    @app.delete("/people/{person_id}", operation_id="delete_person", response_model=dict[str, int])
    async def delete_person(person_id: int) -> Any:
        return {"deleted": person_id}

    return app


def _apps() -> list[tuple[str, Any]]:
    sources = sorted(p for p in BUILTIN_SOURCES.iterdir() if (p / "app.py").is_file())
    sources.append(FIXTURES / "tiny_src" / "tiny_notes")
    apps = [(p.name, import_scenario_app(f"awm_tooltest_{p.name}", (p / "app.py").read_text())) for p in sources]
    return [*apps, ("odd", odd_app())]


@pytest.mark.parametrize(("name", "app"), _apps(), ids=lambda v: v if isinstance(v, str) else "")
def test_listing_equals_fastapi_mcp(name: str, app: Any) -> None:
    # What FastApiMCP.setup_server feeds its converter.
    doc = get_openapi(title=app.title, version=app.version, openapi_version=app.openapi_version,
                      description=app.description, routes=app.routes)
    theirs, their_ops = convert_openapi_to_mcp_tools(doc)
    ours, our_ops = tools_from_openapi(doc)
    assert [t["name"] for t in ours] == [t.name for t in theirs]
    for mine, ref in zip(ours, theirs, strict=True):
        assert mine["description"] == ref.description, mine["name"]
        assert mine["input_schema"] == ref.inputSchema, mine["name"]  # mcp 1.x (the pin) names it inputSchema
    assert set(our_ops) == set(their_ops)
    for op_id, op in our_ops.items():
        ref_op = their_ops[op_id]
        assert (op.path, op.method) == (ref_op["path"], ref_op["method"])
        assert set(op.path_params) == {p["name"] for p in ref_op["parameters"] if p["in"] == "path"}
        assert set(op.query_params) == {p["name"] for p in ref_op["parameters"] if p["in"] == "query"}
        assert set(op.header_params) == {p["name"] for p in ref_op["parameters"] if p["in"] == "header"}


def test_descriptions_carry_the_responses_section(tiny_dir: Any) -> None:
    doc = odd_app().openapi()
    tools = {t["name"]: t for t in tools_from_openapi(doc)[0]}
    assert tools["get_person"]["description"].startswith("Get a person\n\n### Responses:\n\n**200**")
    assert '"name": "Ada"' not in tools["get_person"]["description"]  # generated from the schema, not examples
    expected = "Create Person\n\nNo summary here.\n\n### Responses:\n\n**201**"
    assert tools["create_person"]["description"].startswith(expected)


def test_arguments_split_as_fastapi_mcp_splits_them() -> None:
    _, ops = tools_from_openapi(odd_app().openapi())
    path, query, headers, body = split_arguments(
        ops["get_person"], {"person_id": 7, "verbose": True, "limit": None, "x-trace": "abc", "stray": 1})
    assert (path, query, headers, body) == ("/people/7", {"verbose": True, "limit": None}, {"x-trace": "abc"}, None)
    path, query, _, body = split_arguments(ops["create_person"], {"name": "Ada", "dry_run": True, "age": 3})
    assert (path, query, body) == ("/people", {"dry_run": True}, {"name": "Ada", "age": 3})
    assert [query_value(v) for v in (True, False, None, 3, "x")] == ["true", "false", "", "3", "x"]


def test_result_texts_match_fastapi_mcp() -> None:
    assert result_text("t", 200, b'{"a":1,"b":"\xc3\xa9"}') == ('{\n  "a": 1,\n  "b": "\u00e9"\n}', False)
    assert result_text("t", 200, b"plain") == ("plain", False)
    assert result_text("t", 404, b'{"detail":"x"}') == ('Error calling t. Status code: 404. Response: {"detail":"x"}',
                                                        True)


async def test_host_calls_validate_route_and_render(tmp_path: Any, tiny_dir: Any) -> None:
    """In-process host on a copy of the tiny DB (the worker does exactly this)."""
    host, db = await started_tiny_host("tiny_test", tmp_path, tiny_dir)
    made = await host.call(str(db), "create_note", {"title": "A", "body": "b"})
    assert not made["is_error"] and '"title": "A"' in made["text"]
    found = await host.call(str(db), "list_notes", {"title": "A"})
    assert '"title": "A"' in found["text"] and "Todo" not in found["text"]
    missing = await host.call(str(db), "get_note", {"note_id": 999})
    assert missing["is_error"] and missing["text"].startswith("Error calling get_note. Status code: 500.")
    invalid = await host.call(str(db), "get_note", {"note_id": "x"})  # mcp's server refuses it before the route
    assert invalid == {"text": "Input validation error: 'x' is not of type 'integer'", "is_error": True,
                       "status": None}
    absent = await host.call(str(db), "create_note", {})
    assert absent["text"] == "Input validation error: 'title' is a required property"
    assert (await host.call(str(db), "nope", {}))["text"] == "Unknown tool: nope"


async def test_session_tools_are_the_fastapi_mcp_listing(tiny_world: Any) -> None:
    session = await tiny_world.open(task_of(tiny_world, 0), episode_id="tools")
    try:
        code = (FIXTURES / "tiny_src" / "tiny_notes" / "app.py").read_text()
        theirs, _ = convert_openapi_to_mcp_tools(import_scenario_app("awm_tooltest_session", code).openapi())
        assert [(t.name, t.description, t.input_schema) for t in session.tools] == [
            (t.name, t.description, t.inputSchema) for t in theirs]
        result = await session.call_tool(ToolCall(id="1", name="get_note", arguments={"note_id": 2}))
        assert result.status == 200 and '"title": "Todo"' in result.text
    finally:
        await session.close()


def test_fast_json_rendering_is_exactly_pythons() -> None:
    """Results are rendered with orjson where it writes the same text as json.dumps(indent=2)."""
    import json
    import random

    from awm_runtime.worlds._tools import pretty_json

    rng = random.Random(7)

    def value(depth: int = 0) -> Any:
        kind = rng.randrange(9 if depth < 3 else 6)
        leaves = [None, rng.random() < 0.5, rng.choice([rng.randint(-10**20, 10**20), rng.randint(-2**63, 2**63 - 1),
                                                         rng.randint(-9, 9)]),
                  rng.random() * 10 ** rng.randint(-30, 30), "é ☃ \\ \" \n x\u2028" * rng.randint(0, 2),
                  rng.choice([-0.0, 1.0, 12.5, 0.1])]
        if kind < 6:
            return leaves[kind]
        if kind == 6:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {f"k{i}é": value(depth + 1) for i in range(rng.randint(0, 3))}

    for _ in range(5000):
        body = json.dumps(value(), ensure_ascii=False, separators=(",", ":")).encode()
        assert pretty_json(body) == json.dumps(json.loads(body), indent=2, ensure_ascii=False), body
    assert pretty_json(b'{"a": NaN}') == '{\n  "a": NaN\n}' and pretty_json(b"not json") is None
    # Floats that Python writes with an exponent though the body did not, and ints past 64 bits, in any position.
    for body in (b"[0.00001]", b'{"a": 10000000000000000.0}', b'{"a": [1, {"b": 123456789012345678901234}]}',
                 b"-9223372036854775809", b"18446744073709551615", b'"caf\xc3\xa9 1e5"', b"\xff", b"1e-7", b"2.5",
                 b"[[[[1e20]]], {}]", b'{"a": {"b": [{"c": 1.5e-9}]}}'):
        expected = json.dumps(json.loads(body), indent=2, ensure_ascii=False) if body != b"\xff" else None
        assert pretty_json(body) == expected, body


async def started_tiny_host(name: str, tmp_path: Any, tiny_dir: Any) -> tuple[ScenarioHost, PathLike[str]]:
    """The tiny notes scenario imported in this process as a world worker imports it: (host, its template DB)."""
    from awm_runtime.worlds import load_dataset
    from awm_runtime.worlds._dbbuild import build_database

    sc = load_dataset(tiny_dir).source("tiny_notes")
    template = tmp_path / "template.db"
    build_database(sc, template)
    host = ScenarioHost(name, sc.full_code, import_db=str(template))
    await host.start()
    host.release_import_db()
    return host, template


async def test_a_kept_connection_is_shrunk_between_calls_and_closed_once_its_db_is_gone(tmp_path: Any,
                                                                                         tiny_dir: Any) -> None:
    """A world worker keeps each episode's connection between its calls (no reconnect and schema parse), and
    closes it when the episode's DB file is removed: the file's pages would count against the scenario's quota."""
    import shutil

    from awm_runtime.worlds import _host

    host, template = await started_tiny_host("tiny_keep", tmp_path, tiny_dir)
    episodes = [tmp_path / f"ep{i}.db" for i in range(3)]
    for db in episodes:
        shutil.copyfile(template, db)
        assert not (await host.call(str(db), "create_note", {"title": "A", "body": "b"}))["is_error"]
    kept = {k[1] for k in _host._IDLE}
    assert {str(db) for db in episodes} <= kept
    first = next(r for k, r in _host._IDLE.items() if k[1] == str(episodes[0]))
    again = await host.call(str(episodes[0]), "list_notes", {"title": "A"})
    assert '"title": "A"' in again["text"]
    assert next(r for k, r in _host._IDLE.items() if k[1] == str(episodes[0])) is first  # the same connection
    episodes[1].unlink()
    assert _host.drop_unlinked() == 1
    assert str(episodes[1]) not in {k[1] for k in _host._IDLE} and str(episodes[0]) in {k[1] for k in _host._IDLE}
    assert _host.drop_unlinked() == 0


def test_a_worker_keeps_no_more_connections_than_its_descriptors_allow(monkeypatch: Any) -> None:
    from awm_runtime.worlds import _host

    monkeypatch.setattr(_host, "IDLE_CONNECTIONS", 1024)
    _host.keep_within(1280)
    assert _host.IDLE_CONNECTIONS == 1024
    _host.keep_within(512)  # a lower hard limit: 256 stay for pipes, call threads and the scenario's own files
    assert _host.IDLE_CONNECTIONS == 256
    _host.keep_within(100)
    assert _host.IDLE_CONNECTIONS == 16


async def test_a_call_on_an_ended_episode_s_db_creates_no_file(tmp_path: Any, tiny_dir: Any) -> None:
    """A call that reaches a worker after its episode's DB was removed fails; it does not leave a new empty DB
    behind, which would hold its scenario's disk (and a kept connection) until the worker exits."""
    host, _ = await started_tiny_host("tiny_gone", tmp_path, tiny_dir)
    gone = tmp_path / "gone.db"
    failed = await host.call(str(gone), "create_note", {"title": "A", "body": "b"})
    assert failed["is_error"] and failed["status"] == 500 and not gone.exists()
