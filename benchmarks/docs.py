"""The generated parts of ``docs/``: each sits between two HTML comments and is rewritten from the
code it describes (the environment variables from ``core.settings``, the control files from
``tools/control_paths.py``, the gate's rows from ``tools/shell_policy/table.py``), so the docs say
what the code does. A test per block fails when its block is stale.

    python -m benchmarks.docs            # rewrite every block that is out of date
    python -m benchmarks.docs --check    # exit 1 naming each stale block

A new setting needs a line in ``VARIABLES`` (what it means; its default when the code's is
empty): the table refuses to build without one.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_type_hints

from core.settings import SECRET_PREFIX, Group, Settings
from tools import control_paths
from tools.shell_policy.rows import readme_table
from tools.shell_policy.table import ROWS

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "python -m benchmarks.docs"

# Each group of Settings: its heading in docs/configuration.md, and the page that explains it.
GROUPS: dict[str, tuple[str, str]] = {
    "paths": ("Data directory", "deployment.md#the-data-directory"),
    "store": ("Context store", "deployment.md#scaling-out"),
    "checkpoints": ("Workspace checkpoints", "cli.md#rewind-and-fork"),
    "secrets": ("Secrets", "safety.md#secrets"),
    "logging": ("Logs", "observability.md"),
    "tracing": ("Tracing", "observability.md#tracing"),
    "codec": ("Payload codec: encryption and compression", "deployment.md#encrypted-and-compressed-history"),
    "temporal": ("Temporal", "deployment.md"),
    "worker": ("Worker", "deployment.md#scaling-out"),
    "sandbox": ("Sandbox", "safety.md#the-sandbox"),
    "shell": ("Shell environment", "safety.md#workspace-bounds-and-environment"),
    "egress": ("Network", "safety.md#network"),
    "search": ("Web search", "tools.md#web-search"),
    "memory": ("Memory search", "tools.md#the-system-prompt-skills-and-memory"),
    "skills": ("Skills", "tools.md#the-system-prompt-skills-and-memory"),
    "prompt": ("System prompt", "tools.md#the-system-prompt-skills-and-memory"),
    "browser": ("Browser", "tools.md#the-browser"),
    "mcp": ("MCP", "mcp.md"),
    "providers": ("Model providers", "providers.md#using-a-model"),
    "models": ("Model and price tables", "providers.md#using-a-model"),
    "task": ("Task defaults", "providers.md#using-a-model"),
}

# What each variable means, and (second) its default in words where the code's default is empty
# (None, "" or ()): what an empty value stands for is decided where the group is used.
VARIABLES: dict[str, tuple[str, str | None]] = {
    "AGENT_DATA_DIR": ("the data directory: context store, audit log, checkpoints, sessions, the embedded "
                       "server's database and logs", "`$XDG_DATA_HOME/durable-agent`, for the installed command and a checkout alike"),
    "XDG_DATA_HOME": ("where the data directory goes when `AGENT_DATA_DIR` is not set", "`~/.local/share`"),
    "AGENT_CONTEXT_DB": ("the context store: a SQLite file, or a `postgresql://` URL shared by every host",
                         "`<data dir>/context.db`"),
    "AGENT_CHECKPOINTS": ("`false` (`0`, `no`, `off`) records no workspace checkpoints", None),
    "AGENT_CHECKPOINT_MAX_FILE_MB": ("files larger than this are kept in checkpoints by reflink or copy, never hashed",
                                     None),
    "AGENT_CHECKPOINT_MAX_MB": ("the most one checkpoint copies; files past it are left out and named as not "
                                "undoable", None),
    "AGENT_SECRETS_FILE": ("a file of `NAME=value` lines (the variables win)", "none"),
    SECRET_PREFIX: ("`AGENT_SECRET_<NAME>=value`: a secret, redacted to `{{secret:NAME}}`", "none"),
    "AGENT_LOG_LEVEL": ("the log level: `DEBUG`, `INFO`, `WARNING`, `ERROR`, `CRITICAL` (the CLI's lines go to "
                        "`<data dir>/worker.log`, the gateway's to its stderr)", "`WARNING` for the CLI, `INFO` for a worker and "
                        "the gateway"),
    "AGENT_TRACE_FILE": ("finished spans appended as JSON lines", "off"),
    "OTEL_EXPORTER_OTLP_ENDPOINT": ("an OTLP/HTTP collector (`/v1/traces` is added); its exporter reads the other "
                                    "`OTEL_EXPORTER_OTLP_*`", "off"),
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ("the traces endpoint as written, over the one above", "off"),
    "OTEL_SDK_DISABLED": ("`true` turns tracing off whatever else is set", None),
    "OTEL_SERVICE_NAME": ("the service name on spans", "`durable-agent`"),
    "AGENT_CODEC_KEYS": ("`id:base64key,...`: payloads encrypted with the first key, decrypted with any "
                         "(`python -m temporal.codec genkey` makes one)", "off"),
    "AGENT_CODEC_TOKEN": ("the codec server's bearer token (required to run it)", "none"),
    "AGENT_CODEC_CORS_ORIGINS": ("comma-separated UI origins the codec server allows",
                                 "`http://127.0.0.1:8233,http://localhost:8233`"),
    "AGENT_CODEC_COMPRESS_OVER": ("JSON payloads over this many bytes are stored zlib-compressed; `0`: never", None),
    "TEMPORAL_ADDRESS": ("a cluster to use (`--address` wins over it; a profile's address counts too)",
                         "the embedded dev server, 127.0.0.1:`AGENT_EMBEDDED_PORT`"),
    "TEMPORAL_NAMESPACE": ("the namespace (`--namespace` wins over it)", "the profile's, else `default`"),
    "TEMPORAL_PROFILE": ("the envconfig profile to read (`--profile` wins over it)", "`default`"),
    "TEMPORAL_CONFIG_FILE": ("the envconfig TOML file of profiles", "the Temporal SDK's own place"),
    "TEMPORAL_UI_URL": ("the base of the UI links the CLI prints",
                        "a local address's dev server UI (its port + 1000), else Temporal Cloud's"),
    "AGENT_TASK_QUEUE": ("the queue workers serve and the CLI starts tasks on; set, it is yours to serve",
                         "`agent-tasks@<digest of the model settings>`, `agent-tasks` on a cluster"),
    "AGENT_EMBEDDED_PORT": ("the embedded dev server's port (its UI is 1000 above)", None),
    "AGENT_LOCAL_TOOLS": ("`false` runs every tool call as an activity (no local activities for reads)", None),
    "AGENT_SHUTDOWN_GRACE_S": ("seconds a stopping worker lets running activities finish", None),
    "AGENT_BLOB_CAP_CHARS": ("tool output longer than this is kept as a blob, the history keeping a preview", None),
    "AGENT_METRICS_PORT": ("serve Prometheus metrics on this port (`worker.py --metrics-port`)", "off"),
    "AGENT_METRICS_HOST": ("the address the metrics endpoint listens on (`0.0.0.0`: every interface)", None),
    "AGENT_SANDBOX": ("`auto`, `required` or `off`: what happens where bubblewrap cannot run", None),
    "AGENT_BWRAP": ("the bwrap binary", "`bwrap` on `PATH`"),
    "AGENT_SANDBOX_READABLE": ("comma-separated paths inside hidden directories that commands may read", "none"),
    "AGENT_SHELL_MAX_PROCS": ("processes and threads of one command", None),
    "AGENT_SHELL_MAX_MEMORY_MB": ("writable memory per process (`RLIMIT_DATA`)", None),
    "AGENT_SHELL_MAX_CPU_S": ("CPU seconds per process", None),
    "AGENT_SHELL_MAX_FILE_MB": ("the largest file a command may write", None),
    "AGENT_SHELL_ENV_ALLOW": ("comma-separated names of the worker's variables a command gets; a secret-looking or "
                              "code-running name stops the worker at start", "none"),
    "AGENT_SHELL_ENV_ALLOW_UNSAFE": ("`true` gives every command those names anyway", None),
    "AGENT_DENY_HOSTS": ("hosts no tool may reach, added to the built-in list: names, globs, addresses, CIDR ranges",
                         "cloud metadata endpoints and link-local ranges"),
    "AGENT_BROWSER_DENY_HOSTS": ("the older name of `AGENT_DENY_HOSTS`, read too", "none"),
    "AGENT_NETWORK_ALLOW": ("where shell commands of a `--network` task may connect, through the worker's proxy: "
                            "`public`, names, globs, addresses, CIDR ranges", None),
    "AGENT_SEARCH_BACKEND": ("`tavily`, `brave` or `searxng`", "the first configured, Tavily first"),
    "TAVILY_API_KEY": ("Tavily's key: `search` is offered with it", "none"),
    "TAVILY_BASE_URL": ("Tavily's endpoint", "`https://api.tavily.com`"),
    "BRAVE_API_KEY": ("Brave Search's key", "none"),
    "BRAVE_BASE_URL": ("Brave Search's endpoint", "`https://api.search.brave.com`"),
    "SEARXNG_URL": ("a SearXNG instance, e.g. `http://127.0.0.1:8888`", "none"),
    "AGENT_EMBEDDINGS_URL": ("an OpenAI-compatible embeddings server's base URL (`/embeddings` is added): "
                             "`memory` search then ranks by meaning too", "none: full text (BM25) only"),
    "AGENT_EMBEDDINGS_MODEL": ("the embeddings model to ask for (required with the URL)", "none"),
    "AGENT_EMBEDDINGS_API_KEY": ("its key, sent as a bearer token", "none"),
    "AGENT_SKILLS_DIRS": ("extra skills folders, `:`-separated", "none"),
    "AGENT_USER_PREFERENCES": ("the preferences shown in the system prompt", "`<data dir>/preferences.md`"),
    "AGENT_CHROMIUM": ("the browser executable", "`chromium`, `chromium-browser` or `google-chrome` on `PATH`"),
    "AGENT_BROWSER_IDLE_S": ("a task's browser context closes after this long idle", None),
    "AGENT_MCP_CONFIG": ("the worker's MCP servers (`mcpServers` JSON)", "none"),
    "AGENT_MCP_TOKEN": ("the bearer token `mcp-serve --http` requires",
                        "one made in `<data dir>/mcp-token` (mode 0600) and kept"),
    "OPENAI_BASE_URL": ("any OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp", None),
    "OPENAI_API_KEY": ("its key", "none"),
    "ANTHROPIC_BASE_URL": ("the Anthropic Messages API", None),
    "ANTHROPIC_API_KEY": ("its key", "none"),
    "ANTHROPIC_VERSION": ("the `anthropic-version` header", None),
    "AGENT_XML_WIRE": ("the wire under `anthropic_xml`: `anthropic` or `openai`", None),
    "AGENT_STREAM_IDLE_S": ("a started stream silent this long ends the attempt (retryable)", None),
    "AGENT_PRICES_FILE": ("a JSON price table merged over the built-in one", "built-in estimates"),
    "AGENT_MODELS_FILE": ("a JSON model table (window, longest reply, vision) merged over the built-in one",
                          "built-in limits"),
    "AGENT_MODEL": ("the model name", "none: required unless `--demo`"),
    "AGENT_PROVIDER": ("the tool-calling mode: `openai`, `openai_responses`, `anthropic`, `anthropic_xml`", None),
    "AGENT_FALLBACK": ("the failover chain, `provider:model,...`", "none"),
    "AGENT_STREAM": ("`false` asks for whole answers (`stream: false`)", None),
}


def _default(value: Any) -> str | None:
    """The code's default as the table shows it, or None when it is empty."""
    if value is None or value == "" or value == ():
        return None
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, tuple):
        return "`" + ",".join(str(v) for v in value) + "`"
    return f"`{value}`"


