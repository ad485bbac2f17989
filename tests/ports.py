"""Free local ports for servers a test starts (a homeserver, Prometheus, a model, an endpoint,
an embedded dev server with its UI and codec server)."""

from __future__ import annotations

import socket

from temporal.server import codec_port, ui_port


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_embedded_port() -> int:
    """A port for an embedded dev server whose UI port and codec server port (temporal/server.py)
    are free too: the codec server of a test's embedded default once found its port taken."""
    for _ in range(50):
        port = free_port()
        if codec_port(port) >= 65536:
            continue
        try:
            for other in (ui_port(port), codec_port(port)):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", other))
        except OSError:
            continue
        return port
    raise AssertionError("no free port with its UI and codec ports free")
