"""The XML tool-calling fallback (seed 000 "anthropic_xml"): tools in the prompt, calls in the text.

Some proxies drop or mangle the API's ``tools`` field. In this mode the request has no
``tools``: ``tools_prompt()`` describes them in a ``<functions>`` block in the system prompt,
the model writes its call as XML in its reply (``<function_calls><invoke name="TOOL">
<parameter name="ARG">VALUE</parameter></invoke></function_calls>``), and
``parse_tool_calls()`` (providers/xml_parse.py) takes it back out. Earlier calls and results
go back into the conversation as text, with a result's images on its user message.
``XmlToolsProvider`` does this around one call of an OpenAI or Anthropic provider (the wire).
The rules: docs/providers.md."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Protocol

from core.messages import ChatMessage, LlmRequest, SystemPrompt, ToolCallRequest, ToolSpec, TurnResult
from providers.arguments import history_arguments
from providers.xml_parse import BLOCK_CLOSE, CDATA_OPEN, parse_tool_calls

_BLOCK_TAG = "<function_calls>"
_NEEDS_CDATA = re.compile(r"</?(?:function_calls|invoke|parameter)\b|<!\[CDATA\[|\]\]>")

_RULES = """\
<tool_calling>
You call a tool by writing XML in your reply; there is no other way to call one.
- Make exactly one call per reply, in exactly this format, and end your reply after </function_calls>:
<function_calls>
<invoke name="TOOL_NAME">
<parameter name="PARAMETER_NAME">VALUE</parameter>
</invoke>
</function_calls>
- Use only the tool and parameter names listed in <functions>, and give every required parameter.
- Write a string value as plain text, exactly as it should arrive: no quotes, no escaping. Write any other \
value (number, boolean, array, object) as JSON.
- If a value contains text that looks like these tags, such as </parameter>, wrap the whole value in \
<![CDATA[ and ]]>.
- The result comes back in a <function_results> block in the next message. Never write <function_results> \
yourself.
Example (get_weather is an illustration, not one of your tools): to ask for a 3-day forecast for Paris, reply
<function_calls>
<invoke name="get_weather">
<parameter name="city">Paris</parameter>
<parameter name="days">3</parameter>
</invoke>
</function_calls>
</tool_calling>"""


_COMPACT_RULES = """\
<tool_calling>
Call one tool per reply, in exactly this form, then stop:
<function_calls>
<invoke name="TOOL"><parameter name="NAME">VALUE</parameter></invoke>
</function_calls>
Strings as plain text; numbers, booleans, arrays and objects as JSON. Results come back in <function_results>.
</tool_calling>"""


def compact_tools_prompt(tools: list[ToolSpec]) -> str:
    """The tools as one line each (``name(param: type, optional?: type) - what it does``)
    and the calling rules in brief: about a fifth of ``tools_prompt``, for small windows."""
    lines = [f"- {_signature(t)} - {_first_sentence(t.description)}" for t in tools]
    return "Tools:\n" + "\n".join(lines) + "\n\n" + _COMPACT_RULES


def _signature(tool: ToolSpec) -> str:
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", ()))
    params = []
    for name, schema in props.items():
        kind = "|".join(map(str, schema["enum"])) if "enum" in schema else schema.get("type", "any")
        if isinstance(kind, list):
            kind = "|".join(kind)
        params.append(f"{name}: {kind}" if name in required else f"{name}?: {kind}")
    return f"{tool.name}({', '.join(params)})"


def _first_sentence(description: str) -> str:
    text = " ".join(description.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def tools_prompt(tools: list[ToolSpec], *, compact: bool = False) -> str:
    """The ``<functions>`` block and the rules for calling them (``compact``: one line a tool)."""
    if compact:
        return compact_tools_prompt(tools)
    functions = [
        "<function>"
        + json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters},
                     ensure_ascii=False)
        + "</function>"
        for t in tools
    ]
    return "In this environment you have access to these tools:\n<functions>\n" + "\n".join(functions) + (
        "\n</functions>\n\n" + _RULES
    )


def render_tool_call(call: ToolCallRequest) -> str:
    """A call as the model would have written it, for the assistant's text."""
    raw = call.arguments_raw or ""
    if call.parse_error and raw.lstrip().startswith("<invoke"):
        invoke = raw.strip()  # what the model wrote, so it sees its own mistake
    else:  # arguments that were not JSON (a native call, before a failover): the placeholder
        params = "".join(
            f'<parameter name="{key}">{_render_value(value)}</parameter>\n'
            for key, value in history_arguments(call).items()
        )
        invoke = f'<invoke name="{call.name}">\n{params}</invoke>'
    return f"{_BLOCK_TAG}\n{invoke}\n{BLOCK_CLOSE}"


