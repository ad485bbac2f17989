"""Settings: every variable the worker and the CLI read, parsed once into frozen groups.

The entry points build ``Settings.from_env`` from the process's environment and hand each
service its group; nothing below them reads the environment (issue 29). Each field names
its variable (``var``); ``variables()`` lists them, and docs/configuration.md's table is
generated from the fields (``python -m benchmarks.docs``). Unset or empty keeps the default;
a bad value is a ValueError naming the variable, so a worker refuses to start in one line. Plain dataclasses, not pydantic: settings never cross a Temporal
boundary and each rule is a line here. They sit on the bottom floor so that ``tools/`` and
``providers/``, siblings of ``runtime/``, can take their group; ``runtime/settings.py``
reads the process's environment. How they flow, and how to add one: docs/settings.md.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self, get_args, get_origin, get_type_hints

from core.unsafe_env import unsafe_env_name

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
PORT = 65535  # the largest TCP port
# The tool-calling modes (providers.factory builds one each) and the search backends
# (tools.search), here so that a setting naming another is refused when the process starts.
PROVIDER_MODES = ("openai", "anthropic", "anthropic_xml", "openai_responses")
SEARCH_BACKENDS = ("tavily", "brave", "searxng")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SECRET_PREFIX = "AGENT_SECRET_"  # AGENT_SECRET_<NAME>=value
# What every shell command gets of the worker's environment (with LC_* and AGENT_SHELL_ENV_ALLOW).
BASE_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ")


def var(name: str, default: Any = None, *, also: Sequence[str] = (), secret: bool = False, sep: str = ",",
        parse: Callable[[str], Any] | None = None, positive: bool = False, most: int | None = None,
        choices: Sequence[str] = ()) -> Any:
    """A field read from ``name`` (then ``also``: lists join them, scalars take the first set);
    ``most``: the largest whole number it takes; ``choices``: the words it takes (any case,
    kept as spelled here)."""
    meta = {"env": (name, *also), "sep": sep, "parse": parse, "positive": positive, "most": most, "choices": choices}
    return field(default=default, repr=not secret, metadata=meta)


class Group:
    """A frozen group of settings; ``from_env`` reads its fields' variables (and nested groups)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self:
        hints = get_type_hints(cls)
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            kind = hints[f.name]
            if isinstance(kind, type) and issubclass(kind, Group):
                values[f.name] = kind.from_env(environ)
            elif "env" in f.metadata:
                raws = [environ.get(name, "").strip() for name in f.metadata["env"]]
                if any(raws):
                    values[f.name] = _parse(f, kind, [r for r in raws if r])
        return cls(**values)


def _parse(f: dataclasses.Field[Any], kind: Any, raws: list[str]) -> Any:
    name, raw = f.metadata["env"][0], raws[0]
    if f.metadata["parse"] is not None:
        return f.metadata["parse"](raw)
    if choices := f.metadata["choices"]:
        if (chosen := next((c for c in choices if c.lower() == raw.lower()), None)) is None:
            raise ValueError(f"{name}={raw!r}: expected one of {', '.join(choices)}")
        return chosen
    if get_origin(kind) is tuple:
        item = get_args(kind)[0]
        return tuple(_scalar(item, p.strip()) for r in raws for p in r.split(f.metadata["sep"]) if p.strip())
    if get_origin(kind) is Literal:
        if raw.lower() not in get_args(kind):
            raise ValueError(f"{name}={raw!r}: expected one of {', '.join(get_args(kind))}")
        return raw.lower()
    base = next((a for a in get_args(kind) if a is not type(None)), kind)  # X | None -> X
    if base is bool:
        if raw.lower() not in TRUE + FALSE:
            raise ValueError(f"{name}={raw!r}: expected one of {', '.join(TRUE + FALSE)}")
        return raw.lower() in TRUE
    if base is int:
        most = f.metadata["most"]
        if not raw.isdigit() or int(raw) < 1 or (most is not None and int(raw) > most):
            raise ValueError(f"{name}={raw!r}: expected a whole number from 1 to {most or 'any'}")
        return int(raw)
    if base is float:
        try:
            number = float(raw)
        except ValueError:
            number = -1.0
        if number < 0 or not math.isfinite(number) or (f.metadata["positive"] and number == 0):
            raise ValueError(f"{name}={raw!r}: expected a {'positive' if f.metadata['positive'] else 'non-negative'} number")
        return number
    return _scalar(base, raw)


