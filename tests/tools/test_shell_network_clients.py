"""Package managers and git in a networked shell command: through the worker's proxy (issue 38).

``pip install`` from a PEP 503 index, ``git clone`` and ``git push`` over smart HTTP and
``npm install`` from a registry, each served on this host's loopback by the test
(``package_servers.py``), which a sandboxed command reaches only through the proxy, and only
when ``AGENT_NETWORK_ALLOW`` lets it. Real bubblewrap (``sandboxing.require``: CI fails
instead of skipping); the clients find the proxy in ``HTTP_PROXY`` as they would anywhere.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests import sandboxing
from tests.tools.package_servers import GitHttpServer, npm_registry, simple_index, wheel
from tests.tools.test_shell_network import PYTHON, _ctx, _outlet
from tests.tools.web_fixtures import LocalWebServer
from tools.egress import ALLOW_ENV

WHEEL_NAME, WHEEL = wheel("tinypkg", "0.1", "GREETING = 'hello from tinypkg'\n")
PIP = (
    f"{PYTHON} -m pip install -q --no-deps --no-cache-dir --disable-pip-version-check"
    " --root-user-action=ignore --retries 0 --timeout 20"
)


@pytest.fixture
def box(monkeypatch):
    return sandboxing.require(monkeypatch)


@pytest.fixture
def outlet():
    found = _outlet("127.0.0.1")
    yield found
    found.close()


@pytest.fixture
def index():
    with LocalWebServer(simple_index("tinypkg", WHEEL_NAME, WHEEL)) as found:
        yield found


async def test_pip_installs_from_an_allowed_index(box, index, outlet, tmp_path):
    install = f"{PIP} --index-url {index.url('/simple/')} --target ./vendored tinypkg"
    show = f"{PYTHON} -c 'import sys; sys.path.insert(0, \"vendored\"); import tinypkg; print(tinypkg.GREETING)'"
    result = await sandboxing.run(_ctx(tmp_path, outlet), f"{install} && {show}", timeout_s=120)
    assert result.content == "hello from tinypkg\n[exit code: 0]"
    assert (tmp_path / "vendored" / "tinypkg" / "__init__.py").is_file()
    assert (tmp_path / "vendored" / "tinypkg-0.1.dist-info" / "METADATA").is_file()
    assert [seen.path for seen in index.requests] == ["/simple/tinypkg/", f"/files/{WHEEL_NAME}"]


async def test_pip_is_refused_an_index_not_allowed_and_the_result_says_why(box, index, tmp_path):
    outlet = _outlet("127.0.0.2")
    try:
        command = f"{PIP} --index-url {index.url('/simple/')} --target ./vendored tinypkg"
        result = await sandboxing.run(_ctx(tmp_path, outlet), command, timeout_s=120)
    finally:
        outlet.close()
    assert result.exit_code != 0
    assert not (tmp_path / "vendored" / "tinypkg").exists()
    assert index.requests == []
    why = f"the host 127.0.0.1 is not in {ALLOW_ENV} (127.0.0.2): add it there to reach it"
    assert f"[network: refused {index.url('/simple/tinypkg/')}: {why}]" in result.content


def _git(*args: str, cwd=None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def remote(tmp_path):
    """A bare repository with one commit, served over smart HTTP with pushes allowed."""
    root = tmp_path / "served"
    bare = root / "repo.git"
    _git("init", "-q", "--bare", "-b", "main", str(bare))
    _git("config", "http.receivepack", "true", cwd=bare)
    seed = tmp_path / "seed"
    _git("init", "-q", "-b", "main", str(seed))
    (seed / "README").write_text("seeded on the host\n")
    _git("add", "README", cwd=seed)
    _git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "seed", cwd=seed)
    _git("push", "-q", str(bare), "main", cwd=seed)
    with GitHttpServer(root) as server:
        yield server, bare


async def test_git_clones_and_pushes_over_http_through_the_proxy(box, remote, outlet, tmp_path):
    server, bare = remote
    work = tmp_path / "work"
    work.mkdir()
    # Over 1 MiB (git's http.postBuffer): the push's pack goes as a chunked upload.
    command = (
        f"git clone -q {server.url('/repo.git')} c && cd c && cat README"
        " && head -c 3000000 /dev/urandom > blob && git add blob"
        " && git -c user.name=t -c user.email=t@x commit -qm 'from the sandbox' && git push -q origin HEAD"
    )
    result = await sandboxing.run(_ctx(work, outlet), command, timeout_s=120)
    assert result.content == "seeded on the host\n[exit code: 0]"
    assert _git("log", "-1", "--format=%s", "main", cwd=bare) == "from the sandbox"
    assert _git("cat-file", "-s", "main:blob", cwd=bare) == "3000000"
    # Protocol v2's ls-refs and fetch; then the push: a probe, and the pack in chunks.
    assert [seen.path.rpartition("/")[2] for seen in server.requests] == [
        "refs?service=git-upload-pack", "git-upload-pack", "git-upload-pack",
        "refs?service=git-receive-pack", "git-receive-pack", "git-receive-pack",
    ]  # fmt: skip
    pack = server.requests[-1]
    assert pack.headers.get("transfer-encoding") == "chunked" and len(pack.body) > 3000000


async def test_git_clone_of_a_host_not_allowed_is_refused(box, remote, tmp_path):
    server, _bare = remote
    work = tmp_path / "work"
    work.mkdir()
    outlet = _outlet("127.0.0.2")
    try:
        result = await sandboxing.run(_ctx(work, outlet), f"git clone -q {server.url('/repo.git')} c")
    finally:
        outlet.close()
    assert result.exit_code == 128
    assert server.requests == []
    why = f"the host 127.0.0.1 is not in {ALLOW_ENV} (127.0.0.2): add it there to reach it"
    assert f"[network: refused {server.url('/repo.git/info/refs?service=git-upload-pack')}: {why}]" in result.content


async def test_npm_installs_from_an_allowed_registry(box, outlet, tmp_path):
    if not (shutil.which("npm") and shutil.which("node")):
        sandboxing.skip("npm is not installed here")  # CI's machine has Node.js and npm
    routes = npm_registry("tinypkg", "1.0.0", "module.exports = 'hello from tinypkg';\n")
    with LocalWebServer() as registry:
        registry.routes.update(routes(registry.base_url))
        command = (
            f"npm install --registry {registry.base_url}/ --no-audit --no-fund --no-update-notifier"
            " --loglevel=error --cache ./.npm-cache tinypkg >/dev/null && node -p \"require('tinypkg')\""
        )
        result = await sandboxing.run(_ctx(tmp_path, outlet), command, timeout_s=120)
    assert result.content == "hello from tinypkg\n[exit code: 0]"
    assert (tmp_path / "node_modules" / "tinypkg" / "package.json").is_file()
    assert [seen.path for seen in registry.requests] == ["/tinypkg", "/tinypkg/-/tinypkg-1.0.0.tgz"]
