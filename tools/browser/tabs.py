"""One task's browser between calls: its context, its tabs, what the model was not yet told.

The pool keeps a ``TaskBrowser`` per task (see ``pool``); the tools act on its active tab
and report its ``state()``, which the workflow records (see ``calls``). Popups join the
tabs as they open; dialogs are answered (nobody else is there to) and downloads refused,
and both wait as notes, with the requests the policy refused, for the next result.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from core.tool_outcome import BrowserState
from tools.browser.page import ACTION_TIMEOUT_MS, NAV_TIMEOUT_MS
from tools.browser.policy import Policy
from tools.egress_proxy import PolicyProxy

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Dialog, Download, Page

NOTES_KEPT = 20  # refused requests, dialogs and downloads kept for the next result


class TaskBrowser:
    """One task's context and tabs, kept by the pool between calls.

    ``pages`` are the tabs in the order they opened (popups included: the context's
    ``page`` event adopts them); ``active`` indexes the one the tools act on.
    ``last_state`` is what the last call reported to the workflow: when the workflow's
    record differs, another worker acted on this task since, and these pages are stale.
    """

    def __init__(self, task_id: str, context: BrowserContext, policy: Policy) -> None:
        self.task_id = task_id
        self.context = context
        self.policy = policy
        self.proxy: PolicyProxy | None = None  # set by the pool; closed with the context
        self.pages: list[Page] = []
        self.active = 0
        self.fresh = True  # created by this call: nothing of the task's was open here
        self.last_state: BrowserState | None = None
        self.last_used = time.monotonic()
        self.closed = False
        self._notes: list[str] = []
        self._opens: dict[Page, list[int]] = {}  # windows each tab asked Chromium to open
        context.on("page", self._adopt)

    @property
    def page(self) -> Page | None:
        """The active tab, or None when no tab is open."""
        if not self.pages:
            return None
        self.active = min(max(self.active, 0), len(self.pages) - 1)
        return self.pages[self.active]

    def state(self) -> BrowserState:
        """The tabs' URLs and the active one: what the workflow records after each call."""
        current = self.page
        return BrowserState(
            tabs=[page.url for page in self.pages], active=self.pages.index(current) if current else 0
        )

    async def new_tab(self) -> Page:
        """A new blank tab, made the active one."""
        page = await self.context.new_page()
        self._adopt(page)
        self.active = self.pages.index(page)
        return page

    async def windows_opened(self, page: Page) -> int:
        """How many windows ``page`` has opened (``window.open``, a link or form with a
        target) since it was first asked: Chromium says so at once, long before the
        new tab is announced."""
        if page.is_closed():
            return 0
        if page not in self._opens:
            count = self._opens[page] = [0]
            with contextlib.suppress(Exception):  # it closed meanwhile: it opens nothing more
                session = await self.context.new_cdp_session(page)
                session.on("Page.windowOpen", lambda _event: count.__setitem__(0, count[0] + 1))
                await session.send("Page.enable")
        return self._opens[page][0]

    async def close_pages(self) -> None:
        """Close every tab (the context, its cookies and routes stay)."""
        for page in list(self.pages):
            with contextlib.suppress(Exception):
                await page.close()
        self.pages.clear()
        self.active = 0

    def note(self, text: str) -> None:
        """Keep ``text`` for the next result (once: Chromium retries a failed connection)."""
        if text in self._notes:
            return
        if len(self._notes) < NOTES_KEPT:
            self._notes.append(text)
        elif len(self._notes) == NOTES_KEPT:
            self._notes.append("(more not shown)")

    def take_notes(self) -> list[str]:
        """What happened since the last result (refused requests, dialogs, downloads)."""
        notes, self._notes = self._notes, []
        return notes

    def _adopt(self, page: Page) -> None:
        if page in self.pages:
            return
        page.set_default_timeout(ACTION_TIMEOUT_MS)
        page.set_default_navigation_timeout(NAV_TIMEOUT_MS)
        page.on("close", self.forget)
        page.on("dialog", self._dialog)
        page.on("download", self._download)
        self.pages.append(page)

    def forget(self, page: Page) -> None:
        """Drop ``page`` from the tabs (it closed, or it was abandoned)."""
        if page not in self.pages:
            return
        index = self.pages.index(page)
        self.pages.remove(page)
        self._opens.pop(page, None)
        if index < self.active or self.active >= len(self.pages):
            self.active = max(0, self.active - 1)

    async def _dialog(self, dialog: Dialog) -> None:
        # Nobody is there to answer: alerts and confirms are dismissed (and reported), a
        # "leave this page?" is accepted so that navigation goes on.
        message = dialog.message.strip().replace("\n", " ")[:200]
        self.note(f"the page showed a {dialog.type} dialog ({message!r}); it was dismissed")
        with contextlib.suppress(Exception):
            await (dialog.accept() if dialog.type == "beforeunload" else dialog.dismiss())

    def _download(self, download: Download) -> None:
        self.note(
            f"the page started a download of {download.url[:200]} ({download.suggested_filename!r}); "
            "the browser does not download files: use fetch_url or the shell (curl) for it"
        )


__all__ = ["TaskBrowser"]