def _rows(group: type[Group]) -> list[tuple[str, str, str]]:
    """(variable, meaning, default) for every variable ``group`` reads, in field order."""
    rows: list[tuple[str, str, str]] = []
    hints = get_type_hints(group)
    for f in dataclasses.fields(group):  # type: ignore[arg-type]
        kind = hints[f.name]
        if isinstance(kind, type) and issubclass(kind, Group):
            rows += _rows(kind)
            continue
        default = f.default if f.default is not dataclasses.MISSING else None
        for name in f.metadata.get("env", ()):
            rows.append(_row(name, default))
    if group.__name__ == "SecretSettings":
        rows.append(_row(SECRET_PREFIX, None))
    return rows


def _row(name: str, default: Any) -> tuple[str, str, str]:
    if name not in VARIABLES:
        raise KeyError(f"{name} has no line in benchmarks/docs.py's VARIABLES: say what it means")
    meaning, words = VARIABLES[name]
    shown = _default(default)
    if (shown is None) == (words is None):
        raise ValueError(f"{name}: give its default in words in VARIABLES exactly when the code's is empty "
                         f"(the code's is {default!r})")
    label = f"`{SECRET_PREFIX}<NAME>`" if name == SECRET_PREFIX else f"`{name}`"
    return label, meaning, shown or words or ""


