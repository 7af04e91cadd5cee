"""A corpus of real-world reply shapes and what the one parser must make of each, per protocol.

Each shape says where it was seen (an issue thread, a parser's bug, or a simulated model's
deliberate slip). `expect` maps a protocol to the outcome; "*" covers the others. The corpus is
data so the training export can run the same cases through the same parser.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

TOOLS = ("get_item", "list_items", "update_item", "ask_expert")


@dataclass(frozen=True, slots=True)
class Out:
    """An expected outcome: `call` (tool name + arguments), `list_tools`, `final` (text) or a format-error kind."""

    kind: str  # call | list_tools | final | <format-error kind>
    name: str = ""
    arguments: dict[str, Any] | None = None
    text: str | None = None
    warnings: tuple[str, ...] = ()
    reasoning: str | None = None  # a substring the parsed reasoning must contain


def call(name: str, arguments: dict[str, Any] | None = None, *warnings: str, reasoning: str | None = None) -> Out:
    return Out("call", name, arguments if arguments is not None else {}, warnings=warnings, reasoning=reasoning)


def final(text: str, reasoning: str | None = None) -> Out:
    return Out("final", text=text, reasoning=reasoning)


def bad(kind: str, *warnings: str, reasoning: str | None = None) -> Out:
    return Out(kind, warnings=warnings, reasoning=reasoning)


LIST_TOOLS = Out("list_tools")


@dataclass(frozen=True, slots=True)
class Shape:
    id: str
    content: str | None
    expect: dict[str, Out]
    tool_calls: list[dict[str, Any]] | None = None
    finish_reason: str | None = None
    seen: str = ""
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def outcome(self, protocol: str) -> Out:
        return self.expect.get(protocol) or self.expect["*"]


def tag(payload: Any, *, raw: str | None = None) -> str:
    return f"<tool_call>\n{raw if raw is not None else json.dumps(payload)}\n</tool_call>"


def h(name: str, arguments: Any) -> str:
    """A hermes call."""
    return tag({"name": name, "arguments": arguments})


def a(name: str, arguments: dict[str, Any]) -> str:
    """An AWM call_tool call, arguments as a JSON string."""
    return tag({"name": "call_tool", "arguments": {"tool_name": name, "arguments": json.dumps(arguments)}})


def tc(name: str | None, arguments: Any, call_id: str = "call_abc") -> dict[str, Any]:
    """One OpenAI tool_calls entry; `arguments` a string is sent verbatim."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


ITEM = {"item_id": 3}
GET = call("get_item", ITEM)
NOT_AWM_META = bad("unknown_tool")  # hermes/native never unwrap call_tool/list_tools

