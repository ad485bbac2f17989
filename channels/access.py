"""Who may do what on a channel (issue 31, item 4): the people who may talk to the agent, and
the smaller set who may decide its calls. Every adapter asks here, so the rule is one rule.

A button or reaction that approves or denies needs an approver; anything else (a message,
"stop") needs an allowed user. A refusal is logged by the adapter and, where the platform
has a quiet way (a Slack ephemeral message, a Telegram callback answer), told to the person.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator


class ChannelAccess(BaseModel):
    allowed_users: list[str] = Field(default_factory=list)
    approvers: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _approvers_are_allowed(self) -> ChannelAccess:
        strangers = set(self.approvers) - set(self.allowed_users)
        if strangers:
            raise ValueError(f"approvers must be allowed users too: {sorted(strangers)}")
        return self

    def refusal(self, author: str, reaction: str | None = None) -> str | None:
        """Why ``author`` may not do this, or None when they may."""
        if reaction in ("approve", "deny"):
            return None if author in self.approvers else "Only approvers may decide a call."
        return None if author in self.allowed_users else "You are not allowed to talk to this agent."
