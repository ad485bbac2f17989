"""Which Chromium runs the browser tools, and why none can.

Debian's ``chromium``, never a browser playwright downloads: ``AGENT_CHROMIUM`` (read into
``Settings.browser``), else ``chromium``, ``chromium-browser`` or ``google-chrome`` on
PATH. ``chromium_problem`` says, in one line, why the browser tools cannot run here (or
None); ``BrowserUnavailable`` carries that line where a browser was needed and none could
start.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

from core.settings import BrowserSettings

CHROMIUM_ENV = "AGENT_CHROMIUM"
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
INSTALL_HINT = "install it with `apt-get install chromium`, or set AGENT_CHROMIUM to a Chromium executable"


class BrowserUnavailable(Exception):
    """No browser can run here; the message is one line for the model and the log."""


def find_chromium(settings: BrowserSettings) -> tuple[str | None, str | None]:
    """(the Chromium executable, None) or (None, one line saying what is wrong)."""
    if configured := settings.chromium:
        found = shutil.which(configured)
        if found and os.access(found, os.X_OK):
            return found, None
        return None, f"the browser tools cannot run: {CHROMIUM_ENV}={configured} is not an executable ({INSTALL_HINT})"
    for name in CANDIDATES:
        if found := shutil.which(name):
            return found, None
    return None, f"the browser tools cannot run: Chromium was not found on PATH ({INSTALL_HINT})"


def chromium_problem(settings: BrowserSettings) -> str | None:
    """None when a usable Chromium (and playwright) is found; else one line saying how to
    install it. Cheap (a PATH lookup): call it before every use."""
    if importlib.util.find_spec("playwright") is None:
        return "the browser tools cannot run: the playwright package is missing (pip install playwright==1.65.2)"
    return find_chromium(settings)[1]


__all__ = ["BrowserUnavailable", "chromium_problem", "find_chromium"]
