"""One browser per test module for the browser tools' tests.

``require_browser`` (``tests/browsing.py``) skips a test without Chromium, or fails it under
``AGENT_TEST_REQUIRE_BROWSER=1``. ``shared_pool`` is the body of a module-scoped fixture: one
``BrowserPool`` installed as the process's pool (``browser_pool()``), so the tools use it and
a module launches Chromium once, not once per test; closed when the module is done.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from tests.browsing import require_browser
from tools.browser import pool as pool_module
from tools.browser.pool import BrowserPool

__all__ = ["require_browser", "shared_pool"]


async def shared_pool() -> AsyncIterator[BrowserPool]:
    """A pool installed as ``browser_pool()`` for the module, closed after."""
    require_browser()
    pool = BrowserPool()
    previous, pool_module._POOL = pool_module._POOL, pool
    try:
        yield pool
    finally:
        pool_module._POOL = previous
        await pool.close_all()
