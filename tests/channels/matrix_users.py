"""People in Matrix rooms for the gateway tests: matrix-nio clients of the real Synapse,
reading what the agent posts from their own sync."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from nio import AsyncClient, LoginResponse, RoomCreateResponse, RoomSendResponse, SyncResponse

WAIT_S = 60.0


class ChatUser:
    def __init__(self, homeserver: str, user_id: str) -> None:
        self.user_id = user_id
        self.client = AsyncClient(homeserver, user_id)
        self.events: dict[str, list[dict[str, Any]]] = {}  # room -> event sources, in order
        self.token: str | None = None

    async def login(self, password: str) -> ChatUser:
        response = await self.client.login(password)
        assert isinstance(response, LoginResponse), response
        await self.sync()
        return self

    async def sync(self) -> None:
        response = await self.client.sync(timeout=500, since=self.token)
        assert isinstance(response, SyncResponse), response
        self.token = response.next_batch
        for room_id in response.rooms.invite:
            await self.client.join(room_id)
        for room_id, room in response.rooms.join.items():
            self.events.setdefault(room_id, []).extend(e.source for e in room.timeline.events)

    async def create_room(self, invite: list[str]) -> str:
        response = await self.client.room_create(invite=invite)
        assert isinstance(response, RoomCreateResponse), response
        return response.room_id

    async def say(self, room: str, text: str) -> str:
        response = await self.client.room_send(room, "m.room.message", {"msgtype": "m.text", "body": text})
        assert isinstance(response, RoomSendResponse), response
        return response.event_id

    async def react(self, room: str, event_id: str, key: str) -> str:
        content = {"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}}
        response = await self.client.room_send(room, "m.reaction", content)
        assert isinstance(response, RoomSendResponse), response
        return response.event_id

    async def until(self, found: Callable[[], Any], what: str, timeout_s: float = WAIT_S) -> Any:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not (result := found()):
            assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
            await self.sync()
        return result

    def notices(self, room: str, sender: str) -> list[dict[str, Any]]:
        """The agent's messages in ``room`` (edits excluded), in order."""
        return [e for e in self.events.get(room, []) if e.get("sender") == sender and e.get("type") == "m.room.message"
                and e["content"].get("msgtype") == "m.notice" and "m.new_content" not in e["content"]]

    def bodies(self, room: str, sender: str) -> list[str]:
        return [e["content"]["body"] for e in self.notices(room, sender)]

    def edits(self, room: str, sender: str) -> list[str]:
        return [e["content"]["m.new_content"]["body"] for e in self.events.get(room, [])
                if e.get("sender") == sender and "m.new_content" in e.get("content", {})]

    def visible(self, room: str, sender: str) -> list[str]:
        """What a person sees of ``sender``'s messages in ``room``, in order: each as its last
        edit left it, the redacted ones gone."""
        events = self.events.get(room, [])
        redacted = {e.get("redacts") or e["content"].get("redacts") for e in events if e.get("type") == "m.room.redaction"}
        edited: dict[str, str] = {}
        for e in events:
            relates = e.get("content", {}).get("m.relates_to") or {}
            if e.get("sender") == sender and relates.get("rel_type") == "m.replace":
                edited[relates["event_id"]] = e["content"]["m.new_content"]["body"]
        return [edited.get(e["event_id"], e["content"]["body"]) for e in self.notices(room, sender)
                if e["event_id"] not in redacted]

    def joined(self, room: str, user_id: str) -> bool:
        return any(e.get("type") == "m.room.member" and e.get("state_key") == user_id
                   and e["content"].get("membership") == "join" for e in self.events.get(room, []))

    async def close(self) -> None:
        await self.client.close()
