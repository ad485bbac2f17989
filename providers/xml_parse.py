"""Tool calls read back out of a model's reply, for the XML tool-calling mode (xml_tools.py):
``<invoke>`` elements inside ``<function_calls>`` blocks (or bare), values as raw text with
CDATA sections opaque, a closing tag inside a value told from the real one by position,
and values of non-string parameters JSON-decoded by the tool's schema. It never raises: a
call it cannot read is a ToolCallRequest with ``parse_error`` set and the text it found.
The rules, one by one: docs/providers.md."""

from __future__ import annotations

import json
import re
from typing import Any

from core.messages import ToolCallRequest, ToolSpec

BLOCK_CLOSE = "</function_calls>"
CDATA_OPEN = "<![CDATA["
_BLOCK_OPEN = re.compile(r"<function_calls\s*>")
_INVOKE_OPEN = re.compile(r"""<invoke\s+name\s*=\s*(?:"([^"]*)"|'([^']*)')\s*>""")
_INVOKE_CLOSE = "</invoke>"
_PARAM_OPEN = re.compile(r"""<parameter\s+name\s*=\s*(?:"([^"]*)"|'([^']*)')\s*>""")
_PARAM_CLOSE = "</parameter>"
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_SNIPPET = 120


def parse_tool_calls(text: str, tools: list[ToolSpec]) -> tuple[str, list[ToolCallRequest]]:
    """The prose outside the calls, and the calls."""
    masked = _CDATA.sub(lambda m: CDATA_OPEN + "\0" * len(m.group(1)) + "]]>", text)
    parser = _Parser(text, masked, {t.name: t.parameters for t in tools})
    opens = list(_BLOCK_OPEN.finditer(masked))
    position = 0
    for index, opening in enumerate(opens):
        region_end = opens[index + 1].start() if index + 1 < len(opens) else len(text)
        close = masked.rfind(BLOCK_CLOSE, opening.end(), region_end)
        body_end = close if close != -1 else region_end
        has_invoke = _INVOKE_OPEN.search(masked, opening.end(), body_end) is not None
        if not has_invoke and close == -1:
            continue  # a mention of the tag, not a call: it stays prose
        parser.prose_with_bare_invokes(position, opening.start())
        position = close + len(BLOCK_CLOSE) if close != -1 else region_end
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
    if CDATA_OPEN in without_cdata:
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


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."