def _scalar(kind: Any, raw: str) -> Any:
    return Path(raw).expanduser() if kind is Path else kind(raw)


@dataclass(frozen=True)
class PathSettings(Group):
    data_dir: Path | None = var("AGENT_DATA_DIR")  # None: $XDG_DATA_HOME/durable-agent, for every copy of the code
    xdg_data_home: Path | None = var("XDG_DATA_HOME")  # None: ~/.local/share


@dataclass(frozen=True)
class StoreSettings(Group):
    context_db: str = var("AGENT_CONTEXT_DB", "", secret=True)  # a path or postgresql:// URL (may hold a password)


@dataclass(frozen=True)
class CheckpointSettings(Group):
    enabled: bool = var("AGENT_CHECKPOINTS", True)
    max_file_mb: float = var("AGENT_CHECKPOINT_MAX_FILE_MB", 10.0)  # larger files: reflinked or copied, not hashed
    max_mb: float = var("AGENT_CHECKPOINT_MAX_MB", 1024.0)  # the most one checkpoint copies


@dataclass(frozen=True)
class SecretSettings(Group):
    file: Path | None = var("AGENT_SECRETS_FILE")
    values: Mapping[str, str] = field(default_factory=dict, repr=False)  # AGENT_SECRET_<NAME>, as written

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self:
        values = {k[len(SECRET_PREFIX):]: v for k, v in environ.items() if k.startswith(SECRET_PREFIX) and k != SECRET_PREFIX}
        return dataclasses.replace(super().from_env(environ), values=types.MappingProxyType(values))


@dataclass(frozen=True)
class LogSettings(Group):
    level: str | None = var("AGENT_LOG_LEVEL", choices=LOG_LEVELS)  # None: WARNING for the CLI, INFO for a worker


@dataclass(frozen=True)
class TracingSettings(Group):
    trace_file: str | None = var("AGENT_TRACE_FILE")
    otlp_endpoint: str | None = var("OTEL_EXPORTER_OTLP_ENDPOINT")
    otlp_traces_endpoint: str | None = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    sdk_disabled: bool = var("OTEL_SDK_DISABLED", False, parse=lambda raw: raw.lower() == "true")  # the spec's reading
    service_name: str | None = var("OTEL_SERVICE_NAME")


def _bytes(name: str, raw: str) -> int:
    """A size in bytes where 0 means off."""
    if not raw.isdigit():
        raise ValueError(f"{name}={raw!r}: expected a whole number of bytes (0: off)")
    return int(raw)


@dataclass(frozen=True)
class CodecSettings(Group):
    keys: str = var("AGENT_CODEC_KEYS", "", secret=True)  # id:base64key,... ("": no encryption)
    token: str = var("AGENT_CODEC_TOKEN", "", secret=True)
    cors_origins: tuple[str, ...] = var("AGENT_CODEC_CORS_ORIGINS", ())  # (): the dev server's UI
    compress_over: int = var("AGENT_CODEC_COMPRESS_OVER", 1024, parse=lambda raw: _bytes("AGENT_CODEC_COMPRESS_OVER", raw))


@dataclass(frozen=True)
class TemporalSettings(Group):
    """What we read ourselves; the SDK's envconfig reads the rest of TEMPORAL_* (and the address again)."""

    address: str | None = var("TEMPORAL_ADDRESS")  # None: the profile's, else the embedded dev server
    namespace: str | None = var("TEMPORAL_NAMESPACE")  # None: the profile's, else default
    profile: str | None = var("TEMPORAL_PROFILE")  # None: envconfig's "default"
    config_file: Path | None = var("TEMPORAL_CONFIG_FILE")  # None: envconfig's own place
    ui_url: str | None = var("TEMPORAL_UI_URL")
    task_queue: str | None = var("AGENT_TASK_QUEUE")  # None: contracts.task.DEFAULT_TASK_QUEUE
    embedded_port: int = var("AGENT_EMBEDDED_PORT", 7233, most=PORT)  # the embedded server's; its UI is 1000 above
    # Not a variable: the options given on the command line, repeated in the commands the CLI suggests.
    given: tuple[tuple[str, str], ...] = ()

    @property
    def embedded(self) -> bool:
        """No address from the options, TEMPORAL_ADDRESS or the profile (``temporal.connection.resolve``)."""
        return not self.address


