"""What package managers and git fetch from, served on this host's loopback for the tests of
networked shell commands (``test_shell_network_clients.py``).

``simple_index``: a PEP 503 index with one tiny wheel, built here (a zip with its module and
dist-info), as ``LocalWebServer`` routes. ``npm_registry``: a packument and its tarball.
``GitHttpServer``: git's smart HTTP, ``git http-backend`` run as a CGI program for each request
on a bare repository that accepts pushes. Each counts what it served (``requests``).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.tools.web_fixtures import Reply, Seen


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel(name: str, version: str, module_source: str) -> tuple[str, bytes]:
    """A pure-Python wheel with one module: its file name and bytes."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": module_source.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return f"{name}-{version}-py3-none-any.whl", buffer.getvalue()


def simple_index(name: str, filename: str, data: bytes) -> dict[str, Reply]:
    """Routes of a PEP 503 index (at ``/simple/``) that has ``data`` as ``name``'s one file."""
    digest = hashlib.sha256(data).hexdigest()
    link = f'<a href="/files/{filename}#sha256={digest}">{filename}</a>'
    return {
        "/simple/": Reply(body=f'<a href="{name}/">{name}</a>'.encode()),
        f"/simple/{name}/": Reply(body=f"<!DOCTYPE html><html><body>{link}</body></html>".encode()),
        f"/files/{filename}": Reply(body=data, content_type="application/octet-stream"),
    }


def npm_registry(name: str, version: str, index_js: str) -> Any:
    """A function of the registry's base URL: the routes of a registry with one package."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, text in {
            "package.json": json.dumps({"name": name, "version": version}),
            "index.js": index_js,
        }.items():
            data = text.encode()
            entry = tarfile.TarInfo(f"package/{path}")
            entry.size = len(data)
            archive.addfile(entry, io.BytesIO(data))
    tarball = buffer.getvalue()
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()

    def routes(base_url: str) -> dict[str, Reply]:
        dist = {"tarball": f"{base_url}/{name}/-/{name}-{version}.tgz", "integrity": integrity,
                "shasum": hashlib.sha1(tarball).hexdigest()}  # fmt: skip
        packument = {"name": name, "dist-tags": {"latest": version},
                     "versions": {version: {"name": name, "version": version, "dist": dist}}}  # fmt: skip
        return {
            f"/{name}": Reply(body=json.dumps(packument).encode(), content_type="application/json"),
            f"/{name}/-/{name}-{version}.tgz": Reply(body=tarball, content_type="application/octet-stream"),
        }

    return routes


class GitHttpServer:
    """``git http-backend`` over HTTP for the bare repositories under ``root``, pushes allowed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[Seen] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _git_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, path: str) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}{path}"

    def __enter__(self) -> GitHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def backend(self, seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        """The CGI program's answer to ``seen``: status, headers, body."""
        self.requests.append(seen)
        parts = urlsplit(seen.path)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1", "REQUEST_METHOD": seen.method, "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query, "CONTENT_TYPE": seen.headers.get("content-type", ""),
            "CONTENT_LENGTH": str(len(seen.body)), "HTTP_CONTENT_ENCODING": seen.headers.get("content-encoding", ""),
            "GIT_PROTOCOL": seen.headers.get("git-protocol", ""), "REMOTE_ADDR": "127.0.0.1",
        }  # fmt: skip
        out = subprocess.run(["git", "http-backend"], input=seen.body, env=env, capture_output=True, check=False).stdout
        head, _, body = out.partition(b"\r\n\r\n") if b"\r\n\r\n" in out else out.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        return status, headers, body


def _read_chunked(rfile: Any) -> bytes:
    body = b""
    while size := int(rfile.readline().split(b";")[0], 16):
        body += rfile.read(size)
        rfile.readline()
    while rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
        pass
    return body


def _git_handler(server: GitHttpServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def _answer(self) -> None:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                body = _read_chunked(self.rfile)
            else:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, answer, data = server.backend(Seen(self.command, self.path, headers, body))
            self.send_response(status)
            for name, value in answer:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


__all__ = ["GitHttpServer", "npm_registry", "simple_index", "wheel"]
