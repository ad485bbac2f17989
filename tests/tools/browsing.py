"""One browser per test module for the browser tools' tests.

``require_browser`` (``tests/browsing.py``) skips a test without Chromium, or fails it under
``AGENT_TEST_REQUIRE_BROWSER=1``. ``shared_pool`` is the body of a module-scoped fixture: one
``BrowserPool`` for the module's tool contexts (``browsers``), as a worker has one, so a
module launches Chromium once, not once per test; closed when the module is done.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from tests import configured
from tests.browsing import require_browser
from tools.browser.pool import BrowserPool

__all__ = ["require_browser", "shared_pool"]


async def shared_pool() -> AsyncIterator[BrowserPool]:
    """A pool for the module (the browser settings of its environment), closed after."""
    require_browser()
    pool = BrowserPool(configured.settings().browser)
    try:
        yield pool
    finally:
        await pool.close_all()