@dataclass(frozen=True)
class WorkerSettings(Group):
    local_tools: bool = var("AGENT_LOCAL_TOOLS", True)
    shutdown_grace_s: float = var("AGENT_SHUTDOWN_GRACE_S", 30.0)
    blob_cap_chars: int = var("AGENT_BLOB_CAP_CHARS", 8000)
    metrics_port: int | None = var("AGENT_METRICS_PORT", most=PORT)  # None: no Prometheus endpoint
    metrics_host: str = var("AGENT_METRICS_HOST", "127.0.0.1")  # metrics name tasks and tools: not for the world


@dataclass(frozen=True)
class ShellLimits(Group):
    procs: int = var("AGENT_SHELL_MAX_PROCS", 256)  # processes and threads of the whole command
    memory_mb: int = var("AGENT_SHELL_MAX_MEMORY_MB", 2048)  # per process
    cpu_s: int = var("AGENT_SHELL_MAX_CPU_S", 1800)  # per process
    file_mb: int = var("AGENT_SHELL_MAX_FILE_MB", 4096)  # the largest file a command may write


@dataclass(frozen=True)
class SandboxSettings(Group):
    mode: Literal["auto", "required", "off"] = var("AGENT_SANDBOX", "auto")
    bwrap: str | None = var("AGENT_BWRAP")  # None: bwrap on PATH
    readable: tuple[Path, ...] = var("AGENT_SANDBOX_READABLE", ())
    limits: ShellLimits = field(default_factory=ShellLimits)


@dataclass(frozen=True)
class ShellSettings(Group):
    env_allow: tuple[str, ...] = var("AGENT_SHELL_ENV_ALLOW", ())
    env_allow_unsafe: bool = var("AGENT_SHELL_ENV_ALLOW_UNSAFE", False)
    inherited: Mapping[str, str] = field(default_factory=dict, repr=False)  # what a command gets of the worker's

    def __post_init__(self) -> None:
        """A secret or a code-running variable handed to every command widens the sandbox for
        every task: the operator says so twice, or the worker does not start."""
        if self.env_allow_unsafe:
            return
        for name in self.env_allow:
            if why := unsafe_env_name(name):
                raise ValueError(f"AGENT_SHELL_ENV_ALLOW names {name}, which {why}: "
                                 "set AGENT_SHELL_ENV_ALLOW_UNSAFE=1 to give it to every command anyway")

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self:
        read = super().from_env(environ)
        return dataclasses.replace(read, inherited=types.MappingProxyType(allowed_env(environ, read.env_allow)))


def allowed_env(environ: Mapping[str, str], allow: Sequence[str] = ()) -> dict[str, str]:
    """The part of ``environ`` a shell command sees: ``BASE_ENV``, ``LC_*`` and the names in ``allow``."""
    names = {*BASE_ENV, *allow}
    return {name: value for name, value in environ.items() if name in names or name.startswith("LC_")}


@dataclass(frozen=True)
class EgressSettings(Group):
    deny_hosts: tuple[str, ...] = var("AGENT_DENY_HOSTS", (), also=("AGENT_BROWSER_DENY_HOSTS",))
    # Where a networked shell command may connect (through the worker's proxy): ``public`` is
    # any public address, so loopback and private ranges are listed to be reached.
    network_allow: tuple[str, ...] = var("AGENT_NETWORK_ALLOW", ("public",))


@dataclass(frozen=True)
class SearchSettings(Group):
    backend: str | None = var("AGENT_SEARCH_BACKEND", choices=SEARCH_BACKENDS)  # None: the first configured, Tavily first
    tavily_api_key: str | None = var("TAVILY_API_KEY", secret=True)
    tavily_base_url: str | None = var("TAVILY_BASE_URL")
    brave_api_key: str | None = var("BRAVE_API_KEY", secret=True)
    brave_base_url: str | None = var("BRAVE_BASE_URL")
    searxng_url: str | None = var("SEARXNG_URL")