def env_table() -> str:
    """docs/configuration.md's tables: one per group of ``Settings``, every variable with its default."""
    parts: list[str] = []
    hints = get_type_hints(Settings)
    for f in dataclasses.fields(Settings):
        if f.name not in GROUPS:
            raise KeyError(f"the settings group {f.name!r} has no heading in benchmarks/docs.py's GROUPS")
        title, page = GROUPS[f.name]
        parts += [f"### {title}", "", f"More in [{page.split('#')[0]}]({page}).", "",
                  "| variable | meaning | default |", "|---|---|---|"]
        parts += [f"| {name} | {meaning} | {default} |" for name, meaning, default in _rows(hints[f.name])]
        parts.append("")
    return "\n".join(parts).rstrip("\n")


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository
    name: str
    make: Callable[[], str]

    def begin(self) -> str:
        return f"<!-- generated: {self.name} ({REGENERATE}) -->"

    def end(self) -> str:
        return f"<!-- end of generated: {self.name} -->"


BLOCKS = (
    Block("docs/configuration.md", "variables", env_table),
    Block("docs/safety.md", "gate rows", lambda: readme_table(ROWS)),
    Block("docs/safety.md", "control paths", lambda: "\n".join(control_paths.readme_lines())),
)


def _pattern(block: Block) -> re.Pattern[str]:
    return re.compile(re.escape(block.begin()) + r"\n(.*?)\n?" + re.escape(block.end()), re.S)


