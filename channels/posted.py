"""What a platform without idempotency keys (Slack, Telegram) was already sent, by message key,
so a retried ``deliver`` activity does not post twice (issue 31, item 5: "recorded otherwise").

An answer split in pieces is posted piece by piece; a 429 on the third piece fails the activity
after two were posted. Temporal retries it with the same ``OutboundMessage.key``, and the
adapter skips the pieces this record holds. The record is a small JSON file in the gateway's
state directory (the last ``KEPT`` keys), written whole after each post, so a gateway
restarted, or another gateway taking the retry on the same host, skips them too. Without a
state directory it lives in memory only.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

KEPT = 1000  # keys remembered: a retry comes within minutes, long before a thousand more messages


def record_path(state_dir: Path | None, channel: str) -> Path | None:
    """Where channel ``channel`` keeps its record, in the gateway's state directory."""
    return state_dir / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', channel)}.posted.json" if state_dir else None


class PostedRecord:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._ids: dict[str, list[str]] = {}
        if path is not None and path.exists():
            self._ids = json.loads(path.read_text(encoding="utf-8"))

    def ids(self, key: str) -> list[str]:
        """The platform ids of the pieces of ``key`` already posted, in order."""
        return list(self._ids.get(key, []))

    def add(self, key: str, message_id: str) -> None:
        self._ids.setdefault(key, []).append(message_id)
        while len(self._ids) > KEPT:
            del self._ids[next(iter(self._ids))]
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(".partial")
            partial.write_text(json.dumps(self._ids), encoding="utf-8")
            os.replace(partial, self.path)  # whole or not at all: a crash keeps the last record
