"""A real Matrix homeserver for tests: Synapse from PyPI (``matrix-synapse``), on SQLite, on a
free port, with a generated config and generous rate limits; users registered with its own
``register_new_matrix_user`` and the shared secret.

Synapse is installed in the test venv (the ``test`` extra). Without it the tests that need it
skip with one line, unless ``AGENT_TEST_REQUIRE_SYNAPSE=1`` (CI), where they fail instead.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.ports import free_port

REQUIRE_ENV = "AGENT_TEST_REQUIRE_SYNAPSE"
SERVER_NAME = "localhost"
START_TIMEOUT_S = 90.0
PASSWORDS = {"agent": "agent-pass-1", "alice": "alice-pass-1", "bob": "bob-pass-1", "carol": "carol-pass-1"}
_PLENTY = {"per_second": 1000, "burst_count": 1000}

CONFIG = """\
server_name: "{name}"
pid_file: {dir}/homeserver.pid
listeners:
  - port: {port}
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: {dir}/homeserver.db
media_store_path: {dir}/media
registration_shared_secret: "{secret}"
macaroon_secret_key: "{macaroon}"
form_secret: "{form}"
report_stats: false
signing_key_path: {dir}/signing.key
trusted_key_servers: []
suppress_key_server_warning: true
enable_metrics: false
presence:
  enabled: false
rc_message: {plenty}
rc_registration: {plenty}
rc_login:
  address: {plenty}
  account: {plenty}
  failed_attempts: {plenty}
rc_joins:
  local: {plenty}
  remote: {plenty}
rc_joins_per_room: {plenty}
rc_invites:
  per_room: {plenty}
  per_user: {plenty}
  per_issuer: {plenty}
rc_3pid_validation: {plenty}
rc_admin_redaction: {plenty}
log_config: {dir}/log.yaml
"""

LOG_CONFIG = """\
version: 1
formatters:
  plain:
    format: '%(asctime)s %(levelname)s %(name)s %(message)s'
handlers:
  file:
    class: logging.FileHandler
    filename: {dir}/homeserver.log
    formatter: plain
root:
  level: WARNING
  handlers: [file]
disable_existing_loggers: false
"""


def synapse_problem() -> str | None:
    """Why Synapse cannot run here (one line), or None."""
    try:
        import synapse  # noqa: F401
    except ImportError:
        return "Synapse is not installed: pip install 'matrix-synapse==1.163.2' (the test extra has it)"
    return None


def require_synapse() -> None:
    problem = synapse_problem()
    if problem is None:
        return
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{REQUIRE_ENV} is set but {problem}")
    pytest.skip(problem)



class Synapse:
    """One homeserver process: ``url``, ``register(name, password)``. ``port``: where a server
    that was stopped listened, to stand in for it as a fresh one (a homeserver reset)."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.dir = directory
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.secret = secrets.token_hex(16)
        self.process: subprocess.Popen | None = None

    def start(self) -> Synapse:
        d = self.dir
        d.mkdir(parents=True, exist_ok=True)
        plenty = "{" + ", ".join(f"{k}: {v}" for k, v in _PLENTY.items()) + "}"
        (d / "homeserver.yaml").write_text(CONFIG.format(
            name=SERVER_NAME, dir=d, port=self.port, secret=self.secret, macaroon=secrets.token_hex(16),
            form=secrets.token_hex(16), plenty=plenty,
        ))
        (d / "log.yaml").write_text(LOG_CONFIG.format(dir=d))
        config = ["-c", str(d / "homeserver.yaml")]
        subprocess.run([sys.executable, "-m", "synapse.app.homeserver", *config, "--generate-keys"],
                       check=True, capture_output=True, cwd=d)
        self.process = subprocess.Popen([sys.executable, "-m", "synapse.app.homeserver", *config], cwd=d,
                                        stdout=subprocess.DEVNULL, stderr=open(d / "stderr.log", "wb"))
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"synapse exited: {(d / 'stderr.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/_matrix/client/versions", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("synapse did not start in time")
            time.sleep(0.2)

    def register(self, name: str, password: str, admin: bool = False) -> str:
        """Register ``@name:localhost`` with Synapse's own tool; return the user id."""
        tool = shutil.which("register_new_matrix_user", path=str(Path(sys.executable).parent))
        command = [tool] if tool else [sys.executable, "-m", "synapse._scripts.register_new_matrix_user"]
        subprocess.run([*command, "-u", name, "-p", password, "-k", self.secret, "--admin" if admin else "--no-admin",
                        self.url], check=True, capture_output=True)
        return f"@{name}:{SERVER_NAME}"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