def render_tool_result(name: str, content: str) -> str:
    """A tool result as the user message that answers a call."""
    return (
        "<function_results>\n<result>\n"
        f"<tool_name>{name}</tool_name>\n<stdout>\n{content}\n</stdout>\n"
        "</result>\n</function_results>"
    )


def _render_value(value: Any) -> str:
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if _NEEDS_CDATA.search(value) or value.startswith("\n") or value.endswith("\n"):
        return CDATA_OPEN + value.replace("]]>", "]]]]><![CDATA[>") + "]]>"
    return value



# -- the mode ------------------------------------------------------------------


class _Wire(Protocol):
    name: str

    def to_wire(self, req: LlmRequest) -> dict[str, Any]: ...

    async def complete(self, req: LlmRequest, on_text: Callable[[str], None] | None = None) -> TurnResult: ...

    async def aclose(self) -> None: ...


class XmlToolsProvider:
    """Tool calling through the text of an OpenAI or Anthropic wire (the inner provider)."""

    name = "anthropic_xml"

    def __init__(self, inner: _Wire) -> None:
        self.inner = inner

    def to_request(self, req: LlmRequest) -> LlmRequest:
        """The request the wire sees: tools in the system prompt, calls and results as text."""
        system = _with_tools(req.system, req.tools, compact=req.compact)
        return req.model_copy(update={"system": system, "messages": _as_text(req.messages), "tools": []})

    def to_wire(self, req: LlmRequest) -> dict[str, Any]:
        return self.inner.to_wire(self.to_request(req))

    async def complete(self, req: LlmRequest, on_text: Callable[[str], None] | None = None) -> TurnResult:
        """One model call. Raises ProviderError (from the wire) and nothing else."""
        result = await self.inner.complete(self.to_request(req), on_text)
        prose, calls = parse_tool_calls(result.content, req.tools)
        finish = "tool_calls" if calls and result.finish_reason == "stop" else result.finish_reason
        return result.model_copy(
            update={"content": prose, "tool_calls": calls + result.tool_calls, "source": "xml",
                    "finish_reason": finish}
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def _with_tools(system: SystemPrompt, tools: list[ToolSpec], *, compact: bool = False) -> SystemPrompt:
    """The tools block at the end of the stable part, so it is cached with it."""
    if not tools:
        return system
    block = tools_prompt(tools, compact=compact)
    stable = system.stable
    if not system.dynamic:  # all stable: the block is the end of the prompt
        return SystemPrompt(stable=f"{stable.rstrip()}\n\n{block}" if stable.strip() else block)
    return SystemPrompt(stable=f"{stable.rstrip()}\n\n{block}\n", dynamic=system.dynamic)


def _as_text(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Assistant calls rendered into its text, tool results as user messages (merged with
    neighbours). A tool result's images stay with it: the user message carries them, and the
    wire sends them after its text (a content array on either wire), as a user message may
    hold images on both."""
    names = {call.id: call.name for m in messages for call in m.tool_calls}
    out: list[ChatMessage] = []
    for message in messages:
        match message.role:
            case "assistant":
                parts = [message.content, *(render_tool_call(c) for c in message.tool_calls)]
                text = "\n\n".join(p for p in parts if p)
                out.append(ChatMessage(role="assistant", content=text, thinking=message.thinking))
                continue
            case "tool":
                name = message.name or names.get(message.tool_call_id or "", "")
                text = render_tool_result(name, message.content)
            case _:
                text = message.content
        if out and out[-1].role == "user":
            out[-1] = ChatMessage(role="user", content=f"{out[-1].content}\n\n{text}",
                                  images=out[-1].images + message.images)
        else:
            out.append(ChatMessage(role="user", content=text, images=message.images))
    return out
