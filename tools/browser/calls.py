"""How every browser tool call runs: on the task's browser, its pages reopened when lost.

``with_browser`` runs a tool's work on the task's ``TaskBrowser``, held alone for the call
(see ``pool``), and puts the browser's state after the call on the result.

**Durability.** The workflow records each call's ``BrowserState`` (the tabs' URLs, the
active one) and passes it back as ``ctx.browser``. When this process holds no context for
the task (the worker that did crashed, or the idle reaper closed it), or holds one that
is out of date (another worker answered the last call), the tools reopen the recorded URLs
first and say so at the top of the result. ``view``, ``scroll``, ``screenshot`` and
``visit`` then do their work; ``click`` and ``input`` do not, because a reference from
before the reopen may now name another element: they return the fresh snapshot as an
error and ask to be called again with a reference from it. Typed text, scroll positions
and anything a script built are lost on a reopen, and the result says so. A tab whose page
stopped answering (a script that never yields) is replaced by a blank one, and the result
says that too.

Missing Chromium or playwright is never a crash: every tool returns the one line of
``chromium_problem``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from tools.base import ToolContext, ToolOutcome
from tools.browser.chromium import BrowserUnavailable, chromium_problem
from tools.browser.errors import brief, is_timeout
from tools.browser.page import NAV_TIMEOUT_MS, Watch
from tools.browser.policy import Policy
from tools.browser.pool import BrowserPool
from tools.browser.result import error, page_result
from tools.browser.tabs import TaskBrowser

if TYPE_CHECKING:
    from playwright.async_api import Page

NO_PAGE = "No page is open: call visit first."
NO_BROWSER = "the browser tools cannot run: this worker has no browser"
# A tab whose page does not evaluate a trivial script within this long is wedged (a script
# that never yields, such as while(true){}): it is replaced, or every later call would wait.
ANSWER_TIMEOUT_S = 3.0

Work = Callable[[TaskBrowser, "str | None"], Awaitable[ToolOutcome]]


async def with_browser(ctx: ToolContext, work: Work, *, needs_page: bool = True, acts: str | None = None) -> ToolOutcome:
    """Run ``work`` on the task's browser, reopening the recorded pages first when this
    process does not hold them (see the module docstring); ``acts`` names a call that acts on
    references, which is not performed right after a reopen. Every result carries the
    browser's state after the call, except when the browser died during it (the record
    stands, and the next call reopens from it)."""
    pool = ctx.browsers
    if not isinstance(pool, BrowserPool):  # None: this worker has no browser
        return error(NO_BROWSER)
    if (problem := chromium_problem(pool.settings)) is not None:
        return error(problem)
    recorded = ctx.browser if ctx.browser is not None and ctx.browser.open else None
    if needs_page and recorded is None and not pool.holds(ctx.task_id):
        return error(NO_PAGE)  # no need to start a browser to say so
    try:
        async with pool.task(ctx.task_id, Policy.of(ctx)) as tab:
            return await _run(pool, tab, ctx, work, needs_page=needs_page, acts=acts)
    except BrowserUnavailable as exc:
        return error(str(exc))
    except Exception as exc:  # the browser failed before the call could start
        return error(f"The browser failed: {brief(exc)}")


async def _run(
    pool: BrowserPool, tab: TaskBrowser, ctx: ToolContext, work: Work, *, needs_page: bool, acts: str | None
) -> ToolOutcome:
    try:
        reopened = await _restore(tab, ctx)
        replaced = await _replace_wedged(tab) if reopened is None else None
        if replaced is not None and needs_page:
            result = error(replaced)  # the page it would act on is gone
        elif replaced is not None:
            result = await work(tab, replaced)
        elif needs_page and tab.page is None:
            result = error(NO_PAGE)
        elif reopened is not None and acts is not None:
            result = await page_result(
                tab, ctx, [reopened, f"The {acts} was not performed: references from before the reopen may now "
                           "point at other elements. Call it again with a reference from this snapshot."],
                status="error",
            )  # fmt: skip
        else:
            result = await work(tab, reopened)
    except Exception as exc:
        if tab.closed or not pool.running:
            return error(
                f"The browser stopped during the call ({brief(exc)}). Call the tool again: the pages will be reopened."
            )
        result = error(f"The browser failed: {brief(exc)}")
    state = tab.state()
    tab.last_state = state
    return result.model_copy(update={"browser": state})


async def _replace_wedged(tab: TaskBrowser) -> str | None:
    """Close the active tab when its page no longer answers, open a blank one in its place,
    and say so; None when the page answers (or there is none)."""
    page = tab.page
    if page is None:
        return None
    try:
        await asyncio.wait_for(page.evaluate("0"), ANSWER_TIMEOUT_S)
        return None
    except Exception:
        if page.is_closed():
            return None
    url, index = page.url, tab.active
    with contextlib.suppress(Exception):
        await asyncio.wait_for(page.close(), ANSWER_TIMEOUT_S)
    tab.forget(page)
    blank = await tab.new_tab()
    tab.pages.remove(blank)  # in the wedged tab's place
    tab.pages.insert(min(index, len(tab.pages)), blank)
    tab.active = tab.pages.index(blank)
    return (f"[tab replaced] The page at {url} stopped answering (a script that never yields?), so its tab was "
            f"closed and a blank tab [{tab.active}] stands in its place. Visit a page to go on.")


async def _restore(tab: TaskBrowser, ctx: ToolContext) -> str | None:
    """Reopen the recorded tabs when this process's are missing or stale; the note for the
    model, or None when nothing was reopened."""
    recorded = ctx.browser
    if recorded is None or not recorded.open:
        return None
    if tab.fresh:
        why = "The worker that held this page stopped (or it sat idle)"
    elif tab.last_state is not None and tab.last_state != recorded:
        why = "This worker's copy of the page was out of date (another worker used the browser since)"
        await tab.close_pages()
    else:
        return None
    failed = await _reopen(tab, recorded.tabs, recorded.active)
    url = tab.page.url if tab.page is not None else recorded.url
    if len(recorded.tabs) == 1:
        note = f"[browser reopened] {why}, so the page was reopened at {url}; what was typed and the scroll position were lost."
    else:
        note = (f"[browser reopened] {why}, so its {len(recorded.tabs)} tabs were reopened (the active one at {url}); "
                "what was typed and the scroll positions were lost.")  # fmt: skip
    if failed:
        note += f" Could not reopen: {'; '.join(failed)}."
    return note


async def _reopen(tab: TaskBrowser, urls: list[str], active: int) -> list[str]:
    """Open ``urls`` in new tabs (in parallel), the ``active`` one made active; what failed."""
    failed: list[str] = []
    pages = [await tab.new_tab() for _ in urls]

    async def load(page: Page, url: str) -> None:
        if url == "about:blank":
            return
        if (reason := await tab.policy.check(url)) is not None:
            failed.append(f"{url} ({reason})")
            return
        async with Watch(page) as watch:
            try:
                await page.goto(url, wait_until="load", timeout=NAV_TIMEOUT_MS)
            except Exception as exc:
                if not is_timeout(exc):
                    failed.append(f"{url} ({brief(exc)})")
            await watch.quiet()

    await asyncio.gather(*(load(page, url) for page, url in zip(pages, urls)))
    tab.active = min(max(active, 0), len(pages) - 1)
    return failed


__all__ = ["with_browser"]
