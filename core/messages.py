"""The one internal message model every provider adapter maps to and from.

Pure pydantic, no I/O: the workflow imports it, activities pass it across the
Temporal boundary, providers convert it to their wire format. Nothing here
knows about HTTP.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, model_validator

from core.lean import omitted, omitted_empty

LEGACY_CHILD_WORKFLOW_TOOL = "spawn"  # see ToolCallRequest._recorded_before_runs_in
# Before thinking was typed, Anthropic's signed blocks were stored in the one thinking string
# as this marker followed by the JSON list of blocks; recorded histories still hold them.
LEGACY_THINKING_MARKER = "anthropic-thinking-v1:"


class ToolCallRequest(BaseModel):
    """One tool call as the model asked for it.

    ``arguments`` is the parsed JSON object; when the model sent something
    that is not a JSON object, ``arguments`` is empty, ``arguments_raw`` keeps
    the text and ``parse_error`` says what was wrong, so the engine can answer
    the call with an error result instead of crashing.
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    arguments_raw: str | None = omitted()
    parse_error: str | None = omitted()
    # Set by the LLM activity from the tool's policy, so the decision is in the history
    # and a replay never re-classifies with newer code.
    # "safe" when missing: the level of almost every call, so it is left out of the JSON (a call
    # recorded before classification existed has no level: it needs approval only where every
    # call does, as a safe one).
    danger: Literal["safe", "moderate", "dangerous"] | None = omitted("safe")
    danger_reason: str | None = omitted()
    # Set by the LLM activity from the tool's declaration: where the engine runs the call,
    # and its detail in one line for the Temporal UI.
    runs_in: Literal["activity", "local_activity", "child_workflow"] = omitted("activity")  # never omitted for "spawn": see below
    summary: str | None = omitted()
    # Set by the LLM activity from the tool's declaration (``ToolDefinition.read_only`` and
    # ``parallel``): the call changes nothing a verification asks about, and it may run beside
    # the reply's other parallel calls. A call recorded before they existed has neither.
    read_only: bool = omitted(False)
    parallel: bool = omitted(False)
    # Set by the LLM activity for a call of a tool this task was not offered: the answer it
    # gets instead of running (naming the tools the task has).
    not_offered: str | None = omitted()
    # Set by the LLM activity for the permission rules (``core/permissions.py``), so the
    # workflow matches them by comparing strings. ``rule_key``: what "allow commands like this"
    # remembers, and the mark that an allow rule may apply at all: a shell call's program,
    # subcommand, target and the words that make it worse (``git push origin --force``) when
    # the line is one plain command, another tool's name;
    # None (compound lines, writes to the rules file, calls recorded before rules): never.
    # ``commands``: a shell call's words, of each simple command it runs (what prefixes match).
    rule_key: str | None = omitted()
    commands: list[list[str]] = omitted_empty(list)

    @model_validator(mode="before")
    @classmethod
    def _recorded_before_runs_in(cls, data: Any) -> Any:
        """Backward compatibility: calls recorded before tools declared ``runs_in`` (histories
        of tasks still running) name the one tool that ran as a child workflow then."""
        if isinstance(data, dict) and "runs_in" not in data and data.get("name") == LEGACY_CHILD_WORKFLOW_TOOL:
            return {**data, "runs_in": "child_workflow"}
        return data

    @property
    def digest(self) -> str:
        """What an approval is bound to: the tool's name and exact arguments (``call_digest``)."""
        return call_digest(self.name, self.arguments)


