"""Opening and reading pages: the ``visit`` and ``view`` tools.

``visit`` opens a URL in the active tab (or a new one) and answers with the page's
accessibility snapshot; ``view`` shows it again with fresh references, or another tab.

**Safety.** Every URL, the visited one and every request a page makes, goes through the
task's ``Policy`` (see ``policy``): http and https only with ``--network``, never to
hosts on the deny list (``tools.egress``), files only inside the workspace.
``visit`` refuses up front with the rule's name; the route aborts the rest and the next
result lists what was refused. Downloads are off.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.browser.calls import with_browser
from tools.browser.errors import is_timeout
from tools.browser.page import NAV_TIMEOUT_MS, Watch
from tools.browser.policy import Policy, workspace_url
from tools.browser.result import DEFAULT_SNAPSHOT_CHARS, MAX_SNAPSHOT_CHARS, UNTRUSTED, error, page_result
from tools.browser.tabs import TaskBrowser

if TYPE_CHECKING:
    from playwright.async_api import Page


class VisitArgs(StrictArgs):
    url: str = Field(
        min_length=1, max_length=8000,
        description="The http or https URL to open, or a file in the workspace (a file:// URL or a relative path).",
    )  # fmt: skip
    new_tab: bool = Field(default=False, description="Open it in a new tab; the current page stays open in its own.")


class ViewArgs(StrictArgs):
    max_chars: int = Field(
        default=DEFAULT_SNAPSHOT_CHARS, ge=1, le=MAX_SNAPSHOT_CHARS, description="At most this many characters."
    )
    tab: int | None = Field(default=None, ge=0, description="Switch to this tab (0 is the first) before reading it.")


async def visit(args: VisitArgs, ctx: ToolContext) -> ToolOutcome:
    url = workspace_url(args.url, ctx.workspace)
    if (reason := await Policy.of(ctx).check(url)) is not None:
        return error(f"Refused to open {url}: {reason}.")

    async def work(tab: TaskBrowser, reopened: str | None) -> ToolOutcome:
        new = args.new_tab or tab.page is None
        page = await tab.new_tab() if new else tab.page
        assert page is not None
        lead = [reopened]
        async with Watch(page) as watch:
            try:
                response = await page.goto(url, wait_until="load", timeout=NAV_TIMEOUT_MS)
            except Exception as exc:
                if not is_timeout(exc):
                    return await _visit_failed(tab, page, url, exc, new=new)
                lead.append(
                    f"[The page did not finish loading within {NAV_TIMEOUT_MS // 1000} s: this is what it has so far.]"
                )
                response = None
            await watch.quiet()  # the data its scripts fetch after "load"
        status = ""
        if response is not None and response.status >= 400:
            status = f" (HTTP {response.status} {response.status_text})".replace(" )", ")")
        where = f" in a new tab [{tab.active}]" if args.new_tab else ""
        lead.append(f"Opened {page.url}{status}{where}.")
        return await page_result(tab, ctx, lead)

    return await with_browser(ctx, work, needs_page=False)


async def _visit_failed(tab: TaskBrowser, page: Page, url: str, exc: BaseException, *, new: bool) -> ToolOutcome:
    """A visit that loaded nothing: say why (with what the route refused), and leave no error
    page behind (a new tab is closed, an old one goes back to where it was)."""
    why = str(exc).strip().splitlines()[0].removeprefix("Page.goto: ") if str(exc).strip() else type(exc).__name__
    if "Download is starting" in why:
        why = "the URL is a download, not a page; the browser does not download files: use fetch_url or the shell (curl)"
    notes = tab.take_notes()
    if page.url.startswith("chrome-error:") and not new:
        with contextlib.suppress(Exception):
            await page.go_back(timeout=NAV_TIMEOUT_MS)
    if new or page.url.startswith("chrome-error:"):
        with contextlib.suppress(Exception):
            await page.close()
    lines = [f"Could not open {url}: {why}."]
    lines.extend(f"- {note}" for note in notes)
    return error("\n".join(lines))


async def view(args: ViewArgs, ctx: ToolContext) -> ToolOutcome:
    async def work(tab: TaskBrowser, reopened: str | None) -> ToolOutcome:
        lead = [reopened]
        if args.tab is not None:
            if args.tab >= len(tab.pages):
                return error(f"There is no tab {args.tab}: the tabs are numbered 0 to {len(tab.pages) - 1}.")
            tab.active = args.tab
            lead.append(f"Switched to tab [{args.tab}].")
        return await page_result(tab, ctx, lead, max_chars=args.max_chars)

    return await with_browser(ctx, work)


VISIT = ToolDefinition(
    name="visit",
    description=f"""\
Open a URL in the task's browser and return the page as an accessibility snapshot.
The browser is a real Chromium that runs the page's JavaScript. The snapshot has one line
per element; interactive ones carry a reference like [ref=e5] for click and input.
- http and https need a task started with network access; files open only inside the workspace.
- To read an article, fetch_url is cheaper; use the browser for pages that need JavaScript,
  forms or clicks. new_tab keeps the current page open.
- {UNTRUSTED}
""",
    args_model=VisitArgs,
    handler=visit,
    danger=Danger.MODERATE,
    idempotent=True,
    read_only=True,  # it opens a page: never parallel, the calls after it read that page
    summary_keys=("url",),
    compact_keys=("url",),
)

VIEW = ToolDefinition(
    name="view",
    description=f"""\
Show the active page's accessibility snapshot again, with fresh element references.
tab=N switches to another tab first. Use it when the page changed on its own or a
reference was refused. {UNTRUSTED}
""",
    args_model=ViewArgs,
    handler=view,
    danger=Danger.SAFE,
    idempotent=True,
    read_only=True,
    parallel=lambda args: args.tab is None,  # switching tabs changes what the others read
    compact_keys=("tab",),
)


__all__ = ["VIEW", "VISIT", "ViewArgs", "VisitArgs", "view", "visit"]
