"""structlog set-up for everything outside workflows (workflows use workflow.logger).

A log line that cannot be written (stderr a pipe whose reader is gone, as with
``worker.py | tee`` after Ctrl-C) is dropped: nothing, a worker's stop least of all,
may depend on being able to log."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import structlog

_configured = False
SDK_LOGGER = "temporalio"  # the SDK's loggers: temporalio.activity, temporalio.worker, ...


class QuietPrintLogger(structlog.PrintLogger):
    """A print logger that drops a line it cannot write instead of raising."""

    def msg(self, message: str) -> None:
        try:
            super().msg(message)
        except (OSError, ValueError):  # a broken pipe, or a stream closed under us
            pass

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


def configure_logging(level: str = "INFO") -> None:
    global _configured
    if _configured:
        return
    _configured = True
    renderer = (
        structlog.dev.ConsoleRenderer(colors=False)
        if sys.stderr.isatty()
        else structlog.processors.JSONRenderer()
    )
    from runtime.secrets import SecretStore, redact_processor

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            redact_processor(SecretStore.from_env()),  # no secret ever reaches a log line
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=lambda *_: QuietPrintLogger(sys.stderr),
    )


def sdk_logs_to(path: Path) -> None:
    """Send the Temporal SDK's log records to ``path`` instead of the terminal: a worker run
    inside a CLI command (``run``, ``eval``) logs there, e.g. the traceback the SDK writes
    for an activity a task cancelled, which is routine and no news to the person."""
    logger = logging.getLogger(SDK_LOGGER)
    if any(isinstance(h, logging.FileHandler) and Path(h.baseFilename) == path.resolve() for h in logger.handlers):
        return
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def get_logger(**bound: object) -> structlog.typing.FilteringBoundLogger:
    return structlog.get_logger().bind(**bound)
