"""The XML tool-calling fallback (seed 000 "anthropic_xml"): tools in the prompt, calls in the text.

Some proxies drop or mangle the API's ``tools`` field. In this mode the request has
no ``tools``: ``tools_prompt()`` describes them in a ``<functions>`` block in the
system prompt, the model writes its call as XML in its reply, and
``parse_tool_calls()`` takes it back out. Earlier calls and results go back into the
conversation as text (``render_tool_call``, ``render_tool_result``), because the
wire has no tool roles here; a result's images ride on that user message, which both
wires send as text followed by image parts. ``XmlToolsProvider`` wraps an OpenAI or Anthropic
provider (the wire) and does all of this around one call.

The call format:

    <function_calls>
    <invoke name="TOOL">
    <parameter name="ARG">VALUE</parameter>
    </invoke>
    </function_calls>

How ``parse_tool_calls`` reads a reply (it never raises):
  * Calls are ``<invoke>`` elements inside ``<function_calls>`` blocks; a reply may hold
    several blocks and a block several invokes. A bare ``<invoke>`` outside any block
    is accepted too (models sometimes drop the wrapper). Everything outside the
    calls is the prose, returned with its pieces stripped and joined by a blank line.
  * ``<![CDATA[...]]>`` sections are opaque: tag-like text inside them is never a tag.
  * Values are raw text (no entity decoding), so ``<div>`` in a value is just text.
    A closing tag inside a value is told from the real one by position: a value
    ends at the LAST ``</parameter>`` before the next parameter (or the end of the
    invoke); the next parameter only starts where a ``<parameter name=...>``
    directly follows a ``</parameter>``. Invokes are split the same way
    (``</invoke>`` then ``<invoke name=...>``), and a block ends at its last
    ``</function_calls>`` before the next ``<function_calls>``. So only a value that
    itself contains ``</parameter>`` followed by ``<parameter name=...>`` (or the same
    for ``invoke``), or ``<function_calls>``, needs CDATA.
  * A value that is only a CDATA section (whitespace around it aside) is its content,
    exactly; otherwise CDATA sections are replaced by their content in place. A
    value laid out on its own lines (starting and ending with a newline) loses
    those two newlines.
  * When the tool's schema gives the parameter a type other than string, the value
    is JSON-decoded; if that fails the string is kept for the tool layer to coerce
    or reject. Unknown tools and parameters keep their string values.
  * A ``<function_calls>`` block without a closing tag is fine (models stop there).
    An unclosed ``<invoke>`` or ``<parameter>``, an unterminated CDATA section, an
    empty tool name, or an invoke (or closed block) holding other content instead of
    parameters (invokes) becomes a ToolCallRequest with ``parse_error`` set and
    ``arguments_raw`` holding the text. A reply without any call comes back
    unchanged, with no calls.
  * Ids are ``xml_call_<n>``, numbered from 0 in reply order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Protocol

from core.messages import ChatMessage, LlmRequest, SystemPrompt, ToolCallRequest, ToolSpec, TurnResult
from providers.arguments import history_arguments

_BLOCK_TAG = "<function_calls>"
_BLOCK_OPEN = re.compile(r"<function_calls\s*>")
_BLOCK_CLOSE = "</function_calls>"
_INVOKE_OPEN = re.compile(r"""<invoke\s+name\s*=\s*(?:"([^"]*)"|'([^']*)')\s*>""")
_INVOKE_CLOSE = "</invoke>"
_PARAM_OPEN = re.compile(r"""<parameter\s+name\s*=\s*(?:"([^"]*)"|'([^']*)')\s*>""")
_PARAM_CLOSE = "</parameter>"
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_CDATA_OPEN = "<![CDATA["
_NEEDS_CDATA = re.compile(r"</?(?:function_calls|invoke|parameter)\b|<!\[CDATA\[|\]\]>")
_SNIPPET = 120

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
    return f"{_BLOCK_TAG}\n{invoke}\n{_BLOCK_CLOSE}"


def render_tool_result(name: str, content: str) -> str:
    """A tool result as the user message that answers a call."""
    return (
        "<function_results>\n<result>\n"
        f"<tool_name>{name}</tool_name>\n<stdout>\n{content}\n</stdout>\n"
        "</result>\n</function_results>"
    )


def parse_tool_calls(text: str, tools: list[ToolSpec]) -> tuple[str, list[ToolCallRequest]]:
    """The prose outside the calls, and the calls (see the module docstring for the rules)."""
    masked = _CDATA.sub(lambda m: _CDATA_OPEN + "\0" * len(m.group(1)) + "]]>", text)
    parser = _Parser(text, masked, {t.name: t.parameters for t in tools})
    opens = list(_BLOCK_OPEN.finditer(masked))
    position = 0
    for index, opening in enumerate(opens):
        region_end = opens[index + 1].start() if index + 1 < len(opens) else len(text)
        close = masked.rfind(_BLOCK_CLOSE, opening.end(), region_end)
        body_end = close if close != -1 else region_end
        has_invoke = _INVOKE_OPEN.search(masked, opening.end(), body_end) is not None
        if not has_invoke and close == -1:
            continue  # a mention of the tag, not a call: it stays prose
        parser.prose_with_bare_invokes(position, opening.start())
        position = close + len(_BLOCK_CLOSE) if close != -1 else region_end
        if has_invoke:
            parser.invokes(opening.end(), body_end, bare=False)
        elif masked[opening.end():close].strip():
            found = _snippet(text[opening.end():close])
            problem = f"<function_calls> holds no <invoke name=...>: {found}"
            parser.error("", text[opening.start():position], problem)
    parser.prose_with_bare_invokes(position, len(text))
    if not parser.calls:
        return text, []
    return "\n\n".join(p for p in (s.strip() for s in parser.prose) if p), parser.calls


