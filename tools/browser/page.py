"""Reading and waiting on a page: the snapshot, settling after an action, images.

**The snapshot** is playwright's own AI snapshot (``page.aria_snapshot(mode="ai")``): the
accessibility tree as YAML-like lines, one per element, each interactive one with a
reference, ``- textbox "Name" [ref=e5]``. ``page.locator("aria-ref=e5")`` finds the element
again, against the latest snapshot of that page; so every tool that changes the page takes
a new snapshot before it answers, and the model's references are always from the page as
it is. The tree is what a screen reader reads: text, headings, links with their URLs,
form fields with their labels and values, without markup or styles, so it is a fraction of
the HTML's size and names what can be clicked.

**Waiting** (``Watch``): a ``Watch`` on a page records the requests in flight, whether its
main frame navigated, and (given the task's tabs) the tabs opened meanwhile.

- ``quiet`` waits until no request has been in flight for ``QUIET_S`` (at most
  ``IDLE_WAIT_MS``): after a page's ``load`` event, for the data a script fetches. It is
  playwright's ``networkidle`` made short: that one always waits 500 ms of silence, the
  price of a whole snapshot on every call.
- ``settle``, after a click, a key press or a scroll: a navigation is waited on until its
  document has loaded (at most ``NAV_TIMEOUT_MS``) and then quiet; other requests until
  they finish (at most ``REQUEST_WAIT_S``); a new tab becomes the active one and is waited
  on the same way. An action that set off nothing costs one short pause. This is the
  approach of Microsoft's playwright-mcp, with shorter bounds: the model can always call
  ``view`` again.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from core.images import image_dimensions, sniff_image_type

if TYPE_CHECKING:
    from playwright.async_api import Frame, Page, Request

    from tools.browser.tabs import TaskBrowser

ACTION_TIMEOUT_MS = 5_000  # clicks, typing, reading the page
NAV_TIMEOUT_MS = 20_000  # loading a page
IDLE_WAIT_MS = 1_500  # after "load", how long to wait at most for the network to go quiet
# After an action, for what it sets off to start: a navigation's first request comes at
# once, a script's timers run within this pause (kept on the page's own clock). A window it
# opens is known at once (Chromium's ``Page.windowOpen``) and waited on until its tab is
# announced, which takes 0.1 s and more on a busy machine.
SETTLE_PAUSE_MS = 200
_PAUSE = "ms => new Promise(done => setTimeout(done, ms))"
REQUEST_WAIT_S = 2.0  # at most this long for requests an action started (not navigations)
QUIET_S = 0.1  # no request in flight for this long: the page is quiet
SNAPSHOT_TRIES = 3


async def loaded(page: Page) -> None:
    """Wait for the page's ``load`` event (at most ``NAV_TIMEOUT_MS``), then for quiet."""
    async with Watch(page) as watch:
        with contextlib.suppress(Exception):
            await page.wait_for_load_state("load", timeout=NAV_TIMEOUT_MS)
        await watch.quiet()


async def snapshot(page: Page) -> str:
    """The page's AI snapshot, tried again after a navigation that destroyed the document
    being read (a redirect or a script that reloads the page)."""
    for attempt in range(SNAPSHOT_TRIES):
        try:
            return await page.aria_snapshot(mode="ai", timeout=ACTION_TIMEOUT_MS)
        except Exception:
            if attempt == SNAPSHOT_TRIES - 1 or page.is_closed():
                raise
            await loaded(page)
    raise AssertionError("unreachable")


async def title_of(page: Page) -> str:
    """The page's title ("" while it navigates or when it has none)."""
    try:
        return (await asyncio.wait_for(page.title(), ACTION_TIMEOUT_MS / 1000)).strip()
    except Exception:
        return ""


