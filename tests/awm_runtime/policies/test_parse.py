"""The one parser over the corpus of real-world reply shapes, for all three protocols."""

from __future__ import annotations

import pytest

from awm_runtime import CallTool, FinalAnswer, ListTools, Malformed
from awm_runtime._types import FORMAT_ERROR_KINDS
from awm_runtime.policies.protocols import PROTOCOLS, Parsed, loads_lenient, parse_reply, strip_think
from tests.awm_runtime.policies.corpus import CORPUS, TOOLS, Out, Shape

CASES = [pytest.param(shape, protocol, id=f"{protocol}-{shape.id}") for shape in CORPUS for protocol in PROTOCOLS]


def check(parsed: Parsed, want: Out) -> None:
    action = parsed.action
    if want.kind == "call":
        assert isinstance(action, CallTool), parsed
        assert (action.call.name, action.call.arguments) == (want.name, want.arguments)
    elif want.kind == "list_tools":
        assert isinstance(action, ListTools), parsed
    elif want.kind == "final":
        assert isinstance(action, FinalAnswer) and action.text == want.text, parsed
    else:
        assert isinstance(action, Malformed) and action.kind == want.kind, parsed
        assert action.detail
    assert parsed.warnings == want.warnings
    if want.reasoning is not None:
        assert want.reasoning in (parsed.reasoning or "")


@pytest.mark.parametrize(("shape", "protocol"), CASES)
def test_corpus_shape(shape: Shape, protocol: str) -> None:
    parsed = parse_reply(protocol, shape.content, shape.tool_calls, TOOLS, call_id="call_7",
                         finish_reason=shape.finish_reason)
    check(parsed, shape.outcome(protocol))


def test_corpus_covers_every_kind_in_every_protocol() -> None:
    for protocol in PROTOCOLS:
        kinds = {s.outcome(protocol).kind for s in CORPUS} | {w for s in CORPUS for w in s.outcome(protocol).warnings}
        assert set(FORMAT_ERROR_KINDS) <= kinds, (protocol, set(FORMAT_ERROR_KINDS) - kinds)
        assert {"call", "final"} <= kinds


def test_corpus_ids_are_unique() -> None:
    ids = [s.id for s in CORPUS]
    assert len(ids) == len(set(ids))


def test_text_calls_take_the_given_id_native_calls_keep_theirs() -> None:
    text = parse_reply("hermes", '<tool_call>{"name": "list_items"}</tool_call>', None, TOOLS, call_id="call_4")
    native = parse_reply("native", None, [{"id": "abc", "function": {"name": "list_items", "arguments": "{}"}}],
                         TOOLS, call_id="call_4")
    assert isinstance(text.action, CallTool) and text.action.call.id == "call_4"
    assert isinstance(native.action, CallTool) and native.action.call.id == "abc"


def test_unknown_tool_suggests_the_closest_name() -> None:
    parsed = parse_reply("hermes", '<tool_call>{"name": "get_items", "arguments": {}}</tool_call>', None, TOOLS)
    assert isinstance(parsed.action, Malformed) and "did you mean 'get_item'" in parsed.action.detail


def test_truncation_is_named_in_the_detail() -> None:
    parsed = parse_reply("awm", '<tool_call>{"name": "list_tools"', None, TOOLS, finish_reason="length")
    assert isinstance(parsed.action, Malformed) and "max_tokens" in parsed.action.detail


def test_kinds_lists_the_error_then_the_warnings() -> None:
    parsed = parse_reply("hermes", '<tool_call>{"name": "x"}\n<tool_call>{"name": "y"}</tool_call>', None, TOOLS)
    assert parsed.kinds == ("unclosed_tag", "multiple_calls")
    assert parse_reply("hermes", "fine", None, TOOLS).kinds == ()


def test_unknown_protocol_is_a_config_error() -> None:
    from awm_runtime import ConfigError

    with pytest.raises(ConfigError, match="unknown tool-call protocol 'xml'"):
        parse_reply("xml", "hi", None, TOOLS)


@pytest.mark.parametrize(("text", "visible", "reasoning"), [
    ("<think>a</think>b", "b", "a"),
    ("<THINK>a</THINK>b", "b", "a"),
    ("a</think>b", "b", "a"),
    ("<think>a</think><think>b</think>c", "c", "a\n\nb"),
    ("<think>unfinished", "", "unfinished"),
    ("x<think>unfinished", "x", "unfinished"),
    ("plain", "plain", None),
    ("<think>\n\n</think>\n\nanswer", "answer", None),
])
def test_strip_think(text: str, visible: str, reasoning: str | None) -> None:
    assert strip_think(text) == (visible, reasoning)


@pytest.mark.parametrize(("text", "value"), [
    ('{"a": 1}', {"a": 1}),
    ("{'a': 'it''s'}", {"a": "its"}),
    ("{'a': True, 'b': None, 'c': (1, 2)}", {"a": True, "b": None, "c": [1, 2]}),
    ('{"a": true, "b": [1, 2,], }', {"a": True, "b": [1, 2]}),
    ("{'s': 'keeps, } and true'}", {"s": "keeps, } and true"}),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('{"a": "tab\there"}', {"a": "tab\there"}),
])
def test_loads_lenient_repairs(text: str, value: object) -> None:
    assert loads_lenient(text) == value


@pytest.mark.parametrize("text", ['{"a": 1', "{'a': {1, 2}}", "not json", "{1: 2}", '{"a": }'])
def test_loads_lenient_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        loads_lenient(text)


@pytest.mark.parametrize("text", [
    "<think>" * 16384,
    "```" + " " * 200_000 + "x",
    "a" + " " * 200_000 + "b<|im_end|>",
    "<tool_call>{" * 16384,
    "</think>" * 16384 + "<think>" * 16384,
])
def test_degenerate_replies_parse_in_linear_time(text: str) -> None:
    """Linear, not quadratic: a reply 4 times as long costs about 4 times the CPU (a quadratic scan, 16
    times: minutes on these). CPU time of this thread, a ratio within the test: no load or clock bounds it."""
    import gc
    import time

    def once(reply: str) -> float:
        started = time.thread_time()
        for protocol in PROTOCOLS:
            parse_reply(protocol, reply, None, TOOLS)
        return time.thread_time() - started

    def cpu(reply: str) -> float:
        # The best of three with the collector off: a collection of the whole test process (thousands of
        # objects under xdist) lands on whichever call triggers it and once cost 0.29 s of this thread's CPU.
        gc.disable()
        try:
            return min(once(reply) for _ in range(3))
        finally:
            gc.enable()

    quarter = cpu(text[: len(text) // 4])
    assert cpu(text) < 8 * quarter + 0.05  # 16x is quadratic; the 0.05 s absorbs the clock's granularity