class _Parser:
    def __init__(self, text: str, masked: str, schemas: dict[str, dict[str, Any]]) -> None:
        self.text, self.masked, self.schemas = text, masked, schemas
        self.prose: list[str] = []
        self.calls: list[ToolCallRequest] = []

    def prose_with_bare_invokes(self, start: int, end: int) -> None:
        first = _INVOKE_OPEN.search(self.masked, start, end)
        if first is None:
            self.prose.append(self.text[start:end])
            return
        self.prose.append(self.text[start:first.start()])
        self.invokes(first.start(), end, bare=True)

    def invokes(self, start: int, end: int, *, bare: bool) -> None:
        """Every invoke in [start, end); in bare mode the text after each one is prose."""
        opens = _openers(self.masked, _INVOKE_OPEN, _INVOKE_CLOSE, start, end, every=bare)
        for index, opening in enumerate(opens):
            chunk_end = opens[index + 1].start() if index + 1 < len(opens) else end
            close = self.masked.rfind(_INVOKE_CLOSE, opening.end(), chunk_end)
            name = opening.group(1) if opening.group(1) is not None else opening.group(2)
            if close == -1:
                raw = self.text[opening.start():chunk_end]
                self.error(name, raw, f'<invoke name="{name}"> is not closed with </invoke> (reply cut off?)')
                continue
            self.invoke(name, opening.start(), opening.end(), close)
            if bare:
                self.prose.append(self.text[close + len(_INVOKE_CLOSE):chunk_end])

    def invoke(self, name: str, start: int, body_start: int, body_end: int) -> None:
        raw = self.text[start:body_end + len(_INVOKE_CLOSE)]
        if not name.strip():
            self.error(name, raw, "<invoke> needs a tool name: <invoke name=\"TOOL\">")
            return
        opens = _openers(self.masked, _PARAM_OPEN, _PARAM_CLOSE, body_start, body_end, every=False)
        if not opens and self.masked[body_start:body_end].strip():
            found = _snippet(self.text[body_start:body_end])
            expected = '<parameter name="...">VALUE</parameter>'
            self.error(name, raw, f"expected {expected} inside <invoke>, found: {found}")
            return
        arguments: dict[str, Any] = {}
        properties = self.schemas.get(name, {}).get("properties")
        for index, opening in enumerate(opens):
            chunk_end = opens[index + 1].start() if index + 1 < len(opens) else body_end
            close = self.masked.rfind(_PARAM_CLOSE, opening.end(), chunk_end)
            key = opening.group(1) if opening.group(1) is not None else opening.group(2)
            if close == -1:
                self.error(name, raw, f'<parameter name="{key}"> is not closed with </parameter>')
                return
            value, problem = _value(self.text[opening.end():close])
            if problem is not None:
                self.error(name, raw, f'parameter "{key}": {problem}')
                return
            schema = properties.get(key) if isinstance(properties, dict) else None
            arguments[key] = _convert(value, schema)
        self.calls.append(ToolCallRequest(id=self._next_id(), name=name, arguments=arguments))

    def error(self, name: str, raw: str, message: str) -> None:
        call = ToolCallRequest(id=self._next_id(), name=name, arguments_raw=raw, parse_error=message)
        self.calls.append(call)

    def _next_id(self) -> str:
        return f"xml_call_{len(self.calls)}"


def _openers(
    masked: str, pattern: re.Pattern[str], closer: str, start: int, end: int, *, every: bool
) -> list[re.Match[str]]:
    """Opening tags that start an element: the first one, then only those right after a closer."""
    found: list[re.Match[str]] = []
    for match in pattern.finditer(masked, start, end):
        if every or not found or masked[found[-1].end():match.start()].rstrip().endswith(closer):
            found.append(match)
    return found


def _value(raw: str) -> tuple[str, str | None]:
    without_cdata = _CDATA.sub("", raw)
    if _CDATA_OPEN in without_cdata:
        return "", "<![CDATA[ is not closed with ]]>"
    sections = [m.group(1) for m in _CDATA.finditer(raw)]
    if sections and not without_cdata.strip():
        return "".join(sections), None
    value = _CDATA.sub(lambda m: m.group(1), raw)
    if len(value) >= 2 and value.startswith("\n") and value.endswith("\n"):
        value = value[1:-1]
    return value, None


def _convert(value: str, schema: Any) -> Any:
    options = [schema]
    if isinstance(schema, dict):
        options += [*schema.get("anyOf", []), *schema.get("oneOf", [])]
    types: set[str] = set()
    for option in options:
        kind = option.get("type") if isinstance(option, dict) else None
        types.update([kind] if isinstance(kind, str) else kind if isinstance(kind, list) else [])
    if not types or "string" in types:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _render_value(value: Any) -> str:
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if _NEEDS_CDATA.search(value) or value.startswith("\n") or value.endswith("\n"):
        return _CDATA_OPEN + value.replace("]]>", "]]]]><![CDATA[>") + "]]>"
    return value


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."


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