def call_digest(name: str, arguments: dict[str, Any]) -> str:
    """A short, stable digest of a tool call's name and arguments (canonical JSON): an
    approval names it, and the tool activity runs a call that needs approval only when
    the digest it was given is that of the call itself."""
    canonical = json.dumps([name, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


class ThinkingPart(BaseModel):
    """One piece of the model's reasoning, as the provider sent it.

    ``text`` is the readable reasoning ("" for a redacted part). ``signature`` is the opaque
    token the provider wants back with it: the signature Anthropic puts on a thinking block,
    or the ``encrypted_content`` of an OpenAI Responses reasoning item. ``redacted_data`` is
    the encrypted payload of an Anthropic ``redacted_thinking`` block. These go back to the
    provider unchanged, so they are kept as they came. ``id`` is the provider's id of the item
    the part belongs to (a Responses reasoning item: its summary parts share the id, the
    first one carries the signature). ``provider`` is the wire the part came from
    ("anthropic", "openai", "openai_responses"; None when unknown): a provider sends back
    only its own signed parts.
    """

    text: str = ""
    signature: str | None = None
    redacted_data: str | None = None
    provider: str | None = None
    id: str | None = None  # added with the Responses wire; parts recorded before have None

    @property
    def redacted(self) -> bool:
        return self.redacted_data is not None


REDACTED_THINKING_TEXT = "[redacted thinking]"


def thinking_text(parts: list[ThinkingPart] | None) -> str:
    """Readable thinking for logs and UIs: the parts' text, a redacted part as a note."""
    texts = [REDACTED_THINKING_TEXT if p.redacted else p.text for p in parts or []]
    return "\n\n".join(t for t in texts if t)


def _recorded_thinking(value: Any) -> Any:
    """Backward compatibility: before thinking was typed (histories of tasks still running)
    it was one string; a plain string is one unsigned part, an ``anthropic-thinking-v1:``
    string the Anthropic blocks it encoded (signature and redacted data kept)."""
    if value is None:
        return []
    if not isinstance(value, str):
        return value
    if not value.startswith(LEGACY_THINKING_MARKER):
        return [ThinkingPart(text=value)] if value else []
    try:
        blocks = json.loads(value[len(LEGACY_THINKING_MARKER):])
    except ValueError:
        return []  # as before: an unreadable encoding was neither shown nor sent
    parts = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "thinking":
            signature = block.get("signature")
            parts.append(ThinkingPart(text=str(block.get("thinking") or ""), provider="anthropic",
                                      signature=signature if isinstance(signature, str) else None))
        elif block.get("type") == "redacted_thinking":
            parts.append(ThinkingPart(redacted_data=str(block.get("data") or ""), provider="anthropic"))
    return parts


# The type of every ``thinking`` field; it also reads the string shapes recorded before.
Thinking = Annotated[list[ThinkingPart], BeforeValidator(_recorded_thinking)]


class ImagePart(BaseModel):
    """An image shown to the model with a message: the bytes themselves, base64, as every wire
    that takes images wants them. Only the LLM activity makes these, from the context store's
    blob of a tool result's image (``core.tool_outcome.ImageRef``), and only for a model that
    takes images; they live as long as one request and never enter the workflow history."""

    media_type: str  # image/png, image/jpeg, image/gif or image/webp (core.images.sniff_image_type)
    data: str  # base64, no ``data:`` prefix


class ChatMessage(BaseModel):
    """A message in the LLM's view of the conversation (system prompt excluded).

    ``images`` go with a ``tool`` message (the images its call produced) or a ``user`` message
    (tool results as text, on the XML path); each wire puts them where its API accepts images.
    Left out of the JSON when empty, so a message without images serializes as it always did.
    """

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None  # tool name, on role == "tool"
    thinking: Thinking = Field(default_factory=list)
    images: list[ImagePart] = Field(default_factory=list, exclude_if=lambda v: not v)


class ToolSpec(BaseModel):
    """What the model is told about a tool: name, description, JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = omitted(0)
    cache_write_tokens: int = omitted(0)
    # True when some of these counts are our estimate (providers/usage.py), not the server's:
    # it reported no usage. Usage recorded before this field existed reads as reported.
    estimated: bool = omitted(False)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            estimated=self.estimated or other.estimated,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class ContextReport(BaseModel):
    """What the LLM activity did to the context before the call (compaction, window guard)."""

    entries: int = 0
    compacted_turns: int = 0
    dropped_turns: int = 0
    truncated_results: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


class TurnResult(BaseModel):
    """Every provider response, whatever its wire format, becomes this."""

    content: str = omitted("")
    tool_calls: list[ToolCallRequest] = omitted_empty(list)
    source: Literal["native", "xml"] = omitted("native")
    thinking: Thinking = omitted_empty(list)
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = omitted("tool_calls")  # the usual reason, left out (None is written)
    model: str | None = omitted()
    provider: str | None = omitted()  # which configured provider answered
    cost_usd: float = omitted(0.0)  # priced by the activity from the model table
    cost_estimated: bool = omitted(False)  # the model has no price row, or the usage was estimated
    # Set by the LLM activity when the turn compacted or cut the context (None: nothing to report).
    context: ContextReport | None = omitted()
    worker_queue: str | None = omitted()  # set by the LLM activity: the task queue of its worker alone
    # Set by the LLM activity for a reply with tool calls: the digest of the ``ToolCall`` entry it
    # wrote to the context store at the next seq, so the workflow need not send it back.
    stored_digest: str | None = omitted()
    # Set by a provider that changed how it talks to the endpoint (an empty stream answered
    # unstreamed): one line the workflow records for people, never sent to the model.
    notice: str | None = omitted()


class SystemPrompt(BaseModel):
    """The system prompt in two parts: ``stable`` is the same for every task (a provider with
    prompt caching caches it), ``dynamic`` holds what changes (workspace, date, tools, ...)."""

    stable: str = ""
    dynamic: str = ""

    def text(self) -> str:
        """The whole prompt as one string, the two parts joined at one newline (for a wire
        that takes a single system text)."""
        if not self.dynamic:
            return self.stable
        return f"{self.stable.rstrip()}\n{self.dynamic.lstrip()}"


class LlmRequest(BaseModel):
    """What a provider adapter needs to make one call."""

    model: str
    system: SystemPrompt
    messages: list[ChatMessage]
    tools: list[ToolSpec] = Field(default_factory=list)
    max_tokens: int | None = None
    # A small window: the shortest system prompt and tool descriptions (XML tool calling).
    compact: bool = False
    temperature: float | None = None
    stream: bool = False
    # Extended thinking (Anthropic): the token budget of each answer's thinking; None: off.
    thinking_budget: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _plain_system_text(cls, data: Any) -> Any:
        """A plain string as ``system`` is all stable (no dynamic part)."""
        if isinstance(data, dict) and isinstance(data.get("system"), str):
            return {**data, "system": SystemPrompt(stable=data["system"])}
        return data
