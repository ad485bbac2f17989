"""The browser in tests: Chromium is a Debian package (``.ci/run`` installs it).

On a machine without it the browser tests are skipped with the line that says how to
install it, except under ``AGENT_TEST_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where they
fail instead: CI never hides a missing browser.
"""

from __future__ import annotations

import os

import pytest

from runtime.settings import load_settings
from tools.browser import chromium_problem

REQUIRE_ENV = "AGENT_TEST_REQUIRE_BROWSER"


def require_browser() -> None:
    """Skip (or fail, in CI) the calling test when the browser tools cannot run here."""
    problem = chromium_problem(load_settings().browser)
    if problem is None:
        return
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(problem)
    pytest.skip(problem)