@dataclass(frozen=True)
class MemorySettings(Group):
    """``memory`` search: full text alone, or merged with an OpenAI-compatible embeddings endpoint."""

    embeddings_url: str | None = var("AGENT_EMBEDDINGS_URL")  # a base URL (``.../v1``); None: full text only
    embeddings_model: str | None = var("AGENT_EMBEDDINGS_MODEL")
    embeddings_api_key: str | None = var("AGENT_EMBEDDINGS_API_KEY", secret=True)

    def __post_init__(self) -> None:
        if self.embeddings_url and not self.embeddings_model:
            raise ValueError("AGENT_EMBEDDINGS_URL is set: AGENT_EMBEDDINGS_MODEL must name the model to ask for")


@dataclass(frozen=True)
class SkillSettings(Group):
    dirs: tuple[Path, ...] = var("AGENT_SKILLS_DIRS", (), sep=os.pathsep)  # as PATH is


@dataclass(frozen=True)
class PromptSettings(Group):
    user_preferences: str = var("AGENT_USER_PREFERENCES", "")


@dataclass(frozen=True)
class BrowserSettings(Group):
    chromium: str | None = var("AGENT_CHROMIUM")  # None: chromium, chromium-browser or google-chrome on PATH
    idle_s: float = var("AGENT_BROWSER_IDLE_S", 600.0)


@dataclass(frozen=True)
class McpSettings(Group):
    config: Path | None = var("AGENT_MCP_CONFIG")  # the worker's servers
    token: str = var("AGENT_MCP_TOKEN", "", secret=True)  # mcp-serve --http's ("": one kept in the data dir)


@dataclass(frozen=True)
class ProviderSettings(Group):
    """Endpoints and keys for every provider (providers.factory). Keys stay on the worker: the
    workflow names a mode, never a key, and ``repr`` leaves them out."""

    openai_base_url: str = var("OPENAI_BASE_URL", "https://api.openai.com/v1")
    openai_api_key: str | None = var("OPENAI_API_KEY", secret=True)
    anthropic_base_url: str = var("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
    anthropic_api_key: str | None = var("ANTHROPIC_API_KEY", secret=True)
    anthropic_version: str = var("ANTHROPIC_VERSION", "2023-06-01")
    xml_wire: Literal["anthropic", "openai"] = var("AGENT_XML_WIRE", "anthropic")
    # A stream that has started and then sends nothing for this long ends the attempt (retryable).
    stream_idle_s: float = var("AGENT_STREAM_IDLE_S", 60.0, positive=True)


@dataclass(frozen=True)
class ModelTableSettings(Group):
    prices_file: Path | None = var("AGENT_PRICES_FILE")
    models_file: Path | None = var("AGENT_MODELS_FILE")


@dataclass(frozen=True)
class TaskDefaults(Group):
    """What the CLI starts a task with when its options do not say."""

    model: str | None = var("AGENT_MODEL")
    provider: str = var("AGENT_PROVIDER", "openai", choices=PROVIDER_MODES)
    fallback: str | None = var("AGENT_FALLBACK")
    stream: bool = var("AGENT_STREAM", True)


@dataclass(frozen=True)
class Settings(Group):
    paths: PathSettings = field(default_factory=PathSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    secrets: SecretSettings = field(default_factory=SecretSettings)
    logging: LogSettings = field(default_factory=LogSettings)
    tracing: TracingSettings = field(default_factory=TracingSettings)
    codec: CodecSettings = field(default_factory=CodecSettings)
    temporal: TemporalSettings = field(default_factory=TemporalSettings)
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    shell: ShellSettings = field(default_factory=ShellSettings)
    egress: EgressSettings = field(default_factory=EgressSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    skills: SkillSettings = field(default_factory=SkillSettings)
    prompt: PromptSettings = field(default_factory=PromptSettings)
    browser: BrowserSettings = field(default_factory=BrowserSettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    providers: ProviderSettings = field(default_factory=ProviderSettings)
    models: ModelTableSettings = field(default_factory=ModelTableSettings)
    task: TaskDefaults = field(default_factory=TaskDefaults)


def variables(group: type[Group] = Settings) -> Iterator[str]:
    """Every variable ``group`` reads, in field order (``AGENT_SECRET_<NAME>`` as its prefix)."""
    hints = get_type_hints(group)
    for f in dataclasses.fields(group):  # type: ignore[arg-type]
        kind = hints[f.name]
        if isinstance(kind, type) and issubclass(kind, Group):
            yield from variables(kind)
        else:
            yield from f.metadata.get("env", ())
    if group is SecretSettings:
        yield SECRET_PREFIX
