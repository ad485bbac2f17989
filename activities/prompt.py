"""The prompt context activity: at task start, read what the dynamic part of the system prompt
shows (MEMORY.md, AGENTS.md, the skills catalogue, preferences) once, store the snapshot in
the context store, and give the workflow its digest. Every LLM call of the task then renders
the same prompt (so the provider's prompt cache holds and retries are identical), and the
history holds a 32-character digest instead of the text."""

from __future__ import annotations

from pathlib import Path

from temporalio import activity

from contracts.activities import PROMPT_CONTEXT_ACTIVITY, PromptContextInput
from core.settings import Settings
from prompts import load_prompt_context
from runtime.paths import data_dir
from runtime.secrets import SecretStore
from runtime.store import ContextStore, Store, as_store
from tools.skills import skills_dirs


class PromptActivities:
    def __init__(self, store: Store | ContextStore, secrets: SecretStore, settings: Settings) -> None:
        self.store = as_store(store)
        self.secrets = secrets
        self.settings = settings

    @activity.defn(name=PROMPT_CONTEXT_ACTIVITY)
    async def prompt_context(self, inp: PromptContextInput) -> str:
        workspace = Path(inp.workspace)
        context = load_prompt_context(workspace, data_dir=data_dir(self.settings.paths), session=inp.session,
                                      skills_dirs=skills_dirs(workspace, self.settings.skills.dirs),
                                      settings=self.settings.prompt)
        return await self.store.put_blob(self.secrets.redact(context.model_dump_json()))
