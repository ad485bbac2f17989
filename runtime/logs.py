"""structlog set-up for everything outside workflows (workflows use workflow.logger).

A worker logs to stderr. The CLI logs to a file in the data directory (``worker.log``),
with the Temporal SDK's records: what a worker it runs in-process logs (a provider's refusal,
a failed model call, an activity's traceback) is detail for the log, while the terminal
gets the one line the task's outcome says.

A log line that cannot be written (stderr a pipe whose reader is gone, as with
``worker.py | tee`` after Ctrl-C) is dropped: nothing, a worker's stop least of all,
may depend on being able to log."""

from __future__ import annotations

import functools
import logging
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

if TYPE_CHECKING:
    from runtime.secrets import SecretStore

_configured = False
SDK_LOGGER = "temporalio"  # the SDK's loggers: temporalio.activity, temporalio.worker, ...
AGENT_LOGGER = "durable_agent"  # the name on the project's own lines in a log file
LOG_FILE_BYTES = 5_000_000  # then one older file is kept


class QuietPrintLogger(structlog.PrintLogger):
    """A print logger that drops a line it cannot write instead of raising."""

    def msg(self, message: str) -> None:
        try:
            super().msg(message)
        except (OSError, ValueError):  # a broken pipe, or a stream closed under us
            pass

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


class FileLineLogger:
    """A structlog logger that hands each rendered line to the log file's handler, at its level."""

    def __init__(self, handler: logging.Handler) -> None:
        self.handler = handler

    def _line(self, level: int, message: str) -> None:
        record = logging.LogRecord(AGENT_LOGGER, level, "", 0, message, None, None)
        try:
            self.handler.handle(record)
        except (OSError, ValueError):
            pass

    debug = functools.partialmethod(_line, logging.DEBUG)
    info = msg = functools.partialmethod(_line, logging.INFO)
    warning = warn = functools.partialmethod(_line, logging.WARNING)
    error = err = exception = functools.partialmethod(_line, logging.ERROR)
    critical = fatal = functools.partialmethod(_line, logging.CRITICAL)


@functools.cache
def _file_handler(path: Path) -> RotatingFileHandler:
    """One handler per log file, shared by the project's lines and the SDK's records."""
    handler = RotatingFileHandler(path, maxBytes=LOG_FILE_BYTES, backupCount=1, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    return handler


def configure_logging(level: str = "INFO", *, secrets: SecretStore, file: Path | None = None) -> None:
    """Once per process; ``secrets`` are redacted from every line. ``file``: lines go there,
    not to stderr (the CLI)."""
    global _configured
    if _configured:
        return
    _configured = True
    renderer = (
        structlog.dev.ConsoleRenderer(colors=False)
        if file is None and sys.stderr.isatty()
        else structlog.processors.JSONRenderer()
    )
    from runtime.secrets import redact_processor

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            redact_processor(secrets),  # no secret ever reaches a log line
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=(lambda *_: QuietPrintLogger(sys.stderr)) if file is None else (lambda *_: FileLineLogger(_file_handler(file))),
    )


def sdk_logs_to(path: Path) -> None:
    """Send the Temporal SDK's log records, its native core's included, to ``path`` instead
    of the terminal. For the CLI, whose commands may run a worker in-process (``run``,
    ``eval``): what the SDK logs of an activity a task cut off (a traceback) is routine, and
    no news to the person following the task. Call it before the first client connects."""
    logger = logging.getLogger(SDK_LOGGER)
    logger.handlers = [_file_handler(path)]
    logger.propagate = False
    # The core writes to the console itself unless its records are forwarded to Python.
    forwarded = LoggingConfig(filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
                              forwarding=LogForwardingConfig(logger=logging.getLogger(f"{SDK_LOGGER}.core")))
    Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=forwarded)), error_if_already_set=False)


def get_logger(**bound: object) -> structlog.typing.FilteringBoundLogger:
    return structlog.get_logger().bind(**bound)
