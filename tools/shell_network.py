"""The network of shell commands: one egress point per worker, through the policy proxy.

A sandboxed command never has the host's network (bubblewrap's ``--unshare-net``, with or
without ``--network``), so a tool it runs cannot reach what the egress policy refuses by
opening a socket of its own. In a task started with ``--network`` its way out is the
worker's ``CommandEgress``: each command gets its own listener (a ``PolicyProxy`` under
``HostRules``: the deny list, then ``AGENT_NETWORK_ALLOW``) on a Unix socket in a private
directory (0700), bound into that command's sandbox only (at ``EGRESS_SOCKET``), and the
command line starts ``tools/egress_bridge.py`` before ``bash`` so that clients find it at
``HTTP_PROXY``. A listener per command keeps each command's refusals its own:
``Route.summary`` gives them as lines for its result, since a client may not print the
proxy's ``403`` (``curl -s``).

The bridge runs on the worker's own interpreter, whose installation may sit in a hidden
directory (``/root/.pyenv``): it is shown read-only to networked commands (``Route.readable``).
worker.py makes one ``CommandEgress`` and hands it to every tool call (``ToolContext``); its
directory is made on the first networked command and removed by ``close``.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from core.settings import EgressSettings
from tools import egress_bridge
from tools.egress import Egress
from tools.egress_proxy import HostRules, PolicyProxy

# Where a networked command finds its proxy's socket: its private /tmp, as a mount point
# (which the command cannot remove or replace).
EGRESS_SOCKET = "/tmp/.agent-egress.sock"


@cache
def _bridge_source() -> str:
    return Path(egress_bridge.__file__).read_text(encoding="utf-8")


@dataclass
class Route:
    """One command's way out: its socket, and the refusals the proxy noted for it."""

    socket: Path  # on the host; bound at EGRESS_SOCKET in the sandbox
    policy: HostRules
    interpreter: str
    refusals: list[str] = field(default_factory=list)

    @property
    def readable(self) -> tuple[Path, ...]:
        """What the bridge needs to run: the interpreter's installation, read-only."""
        return (Path(self.interpreter).parent.parent,)

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started by the bridge, with the proxy in its environment."""
        return [self.interpreter, "-I", "-S", "-c", _bridge_source(), EGRESS_SOCKET, *argv]

    def note(self, text: str) -> None:
        if text not in self.refusals:  # a client retrying the same host says it once
            self.refusals.append(text)

    def summary(self) -> str:
        """The refusals as lines for the command's result ("" when none)."""
        return "".join(f"\n[network: {text}]" for text in self.refusals)


class CommandEgress:
    """The worker's egress point for shell commands (see the module docstring)."""

    def __init__(self, settings: EgressSettings, interpreter: str | None = None) -> None:
        self.policy = HostRules(Egress.commands(settings))
        # The real binary, not a venv's link to it: the bridge needs the standard library only.
        self.interpreter = interpreter or os.path.realpath(sys.executable)
        self._dir: Path | None = None
        self._count = itertools.count()

    @asynccontextmanager
    async def route(self) -> AsyncIterator[Route]:
        """A listener for one command, closed (and its socket removed) when it has run."""
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="agent-egress-"))  # 0700
        route = Route(self._dir / f"{next(self._count)}.sock", self.policy, self.interpreter)
        proxy = PolicyProxy(route, answer_refusals=True)
        await proxy.start_unix(route.socket)
        try:
            yield route
        finally:
            proxy.close()
            route.socket.unlink(missing_ok=True)

    def close(self) -> None:
        """Remove the private directory (the worker stops)."""
        directory, self._dir = self._dir, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


__all__ = ["EGRESS_SOCKET", "CommandEgress", "Route"]
