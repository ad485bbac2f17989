"""Who owns the browser: one Chromium per worker process, one context per task.

A browser is too slow to start per call (about a second) and a page too stateful to
rebuild per call (what was typed, where it scrolled, the cookies of a login), so both live
in the worker process between calls, in a ``BrowserPool`` (worker.py makes it from
``Settings.browser``; each tool call finds it in its ``ToolContext``):

- **One Chromium**, launched on first use with playwright (the one ``chromium`` finds,
  never a browser playwright downloads). When it crashes, the contexts it held are
  forgotten and the next call launches a new one; the tools then reopen the task's pages
  from what the workflow recorded (see ``calls``).
- **One context per task** (``ctx.task_id``): its own cookies and storage, every request
  and connection checked against the task's ``Policy`` (see ``guard``). Its tabs, the
  active one, and what the model has not yet been told (refused requests, dialogs,
  downloads) live in a ``TaskBrowser`` (see ``tabs``).
- **Calls of one task are serialized** by a lock per task (a model that sends two clicks
  at once gets them one after the other); different tasks run in parallel.
- **An idle reaper** closes a context unused for ``AGENT_BROWSER_IDLE_S`` seconds (600):
  a task that stopped browsing (or waits hours for an approval) does not hold memory.
  ``close_task`` closes one when its task ends, ``close_all`` everything at worker
  shutdown; both are safe to call twice and never launch anything.
- ``render`` loads a URL in a throwaway context under the same rules and returns its HTML:
  ``fetch_url``'s fallback for pages that only JavaScript fills.

playwright is imported only when a browser is first needed: it is an optional dependency,
and a worker that never browses does not pay its import.

Chromium's own sandbox is used when it can be: as root Chromium refuses it, and in a
container without user namespaces it fails to start; then it runs without, and says so in
the log once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.settings import BrowserSettings
from tools.browser.chromium import BrowserUnavailable, chromium_problem, find_chromium
from tools.browser.errors import first_line
from tools.browser.guard import guarded_context
from tools.browser.page import NAV_TIMEOUT_MS, Watch
from tools.browser.policy import Policy
from tools.browser.tabs import TaskBrowser

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

log = logging.getLogger(__name__)

LAUNCH_TIMEOUT_MS = 30_000
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
                raise BrowserUnavailable(f"the browser tools cannot run: Chromium ({path}) did not start: {first_line(exc)}") from None
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
            async with Watch(page) as watch:
                try:
                    response = await page.goto(url, wait_until="load", timeout=timeout_ms)
                except Exception as exc:
                    refused = f" ({owner.notes[0]})" if owner.notes else ""
                    raise RenderFailed(f"{first_line(exc)}{refused}") from None
                await watch.quiet()  # the data its scripts fetch after "load"
            return Rendered(url=page.url, html=await page.content(), status=response.status if response else None)
        finally:
            with contextlib.suppress(Exception):
                await context.close()
            proxy.close()


class RenderFailed(Exception):
    """The page could not be rendered; the message says why, in one line."""


__all__ = ["BrowserPool", "RenderFailed", "Rendered"]
