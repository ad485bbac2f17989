"""Who owns the browser: one Chromium per worker process, one context per task.

A browser is too slow to start per call (about a second) and a page too stateful to
rebuild per call (what was typed, where it scrolled, the cookies of a login), so both live
in the worker process between calls, in a ``BrowserPool`` (worker.py makes it from
``Settings.browser``; each tool call finds it in its ``ToolContext``):

- **One Chromium**, launched on first use with playwright (Debian's ``chromium``, never a
  browser playwright downloads: ``AGENT_CHROMIUM``, else ``chromium``, ``chromium-browser``
  or ``google-chrome`` on PATH). When it crashes, the contexts it held are forgotten and the
  next call launches a new one; the tools then reopen the task's pages from what the
  workflow recorded (see ``actions``).
- **One context per task** (``ctx.task_id``): its own cookies and storage, downloads off,
  service workers blocked (their requests would bypass the route), a fixed 1280x800
  viewport, a route that checks every request against the task's ``Policy``, and its own
  ``PolicyProxy`` that checks every connection (redirect hops and WebSockets, which the
  route does not see). Its tabs, the active one, and what the model has not yet been told
  (refused requests, dialogs, downloads) live in a ``TaskBrowser``.
- **Calls of one task are serialized** by a lock per task (a model that sends two clicks
  at once gets them one after the other); different tasks run in parallel.
- **An idle reaper** closes a context unused for ``AGENT_BROWSER_IDLE_S`` seconds (600):
  a task that stopped browsing (or waits hours for an approval) does not hold memory.
  ``close_task`` closes one when its task ends, ``close_all`` everything at worker
  shutdown; both are safe to call twice and never launch anything.
- ``render`` loads a URL in a throwaway context under the same rules and returns its HTML:
  ``fetch_url``'s fallback for pages that only JavaScript fills.

playwright is imported only when a browser is first needed: it is an optional dependency,
and a worker that never browses does not pay its import. ``chromium_problem`` says, in one
line, why the browser tools cannot run here (or None).

Chromium's own sandbox is used when it can be: as root Chromium refuses it, and in a
container without user namespaces it fails to start; then it runs without, and says so in
the log once.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import shutil
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.settings import BrowserSettings
from core.tool_outcome import BrowserState
from tools.browser.page import ACTION_TIMEOUT_MS, NAV_TIMEOUT_MS, Watch
from tools.browser.policy import Policy
from tools.browser.proxy import Owner, PolicyProxy

if TYPE_CHECKING:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        Dialog,
        Download,
        Page,
        Playwright,
        Request,
        Route,
    )

log = logging.getLogger(__name__)

CHROMIUM_ENV = "AGENT_CHROMIUM"
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
INSTALL_HINT = "install it with `apt-get install chromium`, or set AGENT_CHROMIUM to a Chromium executable"
VIEWPORT = {"width": 1280, "height": 800}
LAUNCH_TIMEOUT_MS = 30_000
NOTES_KEPT = 20  # refused requests, dialogs and downloads kept for the next result
# No background traffic of Chromium's own (updates, sync, safe browsing, QUIC probes, DNS
# prefetching), WebRTC only through the context's proxy (which carries no UDP: nothing goes
# around it), a small /dev/shm in containers tolerated.
LAUNCH_ARGS = [
    "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-quic", "--mute-audio", "--dns-prefetch-disable",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    # Chromium's own calls home (autofill, translation, hints) would show as refused requests.
    "--disable-features=AutofillServerCommunication,Translate,OptimizationHints,MediaRouter,InterestFeedContentSuggestions",
]  # fmt: skip


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


def _brief(exc: BaseException) -> str:
    """An exception's message, first line only (playwright appends a call log)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


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


async def install_routes(context: BrowserContext, owner: Owner) -> None:
    """Check every request of ``context`` against ``owner.policy``: a refused one is aborted
    (the page sees a network error) and noted for the model. The hops of a redirect and
    WebSockets bypass routes: the context's ``PolicyProxy`` checks those."""

    async def check(route: Route, request: Request) -> None:
        try:
            reason = owner.policy.refusal(request.url)
            if reason is None:
                await route.continue_()
                return
            owner.note(f"refused {request.url[:200]}: {reason}")
            await route.abort("blockedbyclient")
        except Exception as exc:  # the page closed meanwhile: nothing to answer
            log.debug("browser route: %s", _brief(exc))

    await context.route("**/*", check)