CORPUS: list[Shape] = [
    # --- the protocols' own shapes ------------------------------------------------------------
    Shape("hermes_call", h("get_item", ITEM), {"*": GET}, seen="Qwen2.5/3 chat template, vLLM hermes parser",
          notes="awm accepts the real tool name called directly (MCP habit); native accepts hermes tags"),
    Shape("awm_call_tool_args_string", a("get_item", ITEM), {"awm": GET, "*": NOT_AWM_META},
          seen="AWM paper / Arctic-AWM: call_tool(tool_name, arguments as a JSON string)"),
    Shape("awm_call_tool_args_object",
          tag({"name": "call_tool", "arguments": {"tool_name": "get_item", "arguments": ITEM}}),
          {"awm": GET, "*": NOT_AWM_META}, seen="BRIEF §2: arguments as a string or an object"),
    Shape("awm_call_tool_args_as_string_whole",
          tag({"name": "call_tool", "arguments": json.dumps({"tool_name": "get_item", "arguments": ITEM})}),
          {"awm": GET, "*": NOT_AWM_META}, seen="call_tool's own arguments sent as a JSON string"),
    Shape("awm_list_tools", tag({"name": "list_tools", "arguments": {}}), {"awm": LIST_TOOLS, "*": NOT_AWM_META},
          seen="AWM protocol: list_tools first"),
    Shape("awm_list_tools_no_arguments", tag({"name": "list_tools"}), {"awm": LIST_TOOLS, "*": NOT_AWM_META}),
    Shape("native_call", None, {"*": call("get_item", ITEM)}, tool_calls=[tc("get_item", ITEM)],
          seen="OpenAI function calling; text protocols take tool_calls a server-side parser lifted out"),
    # --- list wrapping, argument forms ------------------------------------------------------------
    Shape("list_wrapped_one", tag([{"name": "get_item", "arguments": ITEM}]), {"*": GET},
          seen="AWM lenient parser: unwrap a list"),
    Shape("list_wrapped_two", tag([{"name": "get_item", "arguments": ITEM}, {"name": "list_items", "arguments": {}}]),
          {"*": call("get_item", ITEM, "multiple_calls")}, seen="parallel calls written as one JSON list"),
    Shape("list_wrapped_empty", tag([]), {"*": bad("missing_name")}),
    Shape("arguments_as_string", h("get_item", json.dumps(ITEM)), {"*": GET},
          seen="smolagents#1003: arguments as a JSON-encoded string"),
    Shape("arguments_double_encoded", h("get_item", json.dumps(json.dumps(ITEM))), {"*": GET},
          seen="arguments JSON-encoded twice by a client template"),
    Shape("arguments_list", h("get_item", [3]), {"*": bad("schema_violation")},
          seen="vLLM _postprocess_messages crashes on list arguments"),
    Shape("arguments_number", h("get_item", 3), {"*": bad("schema_violation")}),
    Shape("arguments_null", h("list_items", None), {"*": call("list_items", {})}),
    Shape("arguments_missing", tag({"name": "list_items"}), {"*": call("list_items", {})}),
    Shape("parameters_key", tag({"name": "get_item", "parameters": ITEM}), {"*": GET},
          seen="ahwurm/localharness#104: `parameters` instead of `arguments`; Llama 3.1 JSON calls"),
    Shape("openai_function_object", tag({"type": "function", "function": {"name": "get_item",
                                                                           "arguments": json.dumps(ITEM)}}),
          {"*": GET}, seen="a model echoing OpenAI's tool_calls shape inside the tags"),
    # --- names ------------------------------------------------------------------------------
    Shape("mcp_tool_prefix", h("mcp_tool_get_item", ITEM), {"*": GET}, seen="BRIEF §2: map mcp_tool_X to X"),
    Shape("awm_mcp_prefix_inner", a("mcp_tool_get_item", ITEM), {"awm": GET, "*": NOT_AWM_META}),
    Shape("mcp_prefix_on_meta", tag({"name": "mcp_tool_list_tools", "arguments": {}}),
          {"awm": LIST_TOOLS, "*": NOT_AWM_META}),
    Shape("missing_name", tag({"arguments": ITEM}), {"*": bad("missing_name")}),
    Shape("empty_name", h("", ITEM), {"*": bad("missing_name")}),
    Shape("unknown_tool", h("fetch_item", ITEM), {"*": bad("unknown_tool")}),
    Shape("duplicated_name", h("get_itemget_item", ITEM), {"*": bad("unknown_tool")},
          seen="NousResearch/hermes-agent#6841: streamed names concatenated"),
    Shape("awm_call_tool_without_tool_name", tag({"name": "call_tool", "arguments": {"arguments": "{}"}}),
          {"awm": bad("missing_name"), "*": NOT_AWM_META}),
    Shape("awm_call_tool_bad_inner_json",
          tag({"name": "call_tool", "arguments": {"tool_name": "get_item", "arguments": '{"item_id": 3'}}),
          {"awm": bad("invalid_json"), "*": NOT_AWM_META}),
    Shape("ask_expert", h("ask_expert", {"question": "Which id?"}),
          {"*": call("ask_expert", {"question": "Which id?"})}),
    # --- prose, several calls, tags ----------------------------------------------------------------
    Shape("prose_around", "Let me look the item up first.\n" + h("get_item", ITEM) + "\nThen I will report back.",
          {"*": GET}, seen="Qwen3 narrating around its call"),
    Shape("two_tags", h("get_item", ITEM) + "\n" + h("list_items", {}), {"*": call("get_item", ITEM, "multiple_calls")},
          seen="parallel hermes calls; BRIEF §2: execute the first"),
    Shape("two_objects_in_one_tag", tag(None, raw=json.dumps({"name": "get_item", "arguments": ITEM}) + "\n"
                                        + json.dumps({"name": "list_items", "arguments": {}})),
          {"*": call("get_item", ITEM, "multiple_calls")},
          seen="vllm#17790: hermes parser JSONDecodeError 'Extra data' on Qwen3-32B"),
    Shape("stray_closing_brace", tag(None, raw='{"name": "get_item", "arguments": {"item_id": 3}}}'), {"*": GET},
          seen="small models miscounting braces"),
    Shape("fenced_json_in_tags", tag(None, raw="```json\n" + json.dumps({"name": "get_item", "arguments": ITEM})
                                     + "\n```"), {"*": GET}),
    Shape("tool_response_hallucinated", h("get_item", ITEM) + '\n<tool_response>{"price": 3}</tool_response>\nDone.',
          {"*": GET}, seen="models continuing with an invented <tool_response>"),
    Shape("im_end_leftover", h("get_item", ITEM) + "<|im_end|>", {"*": GET},
          seen="servers run with skip_special_tokens=False"),
    Shape("unclosed_tag", '<tool_call>\n{"name": "get_item", "arguments": {"item_id": 3}}',
          {"*": bad("unclosed_tag")}, seen="the closing tag forgotten (sim/novice slip)"),
    Shape("unclosed_truncated", '<tool_call>\n{"name": "get_item", "argu', {"*": bad("truncated")},
          finish_reason="length", seen="max_tokens reached mid-call"),
    Shape("unclosed_then_closed", '<tool_call>{"name": "get_item", "arguments": {"item_id": 3}}\n'
          + h("list_items", {}), {"*": bad("unclosed_tag", "multiple_calls")}),
    Shape("close_without_open", '{"name": "get_item", "arguments": {"item_id": 3}}\n</tool_call>',
          {"*": bad("unclosed_tag")}, seen="hermes-agent#742: `</think>{...}</tool_call>`, the opening tag lost"),
    Shape("empty_tags", "<tool_call></tool_call>", {"*": bad("invalid_json")}),
    Shape("invalid_json_body", tag(None, raw='{"name": "get_item", "arguments": {'), {"*": bad("invalid_json")},
          seen="sim/novice slip; vLLM hermes parser errors"),
    Shape("unescaped_quotes", tag(None, raw='{"name": "update_item", "arguments": {"note": "say "hi""}}'),
          {"*": bad("invalid_json")}, seen="hermes-agent#13480: invalid string in arguments"),
    Shape("body_is_a_string", tag("get_item"), {"*": bad("schema_violation")}),
    # --- near-JSON -------------------------------------------------------------------------------
    Shape("single_quotes", tag(None, raw="{'name': 'get_item', 'arguments': {'item_id': 3}}"), {"*": GET},
          seen="waybarrios/vllm-mlx#63: Qwen3-Coder writes Python literals"),
    Shape("python_literals", tag(None, raw="{'name': 'update_item', 'arguments': {'item_id': 3, 'active': True, "
                                           "'note': None}}"),
          {"*": call("update_item", {"item_id": 3, "active": True, "note": None})}),
    Shape("json_words_inside_single_quoted_string",
          tag(None, raw="{'name': 'update_item', 'arguments': {'item_id': 3, 'note': 'a true story, null'}}"),
          {"*": call("update_item", {"item_id": 3, "note": "a true story, null"})},
          notes="repairs apply outside strings only"),
    Shape("trailing_commas", tag(None, raw='{"name": "get_item", "arguments": {"item_id": 3,},}'), {"*": GET},
          seen="hermes-agent#1796: trailing commas in arguments"),
    Shape("raw_newline_in_string", tag(None, raw='{"name": "update_item", "arguments": {"item_id": 3, '
                                                 '"note": "line one\nline two"}}'),
          {"*": call("update_item", {"item_id": 3, "note": "line one\nline two"})},
          notes="control characters inside strings (json strict=False)"),
    # --- think blocks ------------------------------------------------------------------------------
    Shape("think_then_call", "<think>\nI need item 3.\n</think>\n\n" + h("get_item", ITEM),
          {"*": call("get_item", ITEM, reasoning="I need item 3.")}, seen="Qwen3 with enable_thinking"),
    Shape("think_open_tag_in_prompt", "I need item 3.\n</think>\n\n" + h("get_item", ITEM),
          {"*": call("get_item", ITEM, reasoning="I need item 3.")},
          seen="templates that put <think> in the generation prompt (QwQ, R1)"),
    Shape("empty_think", "<think>\n\n</think>\n\n" + h("get_item", ITEM), {"*": GET},
          seen="Qwen3 with enable_thinking=False"),
    Shape("call_only_inside_think", "<think>I will call " + h("get_item", ITEM) + "</think>",
          {"*": bad("empty_reply", reasoning="I will call")},
          seen="verl#4757: calls inside <think> are reasoning, not actions"),
    Shape("call_inside_think_and_after", "<think>Maybe " + h("list_items", {}) + " first? No.</think>\n"
          + h("get_item", ITEM), {"*": GET}, seen="verl#4757: the think-block call must not count as a second call"),
    Shape("think_cut_off", "<think>\nLet me work out which item the user", {"*": bad("truncated")},
          finish_reason="length", seen="max_tokens reached while thinking"),
    Shape("think_unclosed_stopped", "<think>\nLet me work out which item the user", {"*": bad("empty_reply")},
          finish_reason="stop", notes="an unclosed <think> the model itself ended: reasoning only, not cut off"),
    Shape("think_only", "<think>The task is done.</think>", {"*": bad("empty_reply")}),
    Shape("think_then_final", "<think>All done.</think>\nThe item costs 3 dollars.",
          {"*": final("The item costs 3 dollars.", reasoning="All done.")}),
    # --- empty and final ---------------------------------------------------------------------------
    Shape("empty_string", "", {"*": bad("empty_reply")}, seen="sim/novice slip; vLLM empty completions"),
    Shape("whitespace_only", "  \n\t ", {"*": bad("empty_reply")}),
    Shape("none_content", None, {"*": bad("empty_reply")}),
    Shape("final_answer", "The item costs 3 dollars.", {"*": final("The item costs 3 dollars.")}),
    Shape("final_answer_with_end_token", "Done.<|im_end|>", {"*": final("Done.")}),
    Shape("final_answer_is_json", '{"name": "Alice", "email": "alice@example.com"}',
          {"*": final('{"name": "Alice", "email": "alice@example.com"}')},
          notes="JSON that is not a call to an offered tool stays a final answer"),
    # --- calls outside their envelope ------------------------------------------------------------
    Shape("bare_json_call", json.dumps({"name": "get_item", "arguments": ITEM}), {"*": bad("schema_violation")},
          seen="Qwen/Hermes models forgetting the tags (hermes-agent#742)"),
    Shape("bare_list_parameters", '[{ "name": "get_item", "parameters": { "item_id": 3 } }]',
          {"*": bad("schema_violation")}, seen="vllm#22337: gpt-oss writes calls as content, tool_calls empty"),
    Shape("bare_fenced_call", "```json\n" + json.dumps({"name": "get_item", "arguments": ITEM}) + "\n```",
          {"*": bad("schema_violation")}),
    Shape("bare_awm_call", json.dumps({"name": "call_tool", "arguments": {"tool_name": "get_item",
                                                                          "arguments": "{}"}}),
          {"awm": bad("schema_violation"), "*": final(json.dumps({"name": "call_tool", "arguments": {
              "tool_name": "get_item", "arguments": "{}"}}))},
          notes="call_tool is only a tool under awm; elsewhere this names no offered tool"),
    # --- cut off at max_tokens (finish_reason "length"), as SmolLM2-135M on llama.cpp writes them ---------
    Shape("final_cut_off", "I'm sorry, I'm sorry. I'm sorry. I'm sorry. I'm sorry. I'm so", {"*": bad("truncated")},
          finish_reason="length", seen="SmolLM2-135M on llama-server: a repetition loop until max_tokens"),
    Shape("code_fence_cut_off", "```python\ndef delete_note_by_id(id):\n    if id is None:\n        return",
          {"*": bad("truncated")}, finish_reason="length", seen="SmolLM2-135M: code instead of a call, cut off"),
    Shape("prose_mentions_tag_cut_off", "You can call a function with a JSON object inside a <tool_call> tag:\n\n"
          "```json\n{\n  \"notes\": [", {"*": bad("truncated")}, finish_reason="length",
          seen="SmolLM2-135M: the prompt's wording echoed, then cut off"),
    Shape("placeholder_arguments_then_cut", tag(None, raw='{"name": "get_item", "arguments": {<arguments as a JSON '
                                                          'object>}}') + "\n\nSo, the above example would work as",
          {"*": bad("invalid_json")}, finish_reason="length",
          seen="SmolLM2-135M copies the hermes prompt's placeholder; the call is complete, so not truncated"),
    Shape("call_then_prose_cut_off", h("get_item", ITEM) + "\nNow I will check the", {"*": GET},
          finish_reason="length", notes="a complete call runs even if the prose after it was cut"),
    Shape("bare_call_cut_off", '{"name": "get_item", "arguments": {"item_i', {"*": bad("truncated")},
          finish_reason="length"),
    Shape("final_answer_length_exactly_stop", "The item costs 3 dollars.", {"*": final("The item costs 3 dollars.")},
          finish_reason="stop", notes="finish_reason stop: a final answer as usual"),
    Shape("native_arguments_cut_off", None, {"*": bad("truncated")}, tool_calls=[tc("get_item", '{"item_id": ')],
          finish_reason="length", seen="a server-side tool parser emitting a call cut at max_tokens"),
    Shape("native_complete_call_length", None, {"*": GET}, tool_calls=[tc("get_item", ITEM)], finish_reason="length",
          notes="complete arguments: the call runs"),
    # --- native tool_calls -----------------------------------------------------------------------
    Shape("native_bad_json_arguments", None, {"*": bad("invalid_json")}, tool_calls=[tc("get_item", '{"item_id": 3,')],
          seen="sim/novice slip; hermes-agent#1796"),
    Shape("native_single_quoted_arguments", None, {"*": GET}, tool_calls=[tc("get_item", "{'item_id': 3}")]),
    Shape("native_empty_arguments", None, {"*": call("list_items", {})}, tool_calls=[tc("list_items", "")]),
    Shape("native_list_arguments", None, {"*": bad("schema_violation")}, tool_calls=[tc("get_item", "[3]")]),
    Shape("native_duplicated_arguments", None, {"*": bad("invalid_json")},
          tool_calls=[tc("get_item", '{"item_id": 3}{"item_id": 3}')],
          seen="hermes-agent#6841: streamed arguments concatenated"),
    Shape("native_two_calls", None, {"*": call("get_item", ITEM, "multiple_calls")},
          tool_calls=[tc("get_item", ITEM, "call_1"), tc("list_items", {}, "call_2")],
          seen="parallel_tool_calls; BRIEF §2: execute the first"),
    Shape("native_unknown_tool", None, {"*": bad("unknown_tool")}, tool_calls=[tc("find_anything", {})],
          seen="sim/novice slip"),
    Shape("native_empty_name", None, {"*": bad("missing_name")}, tool_calls=[tc("", ITEM)]),
    Shape("native_mcp_prefix", None, {"*": GET}, tool_calls=[tc("mcp_tool_get_item", ITEM)]),
    Shape("native_awm_meta", None, {"awm": GET, "*": NOT_AWM_META},
          tool_calls=[tc("call_tool", {"tool_name": "get_item", "arguments": json.dumps(ITEM)})],
          notes="a server-side parser lifting AWM's call_tool into tool_calls"),
    Shape("native_with_think_content", "<think>Item 3 it is.</think>", {"*": call("get_item", ITEM,
                                                                                   reasoning="Item 3 it is.")},
          tool_calls=[tc("get_item", ITEM)]),
    Shape("native_and_tags_in_content", h("list_items", {}), {"native": GET, "*": call("list_items", {})},
          tool_calls=[tc("get_item", ITEM)],
          notes="native trusts tool_calls; text protocols trust their tags"),
    # --- arguments no wire can carry (issue 25): Python's json reads them, orjson and UTF-8 refuse them ---
    Shape("lone_surrogate_argument", None, {"*": bad("unencodable_text")},
          tool_calls=[tc("get_item", '{"item_id": "\\ud800"}')], seen="issue 25: an attacker's call"),
    Shape("integer_past_64_bits", None, {"*": bad("number_out_of_range")},
          tool_calls=[tc("get_item", '{"item_id": 123456789012345678901}')], seen="issue 25"),
    Shape("arguments_300_deep", None, {"*": bad("arguments_too_deep")},
          tool_calls=[tc("get_item", '{"a": ' * 300 + "1" + "}" * 300)], seen="issue 25"),
    Shape("arguments_over_a_mebibyte", None, {"*": bad("arguments_too_large")},
          tool_calls=[tc("get_item", {"item_id": 3, "pad": "x" * (1 << 20)})], seen="issue 25: 17.5 MB arguments"),
    Shape("second_call_uncarriable", None, {"*": call("get_item", ITEM, "multiple_calls", "unencodable_text")},
          tool_calls=[tc("get_item", ITEM, "call_1"), tc("list_items", '{"q": "\\udfff"}', "call_2")],
          seen="issue 25: the unexecuted second call failed when the next request was encoded"),
]
