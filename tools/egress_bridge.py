"""Inside a networked command's sandbox: its way out, from its own loopback to the proxy's socket.

A sandboxed command has no network (``--unshare-net``) and ordinary clients (curl, pip,
git, urllib) take a proxy as ``http://host:port``, not a Unix socket. So the command line
runs this first, on the worker's interpreter (``-I -S``: the standard library only, nothing
from the workspace or the environment): it listens on ``127.0.0.1`` (a free port of the
sandbox's own loopback), then runs the command as its child with ``HTTP_PROXY``,
``HTTPS_PROXY``, ``ALL_PROXY`` (and lower case) pointing there and ``NO_PROXY`` empty, and
copies each connection's bytes to and from the proxy's socket (``sys.argv[1]``). Listening
before the command starts means its first request never races the bridge.

It exits with the command's exit status (a signal that ended the command ends it too), and
prints nothing, so the command's output and exit code are as without it. It needs no care to
end: it is bubblewrap's main child, and when it exits bubblewrap's pid 1 exits and the
kernel ends every process left in the sandbox's PID namespace, as it did when bash was the
main child.

Run as ``python -I -S -c <this source> SOCKET COMMAND...`` (the source, not the file: the
worker's code need not be visible in the sandbox), so it imports nothing of the project.
"""

import os
import signal
import socket
import sys
import threading

CHUNK = 64 * 1024
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def _copy(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)  # the other direction may still be talking
    except OSError:
        pass


def _bridge(client: socket.socket, path: str) -> None:
    with client, socket.socket(socket.AF_UNIX) as upstream:
        try:
            upstream.connect(path)
        except OSError:
            return  # the client sees its connection closed: the proxy is gone
        back = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
        back.start()
        _copy(client, upstream)
        back.join()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_bridge, args=(client, path), daemon=True).start()


def main() -> None:
    path, argv = sys.argv[1], sys.argv[2:]
    listener = socket.create_server(("127.0.0.1", 0))
    proxy = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = dict(os.environ, NO_PROXY="", no_proxy="", **dict.fromkeys(PROXY_VARIABLES, proxy))
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    # Python ignores SIGPIPE and SIGXFSZ, and a spawned child would inherit that: not the command.
    pid = os.posix_spawn(argv[0], argv, env, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code < 0:  # ended by a signal: end by the same one, so the exit status is the same
        try:
            signal.signal(-code, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL and SIGSTOP have no handler to reset
            pass
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":  # run with -c: its source is the command line's, never imported
    main()