class Watch:
    """What happens on ``page`` (and, given the task's ``tab``, which tabs open) while the
    watch is on; ``quiet`` and ``settle`` wait for it (see the module docstring)."""

    def __init__(self, page: Page, tab: TaskBrowser | None = None) -> None:
        self.page = page
        self.tab = tab
        self.pending: set[Request] = set()
        self.navigating = False
        self.nav_done = asyncio.Event()
        self.new_tabs: list[Page] = []
        self.opens_before = 0
        self.tab_opened = asyncio.Event()

    async def __aenter__(self) -> Watch:
        if self.tab is not None:
            self.opens_before = await self.tab.windows_opened(self.page)
        self.page.on("request", self._request)
        self.page.on("requestfinished", self._finished)
        self.page.on("requestfailed", self._failed)
        self.page.on("framenavigated", self._navigated)
        if self.tab is not None:
            self.tab.context.on("page", self._new_tab)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        with contextlib.suppress(Exception):  # the page closed meanwhile
            self.page.remove_listener("request", self._request)
            self.page.remove_listener("requestfinished", self._finished)
            self.page.remove_listener("requestfailed", self._failed)
            self.page.remove_listener("framenavigated", self._navigated)
        if self.tab is not None:
            with contextlib.suppress(Exception):
                self.tab.context.remove_listener("page", self._new_tab)

    def _main_navigation(self, request: Request) -> bool:
        try:
            return request.is_navigation_request() and request.frame == self.page.main_frame
        except Exception:
            return False

    def _request(self, request: Request) -> None:
        self.pending.add(request)
        if self._main_navigation(request):
            self.navigating = True

    def _finished(self, request: Request) -> None:
        self.pending.discard(request)

    def _failed(self, request: Request) -> None:
        self.pending.discard(request)
        if self._main_navigation(request):
            self.nav_done.set()  # refused, or turned into a download: no document will load

    def _navigated(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self.navigating = True
            self.nav_done.set()

    def _new_tab(self, page: Page) -> None:
        self.new_tabs.append(page)
        self.tab_opened.set()

    async def quiet(self, timeout_s: float = IDLE_WAIT_MS / 1000) -> None:
        """Wait until no request has been in flight for ``QUIET_S``, at most ``timeout_s``
        (pages that poll or stream are never quiet)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        quiet_since: float | None = None
        while loop.time() < deadline and not self.page.is_closed():
            if self.pending:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = loop.time()
            elif loop.time() - quiet_since >= QUIET_S:
                return
            await asyncio.sleep(0.02)

    async def settle(self) -> Page | None:
        """Wait for what the action set off (see the module docstring). Returns the new tab
        it opened, now the active one, or None."""
        try:  # paused on the page's clock: a timer the action set for sooner has run by then
            await asyncio.wait_for(self.page.evaluate(_PAUSE, SETTLE_PAUSE_MS), ACTION_TIMEOUT_MS / 1000)
        except Exception:  # navigated away meanwhile, or hung
            await asyncio.sleep(SETTLE_PAUSE_MS / 1000)
        if self.navigating:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.nav_done.wait(), NAV_TIMEOUT_MS / 1000)
            await loaded(self.page)
        else:
            await self.quiet(REQUEST_WAIT_S)
        if self.tab is None:
            return None
        if await self.tab.windows_opened(self.page) > self.opens_before and not self.new_tabs:
            # Chromium said a window opens; its tab is announced once it is set up.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.tab_opened.wait(), ACTION_TIMEOUT_MS / 1000)
        opened = next((page for page in reversed(self.new_tabs) if page in self.tab.pages), None)
        if opened is not None:
            self.tab.active = self.tab.pages.index(opened)
            await loaded(opened)
        return opened


# --- images ---------------------------------------------------------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a screenshot (PNG or JPEG) from its header; None for anything else."""
    media_type = sniff_image_type(data[:16])
    return image_dimensions(data, media_type) if media_type else None


__all__ = ["ACTION_TIMEOUT_MS", "IDLE_WAIT_MS", "NAV_TIMEOUT_MS", "Watch", "image_size", "loaded", "snapshot", "title_of"]