async def guarded_context(
    browser: Browser, make_owner: Callable[[BrowserContext], Owner]
) -> tuple[BrowserContext, Owner, PolicyProxy]:
    """A new context whose traffic all goes through a ``PolicyProxy`` and a checking route:
    (the context, its owner made by ``make_owner``, the proxy to close after the context)."""
    proxy = PolicyProxy()
    server = await proxy.start()
    try:
        context = await browser.new_context(
            viewport={"width": VIEWPORT["width"], "height": VIEWPORT["height"]}, accept_downloads=False,
            service_workers="block", proxy={"server": server},
        )  # fmt: skip
    except BaseException:
        proxy.close()
        raise
    owner = proxy.owner = make_owner(context)
    await install_routes(context, owner)
    return context, owner, proxy


@dataclass
class _Throwaway:
    """The owner of a ``render`` context: its policy, and what was refused (for the error)."""

    policy: Policy
    notes: list[str]

    def note(self, text: str) -> None:
        self.notes.append(text)


@dataclass
class Rendered:
    url: str  # after redirects
    html: str
    status: int | None  # of the main document; None when unknown


class BrowserPool:
    """This process's browser and its tasks' contexts (see the module docstring)."""

    def __init__(self, settings: BrowserSettings) -> None:
        self.settings = settings  # which Chromium, and when an unused context is closed
        self.idle_s = settings.idle_s
        self.launches = 0  # how many times Chromium was started (benchmarks, tests)
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._sandbox: bool | None = None  # whether Chromium's sandbox works here (None: not tried)
        self._tasks: dict[str, TaskBrowser] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._launching: asyncio.Lock | None = None
        self._reaper: asyncio.Task[None] | None = None

    # -- the browser ------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    def holds(self, task_id: str) -> bool:
        """Whether this process has a context for the task."""
        return task_id in self._tasks

    async def _ensure_browser(self) -> Browser:
        """The running browser, launched (again, after a crash) when there is none."""
        if self._launching is None:
            self._launching = asyncio.Lock()
        async with self._launching:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            self._forget_browser()
            path, problem = find_chromium(self.settings)
            if path is None or (problem := chromium_problem(self.settings)) is not None:
                raise BrowserUnavailable(problem)
            from playwright.async_api import async_playwright

            if self._playwright is None:
                self._playwright = await async_playwright().start()
            browser = await self._launch(self._playwright, path)
            browser.on("disconnected", self._disconnected)
            self._browser = browser
            self.launches += 1
            return browser

    async def _launch(self, playwright: Playwright, path: str) -> Browser:
        if self._sandbox is None:
            self._sandbox = os.geteuid() != 0  # root: Chromium refuses its sandbox
        try:
            return await playwright.chromium.launch(
                executable_path=path, args=LAUNCH_ARGS, chromium_sandbox=self._sandbox, timeout=LAUNCH_TIMEOUT_MS
            )
        except Exception as exc:
            if not self._sandbox:
                await self._stop_playwright()
                raise BrowserUnavailable(f"the browser tools cannot run: Chromium ({path}) did not start: {_brief(exc)}") from None
        log.warning("Chromium did not start with its sandbox (no user namespaces here?): running it without")
        self._sandbox = False
        return await self._launch(playwright, path)

    def _disconnected(self, browser: Browser) -> None:
        if browser is self._browser:
            log.warning("Chromium stopped (crashed or was killed): its pages are gone; the next call relaunches it")
            self._forget_browser()

    def _forget_browser(self) -> None:
        """The browser is gone: so are its contexts (the tools reopen pages from the record)."""
        self._browser = None
        for tab in self._tasks.values():
            tab.closed = True
            if tab.proxy is not None:
                tab.proxy.close()
        self._tasks.clear()

    async def _stop_playwright(self) -> None:
        playwright, self._playwright = self._playwright, None
        if playwright is not None:
            with contextlib.suppress(Exception):
                await playwright.stop()

    # -- tasks --------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def task(self, task_id: str, policy: Policy) -> AsyncIterator[TaskBrowser]:
        """The task's ``TaskBrowser``, held alone for the call (a new one, ``fresh``, when this
        process has none); raises ``BrowserUnavailable`` when no browser can run."""
        lock = self._locks.setdefault(task_id, asyncio.Lock())
        async with lock:
            tab = self._tasks.get(task_id)
            if tab is None or tab.closed:
                browser = await self._ensure_browser()
                _, owner, proxy = await guarded_context(browser, lambda context: TaskBrowser(task_id, context, policy))
                assert isinstance(owner, TaskBrowser)
                tab, tab.proxy = owner, proxy
                self._tasks[task_id] = tab
                self._start_reaper()
            tab.policy = policy
            tab.last_used = time.monotonic()
            try:
                yield tab
            finally:
                tab.fresh = False
                tab.last_used = time.monotonic()

    async def close_task(self, task_id: str) -> None:
        """Close the task's context and tabs, if this process holds them. Safe to call twice."""
        tab = self._tasks.pop(task_id, None)
        lock = self._locks.get(task_id)
        if lock is not None and not lock.locked():
            del self._locks[task_id]
        if tab is not None:
            tab.closed = True
            with contextlib.suppress(Exception):
                await tab.context.close()
            if tab.proxy is not None:
                tab.proxy.close()

    async def close_all(self) -> None:
        """Close every context, the browser and playwright (worker shutdown). Safe to call
        twice; the pool launches a new browser if used again."""
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.cancel()
            with contextlib.suppress(BaseException):
                await reaper
        for task_id in list(self._tasks):
            await self.close_task(task_id)
        browser, self._browser = self._browser, None
        if browser is not None:
            with contextlib.suppress(Exception):
                await browser.close()
        await self._stop_playwright()

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap(), name="browser-idle-reaper")

    async def _reap(self) -> None:
        """Close contexts idle longer than ``idle_s``; ends when none is left."""
        every = min(max(self.idle_s / 4, 0.05), 30.0)
        while self._tasks:
            await asyncio.sleep(every)
            now = time.monotonic()
            for task_id, tab in list(self._tasks.items()):
                lock = self._locks.get(task_id)
                if now - tab.last_used > self.idle_s and not (lock is not None and lock.locked()):
                    log.info("closing the browser context of task %s: idle %.0f s", task_id, now - tab.last_used)
                    await self.close_task(task_id)

    # -- one-off rendering ------------------------------------------------------------------

    async def render(self, url: str, policy: Policy, *, timeout_ms: int = NAV_TIMEOUT_MS) -> Rendered:
        """Load ``url`` in a throwaway context (same rules as a task's) and return its HTML.
        Raises ``BrowserUnavailable`` without a browser, ``RenderFailed`` when the page fails."""
        browser = await self._ensure_browser()
        context, owner, proxy = await guarded_context(browser, lambda _context: _Throwaway(policy, []))
        assert isinstance(owner, _Throwaway)
        try:
            page = await context.new_page()
            with Watch(page) as watch:
                try:
                    response = await page.goto(url, wait_until="load", timeout=timeout_ms)
                except Exception as exc:
                    refused = f" ({owner.notes[0]})" if owner.notes else ""
                    raise RenderFailed(f"{_brief(exc)}{refused}") from None
                await watch.quiet()  # the data its scripts fetch after "load"
            return Rendered(url=page.url, html=await page.content(), status=response.status if response else None)
        finally:
            with contextlib.suppress(Exception):
                await context.close()
            proxy.close()


class RenderFailed(Exception):
    """The page could not be rendered; the message says why, in one line."""


__all__ = [
    "BrowserPool",
    "BrowserUnavailable",
    "RenderFailed",
    "Rendered",
    "TaskBrowser",
    "chromium_problem",
    "find_chromium",
]