def written(block: Block, root: Path = ROOT) -> str | None:
    """What the page holds between the block's comments (None: the comments are missing)."""
    found = _pattern(block).search((root / block.path).read_text(encoding="utf-8"))
    return found.group(1) if found else None


def named(name: str) -> Block:
    return next(b for b in BLOCKS if b.name == name)


def stale(root: Path = ROOT) -> list[str]:
    """The blocks whose page does not hold what the code generates, as ``path: name``."""
    return [f"{b.path}: {b.name}" for b in BLOCKS if written(b, root) != b.make()]


def regenerate(root: Path = ROOT) -> list[str]:
    """Rewrite every stale block in place; the names of those rewritten."""
    done = []
    for b in BLOCKS:
        if written(b, root) is None:
            raise SystemExit(f"{b.path} has no block {b.begin()} ... {b.end()}: add the two comments first")
        if written(b, root) != b.make():
            page = root / b.path
            text = _pattern(b).sub(lambda _m, b=b: f"{b.begin()}\n{b.make()}\n{b.end()}",
                                   page.read_text(encoding="utf-8"), count=1)
            page.write_text(text, encoding="utf-8")
            done.append(f"{b.path}: {b.name}")
    return done


def main(argv: list[str]) -> int:
    if "--check" in argv:
        out_of_date = stale()
        for name in out_of_date:
            print(f"stale: {name} (run {REGENERATE})")
        return 1 if out_of_date else 0
    for name in regenerate():
        print(f"rewrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
