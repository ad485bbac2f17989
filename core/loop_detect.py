"""Tool loop detection (seed 000): the same tool with the same arguments, again and again.

The detector keeps the signatures of the last ``window`` calls. A call whose
signature already appears ``threshold`` times in that window is a loop: the
engine appends a SystemReminder and lets the model decide what to change.
Deterministic (sha256 of canonical JSON), so it is safe in a workflow, and
its state is a plain list that can be carried across continue-as-new.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

DEFAULT_WINDOW = 20
DEFAULT_THRESHOLD = 5  # more than this many identical calls in the window is a loop


def call_signature(name: str, arguments: dict[str, Any]) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:16]
    return f"{name}:{digest}"


class LoopDetector:
    def __init__(
        self,
        recent: list[str] | None = None,
        *,
        window: int = DEFAULT_WINDOW,
        threshold: int = DEFAULT_THRESHOLD,
    ) -> None:
        self.window = window
        self.threshold = threshold
        # The list given is the one kept up to date (the loop state's own), never a copy.
        self.recent: list[str] = recent if recent is not None else []
        del self.recent[:-window]

    def record(self, name: str, arguments: dict[str, Any]) -> bool:
        """Record a call; True when it makes more than ``threshold`` identical calls."""
        signature = call_signature(name, arguments)
        self.recent.append(signature)
        del self.recent[: -self.window]
        return self.recent.count(signature) > self.threshold


LOOP_REMINDER = (
    "You have called `{name}` with the same arguments {count} times recently and it is "
    "not getting you anywhere. You are in a loop: stop repeating this call and try a "
    "different approach, or report what blocks you with the message tool."
)
