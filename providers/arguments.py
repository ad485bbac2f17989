"""Tool-call arguments as they go back to a server in the conversation history.

A call whose arguments were not a JSON object (``parse_error``) keeps the model's raw
text in ``arguments_raw``. Sending that text back verbatim breaks servers that parse the
arguments of earlier calls: vLLM answers 400 ("Expecting ',' delimiter: ..."), llama.cpp
500 ("Failed to parse tool call arguments as JSON"), Ollama 400 ("invalid tool call
arguments"), and Anthropic's ``tool_use.input`` must be an object. Every wire sends this
valid placeholder object instead, with the raw text (cut) under one key, so the model can
still see what it wrote; the tool result already told it the arguments were invalid
(tools/registry.py ``execute``).
"""

from __future__ import annotations

from typing import Any

from core.messages import ToolCallRequest

INVALID_ARGUMENTS = "_invalid_arguments"
RAW_LIMIT = 2000  # characters of the raw text kept in the placeholder


def history_arguments(call: ToolCallRequest) -> dict[str, Any]:
    """The call's arguments object, or for arguments that did not parse the placeholder
    ``{"_invalid_arguments": "<raw text, at most 2000 characters>"}``."""
    if call.parse_error is None:
        return call.arguments
    return {INVALID_ARGUMENTS: (call.arguments_raw or "")[:RAW_LIMIT]}
