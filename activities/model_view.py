"""The model's view of a task: the messages one LLM call sends, rebuilt on the worker.

The workflow sends only what is new (``LlmCallInput``); this service writes it to the context
store, reads the task's entries (this worker's cache, then the store, large outputs expanded),
fills what the store lacks from the workflow (the ``model_context`` query) or lets the prefix
of earlier runs stand in, compacts the whole to the window and converts it to messages,
redacted, with the latest images attached; and it stores the model's reply where the next
view reads it. How and why: docs/turn.md, "The model's view". A gap it cannot fill raises
``ContextGap``. In activities/, not runtime/, because it joins floors runtime/ may not import
(contracts, tools, providers).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import tools
from contracts.activities import ContextPage, LlmCallInput
from core.cache import BoundedCache
from core.compaction import CompactionMemo, CompactionPolicy, compact
from core.entries import AiMessage, Entry, ToolCall, ToolResult, UserMessage, entry_digest, to_chat_messages
from core.images import sniff_image_type
from core.messages import ChatMessage, ContextReport, ImagePart, TurnResult
from core.tool_outcome import MAX_IMAGE_BYTES, ImageRef
from core.turns import CHARS_PER_TOKEN, estimate_tokens
from providers.model_table import MODELS_FILE_ENV
from providers.usage import IMAGE_TOKENS
from runtime.logs import get_logger
from runtime.secrets import SecretStore
from runtime.store import ContextGap, Store

# (workflow id, run id, first seq wanted) -> the workflow's entries from there on.
ContextSource = Callable[[str, str | None, int], Awaitable[ContextPage]]

# The characters of entries this worker keeps in memory for all its tasks (their large
# outputs expanded): past it the least recent task's go, to be read again from the store.
KEEP_CHARS = 200_000_000

# Images sent in one request: those of the latest tool results with one; older ones are
# described by their text (a browsing task takes hundreds of screenshots, each up to
# IMAGE_TOKENS tokens, and the newest show the page as it is now).
MAX_IMAGES_SENT = 3
IMAGE_OMITTED_NOTE = f"[image omitted: only the latest {MAX_IMAGES_SENT} images are sent]"
IMAGE_MISSING_NOTE = "[image not shown: its stored copy is gone; call the tool again to see it]"


@dataclass(frozen=True)
class View:
    """What the model is sent of the task, and what it takes of the window."""

    messages: list[ChatMessage]
    report: ContextReport  # how the entries were cut to fit
    image_tokens: int  # the images' share of the window, beside ``report.tokens_after``


class ModelView:
    """Per worker: each task's entries read and verified so far (each call reads only what is
    new), and the ways to fill a gap."""

    def __init__(self, store: Store, secrets: SecretStore, history: ContextSource | None = None,
                 keep: int = 256, keep_chars: int = KEEP_CHARS) -> None:
        self.store, self.secrets = store, secrets
        # Where entries this worker's store lacks are read from: the task's workflow (a query,
        # so nothing is added to the history). None: such a gap asks the workflow for a resend.
        self.history = history
        # Their compaction's costs, turns and summary lines, so a long task's call works out
        # only what is new (core/compaction.py, CompactionMemo). A memo holds its task's
        # entries, so it goes when they do.
        self._memos: dict[str, CompactionMemo] = {}
        self._cache: BoundedCache[str, list[Entry]] = BoundedCache(  # the most recent tasks
            keep, keep_chars, on_evict=lambda task: self._memos.pop(task, None))

    async def build(self, inp: LlmCallInput, run_id: str | None, system_tokens: int, vision: bool) -> View:
        """The view for one call; ``vision``: the model is sent images, which the window must
        leave room for beside the text and the ``system_tokens`` of prompt and tools."""
        entries = await self.entries(inp, run_id)
        shown = sum(len(_images(e)) for e in entries) if vision else 0
        image_tokens = min(shown, MAX_IMAGES_SENT) * IMAGE_TOKENS
        memo = self._memos.setdefault(inp.context_id, CompactionMemo())
        view = compact(entries, CompactionPolicy(
            context_window=inp.context_window, system_tokens=system_tokens + image_tokens,
            compact_keys=tools.COMPACT_KEYS,
        ), memo)
        report = ContextReport(
            entries=len(entries), compacted_turns=view.compacted_turns, dropped_turns=view.dropped_turns,
            truncated_results=view.truncated_results, tokens_before=view.tokens_before,
            tokens_after=view.tokens_after,
        )
        return View(await self.messages(view.entries, inp.model, vision), report, image_tokens)

    def _forget(self, task: str) -> None:
        """Drop a task's entries and its memo: they no longer match what the task has."""
        self._cache.pop(task)
        self._memos.pop(task, None)

    async def entries(self, inp: LlmCallInput, run_id: str | None) -> list[Entry]:
        """Entries 0..total-1 after writing what the input brings (its new entries, the
        prefix of a resend); a gap is filled from the workflow once, else raised."""
        if inp.prefix is not None:
            await self.store.put_prefix(inp.context_id, inp.base, inp.prefix)
        if inp.new_entries:
            await self.store.put(inp.context_id, inp.new_entries)
        try:
            try:
                return await self._read(inp)
            except ContextGap as gap:
                self._forget(inp.context_id)
                if not await self._repair(inp, run_id, gap):
                    raise
                return await self._read(inp)
        except ContextGap:
            self._forget(inp.context_id)
            raise

    async def _repair(self, inp: LlmCallInput, run_id: str | None, gap: ContextGap) -> bool:
        """Fill the store from the workflow's own state (another worker served the task, or this
        host lost its disk). False when the workflow cannot be asked."""
        if self.history is None:
            return False
        after = min(gap.missing + gap.mismatched)
        try:
            page = await self.history(inp.task_id, run_id, after)
        except Exception as err:  # the query is an optimisation: the resend still works
            get_logger(workflow_id=inp.task_id).warning("context repair query failed", error=str(err))
            return False
        if page.prefix or after < page.base:
            await self.store.put_prefix(inp.context_id, page.base, page.prefix)
        await self.store.put(inp.context_id, page.entries)
        return True

    async def _read(self, inp: LlmCallInput) -> list[Entry]:
        """Entries 0..total-1 from this worker's cache and store; where the store has lost the
        entries of earlier runs, the prefix the workflow sent from its history stands in."""
        cached = self._cache.get(inp.context_id) or []
        first_new = min([len(cached), inp.total, *(e.seq for e in inp.new_entries), *inp.expect])
        try:
            fresh = await self.store.load_range(inp.context_id, first_new, inp.total, inp.expect)
        except ContextGap as gap:
            stand_in = await self.store.get_prefix(inp.context_id)
            if stand_in is None or gap.mismatched or max(gap.missing) >= stand_in[0]:
                raise
            base, prefix = stand_in
            run = await self.store.load_range(inp.context_id, base, inp.total, inp.expect)
            return prefix + [await self._expand(e) for _, e in run]  # not cached: seqs no longer index it
        # What the input brings is checked too: a call the workflow cancelled may still store its
        # reply at the seq the workflow has since given a person's message (``store_reply``).
        stale = [e.seq for e in inp.new_entries if first_new <= e.seq < inp.total
                 and fresh[e.seq - first_new][0] != entry_digest(e)]
        if stale:
            raise ContextGap([], stale)
        expanded = [await self._expand(e) for _, e in fresh]
        chars = (self._cache.weight(inp.context_id) if first_new == len(cached) else _chars(cached[:first_new]))
        return self._cache.put(inp.context_id, cached[:first_new] + expanded, chars + _chars(expanded))

    async def _expand(self, entry: Entry) -> Entry:
        if isinstance(entry, ToolResult) and entry.blob:
            full = await self.store.get_blob(entry.blob)
            if full is not None:
                return entry.model_copy(update={"content": full})
        return entry

    async def store_reply(self, inp: LlmCallInput, result: TurnResult) -> str:
        """Write the reply's entry (``ToolCall``, or ``AiMessage`` for text alone) at the seq the
        workflow will give it (the next, unless it appends a provider's notice first), as the
        tool activity does with its result. Returns the digest the seq then holds: the reply's,
        which the workflow sends instead of the reply (already in the history once), or another's
        (the seq was taken), and then the workflow sends the reply itself."""
        seq = inp.total + (1 if result.notice else 0)  # a provider's notice goes first (workflows/thinking.py)
        entry: Entry = (ToolCall(seq=seq, turn=inp.turn, text=result.content, calls=result.tool_calls,
                                 thinking=result.thinking) if result.tool_calls
                        else AiMessage(seq=seq, turn=inp.turn, text=result.content, thinking=result.thinking))
        (held,) = await self.store.put_new(inp.context_id, [entry])  # never over what the workflow put there
        return held

    async def messages(self, view: list[Entry], model: str, vision: bool) -> list[ChatMessage]:
        """The entries as the model's messages, redacted (entries were redacted where they
        entered; this is the last line of defence), with the latest ``MAX_IMAGES_SENT`` images
        (of tool results, or sent by a person with a message) attached after the redaction
        (base64 holds no text a secret could be read in, and rewriting it would break the image)."""
        placed = [(i, n) for i, e in enumerate(view) for n in range(len(_images(e)))]
        latest = set(placed[-MAX_IMAGES_SENT:])
        messages: list[ChatMessage] = []
        for index, entry in enumerate(view):
            converted = self.secrets.redact_obj(to_chat_messages([entry]))  # one message, or none
            images = _images(entry)
            if images and converted:
                shown = [(image, (index, n) in latest) for n, image in enumerate(images)]
                converted[0] = await self._with_images(converted[0], shown, model, vision)
            messages += converted
        return messages

    async def _with_images(
        self, message: ChatMessage, images: list[tuple[ImageRef, bool]], model: str, vision: bool
    ) -> ChatMessage:
        """A message with images (a tool result's, a person's): each attached, or the note that
        says why it is not. ``images``: each with whether it is among the latest sent."""
        parts: list[ImagePart] = []
        notes: list[str] = []
        for image, latest in images:
            if not vision:
                note = (f'[image not shown: the model {model} does not take images; mark it "vision": true '
                        f"in {MODELS_FILE_ENV} if it does]")
            elif not latest:
                note = IMAGE_OMITTED_NOTE
            else:
                data = await self.store.get_blob(image.digest) if image.digest else None
                if data is None:
                    note = IMAGE_MISSING_NOTE
                elif len(data) > _base64_length(MAX_IMAGE_BYTES):
                    note = "[image not shown: it is over the size limit]"
                elif (media_type := _image_type(data)) is None:
                    note = "[image not shown: its stored data is not a PNG, JPEG, GIF or WebP image]"
                else:
                    parts.append(ImagePart(media_type=media_type, data=data))
                    continue
            if note not in notes:
                notes.append(note)
        content = "\n".join([message.content, *notes]) if message.content else "\n".join(notes)
        return message.model_copy(update={"images": parts, "content": content})


def _chars(entries: list[Entry]) -> int:
    """About the characters ``entries`` hold (what the cache of them weighs)."""
    return sum(estimate_tokens(e) for e in entries) * CHARS_PER_TOKEN


def _images(entry: Entry) -> list[ImageRef]:
    """The images an entry brings: a tool result's, or those a person sent with a message."""
    if isinstance(entry, ToolResult):
        return [entry.image] if entry.image is not None else []
    return entry.images if isinstance(entry, UserMessage) else []


def _image_type(data: str) -> str | None:
    """The type of the image in ``data`` (base64) by its bytes, None when it is no base64 or
    no image of the four types. A server refuses the whole request for a broken image (and
    Anthropic for one sent as another type than its bytes are), and the image would be in
    every request after: checked here, it is a note instead and the task goes on."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return sniff_image_type(raw[:16])


def _base64_length(size: int) -> int:
    """Characters of base64 for ``size`` bytes."""
    return -(-size // 3) * 4
