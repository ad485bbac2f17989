"""The channel gateway: the adapters of ``channels.toml``, and the worker that runs their
conversations and sends their messages.

Each inbound message, its secrets redacted, goes to its conversation workflow by
signal-with-start under an id derived from the chat (``conversation_id``); the adapter moves
its platform position on only after that returns. So a gateway killed mid-way and started
again, or two gateways at once, hand a message over twice at most, and the conversation
handles its event id once. The gateway's worker, on its own task queue, runs the
conversation workflows and the ``deliver`` activity (the adapters' send side); the tasks run
on the workers' queue. The design: docs/channels.md.
"""

from __future__ import annotations

import asyncio
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import Worker

from channels.base import Adapter, within_limit
from channels.config import ChannelConfig, load_channels
from channels.console import handed_over
from channels.deliver import DeliverActivities
from contracts.channels import (
    GATEWAY_TASK_QUEUE,
    INBOUND_SIGNAL,
    ChatRef,
    ConversationInput,
    InboundMessage,
    conversation_id,
)
from core.settings import CodecSettings
from runtime.secrets import SecretStore
from temporal.client import ensure_search_attributes
from temporal.plugin import AgentPlugin
from workflows.conversation import ConversationWorkflow

# What each platform's adapter is built on: what to install when it is missing.
LIBRARIES = {"matrix": "matrix-nio", "slack": "slack_sdk", "telegram": "python-telegram-bot", "webhook": "aiohttp"}


def build_adapter(config: ChannelConfig, state_dir: Path) -> Adapter | str:
    """The channel's adapter (``channels/<type>.py``'s ``adapter``), or one line saying why not."""
    try:
        module = importlib.import_module(f"channels.{config.type}")
    except ModuleNotFoundError as err:
        if err.name == f"channels.{config.type}":
            return f"channel [{config.name}]: no adapter for type {config.type!r}"
        library = LIBRARIES.get(config.type, err.name)
        return (f"channel [{config.name}] is off: {library} is not installed "
                f"(pip install 'durable-agent[channels]')")
    return module.adapter(config, state_dir)


def load_adapters(path: Path, secrets: SecretStore, state_dir: Path) -> tuple[list[tuple[ChannelConfig, Adapter]], list[str]]:
    """The adapters of the channels file at ``path``, and one line for each channel that is off
    (its library missing). ValueError: a file or table that cannot be used (a key the platform
    does not take, or lacking one it needs)."""
    adapters, off = [], []
    for config in load_channels(path, secrets):
        adapter = build_adapter(config, state_dir)
        if isinstance(adapter, str):
            off.append(adapter)
        else:
            adapters.append((config, adapter))
    return adapters, off


def gateway_plugin(adapters: dict[str, Adapter], codec: CodecSettings | None = None) -> AgentPlugin:
    """The gateway worker's plugin: the conversation workflow, and the activities that reach the
    channels through their ``adapters`` (by channel name)."""
    activities = DeliverActivities(adapters)
    return AgentPlugin("gateway", workflows=[ConversationWorkflow],
                       activities=[activities.deliver, activities.fetch_attachments], codec=codec)


@dataclass
class Defaults:
    """What a conversation's tasks start with: the worker's defaults."""

    model: str
    provider: str
    task_queue: str
    data_dir: Path
    context_window: int = 128_000
    secrets: SecretStore = field(default_factory=SecretStore)


class Gateway:
    def __init__(self, client: Client, channels: list[tuple[ChannelConfig, Adapter]], defaults: Defaults,
                 queue: str = GATEWAY_TASK_QUEUE, *, register: bool = False) -> None:
        """``register``: the search attributes are registered when missing (the embedded server)."""
        self.client, self.channels, self.defaults, self.queue = client, channels, defaults, queue
        self.register = register
        self.configs = {config.name: config for config, _ in channels}
        self.search_attributes = False  # whether the tasks may set theirs: known once running
        self.worker = Worker(client, task_queue=queue, plugins=[gateway_plugin({a.name: a for _, a in channels})])

    async def run(self) -> None:
        """Until cancelled: the worker, and every adapter's receive loop."""
        self.search_attributes = await ensure_search_attributes(self.client, register=self.register)
        try:
            async with self.worker:
                await asyncio.gather(*(adapter.receive(self.inbound) for _, adapter in self.channels))
        finally:
            for _, adapter in self.channels:
                await adapter.close()

    async def inbound(self, message: InboundMessage) -> None:
        """Hand ``message`` to its conversation; returns once Temporal has it."""
        config = self.configs[message.chat.channel]
        message = message.model_copy(update={"text": self.defaults.secrets.redact(message.text),
                                              "approver": message.author in config.approvers,
                                              "attachments": within_limit(message.attachments)})
        conversation = conversation_id(message.chat)
        await self.client.start_workflow(
            ConversationWorkflow.run, self.conversation_input(message.chat), id=conversation,
            task_queue=self.queue, start_signal=INBOUND_SIGNAL, start_signal_args=[message],
        )
        handed_over(message, conversation)

    def conversation_input(self, chat: ChatRef) -> ConversationInput:
        config, d = self.configs[chat.channel], self.defaults
        if config.workspace:
            workspace = Path(config.workspace).expanduser()
        else:  # a workspace per conversation, under the data directory
            workspace = d.data_dir / "conversations" / re.sub(r"[^A-Za-z0-9_.-]", "_", chat.key)
        workspace.mkdir(parents=True, exist_ok=True)
        return ConversationInput(
            chat=chat, session=f"chat:{chat.key}", workspace=str(workspace.resolve()), model=d.model,
            provider=d.provider, task_queue=d.task_queue,
            context_window=d.context_window, search_attributes=self.search_attributes,
        )
