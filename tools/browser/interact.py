"""Acting on a page: the ``click``, ``input`` and ``scroll`` tools.

``click`` and ``input`` take an element's reference from the latest snapshot (``[ref=e5]``,
see ``page``), and every action answers with the page as it is after it, so the model
never acts on references it has not seen. A reference that no longer resolves gives an
error that says to call ``view``; nothing is clicked by guess. After a reopen neither is
performed (see ``calls``). ``scroll`` turns the mouse wheel at the middle of the view.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import field_validator

from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.browser.calls import with_browser
from tools.browser.errors import brief
from tools.browser.guard import VIEWPORT
from tools.browser.page import ACTION_TIMEOUT_MS, Watch
from tools.browser.result import UNTRUSTED, error, page_result
from tools.browser.tabs import TaskBrowser

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page


_REF = re.compile(r"(?<![A-Za-z0-9])((?:f\d+)?e\d+)(?![A-Za-z0-9])")


class RefArgs(StrictArgs):
    ref: str = Field(description='An element reference from the latest snapshot, e.g. "e12".')

    @field_validator("ref")
    @classmethod
    def _one_reference(cls, value: str) -> str:
        """``e12``, also when sent as ``[ref=e12]`` or ``ref=e12``."""
        found = _REF.search(value)
        if found is None:
            raise ValueError('a reference looks like "e12" (shown as [ref=e12] in the snapshot)')
        return found.group(1)


class ClickArgs(RefArgs):
    pass


class InputArgs(RefArgs):
    text: str = Field(
        max_length=20_000,
        description="The text to type (it replaces what the field held); for a select box, the option's label or value.",
    )
    submit: bool = Field(default=False, description="Press Enter after typing (submits most forms).")


class ScrollArgs(StrictArgs):
    direction: Literal["down", "up"] = Field(default="down", description="Which way to scroll.")
    amount: float = Field(default=1.0, gt=0, le=50, description="How far, in screens (0.5 is half a screen).")


async def _locate(page: Page, ref: str) -> Locator | None:
    """The element ``ref`` names in the page's latest snapshot, or None."""
    locator = page.locator(f"aria-ref={ref}")
    try:
        return locator if await locator.count() == 1 else None
    except Exception:
        return None


def _stale(ref: str) -> ToolOutcome:
    return error(
        f"There is no element {ref} on the page now: references change when the page changes. "
        "Call view for fresh references."
    )


async def click(args: ClickArgs, ctx: ToolContext) -> ToolOutcome:
    async def work(tab: TaskBrowser, reopened: str | None) -> ToolOutcome:
        assert tab.page is not None
        locator = await _locate(tab.page, args.ref)
        if locator is None:
            return _stale(args.ref)
        async with Watch(tab.page, tab) as watch:
            try:
                await locator.click(timeout=ACTION_TIMEOUT_MS)
            except Exception as exc:
                return error(f"Could not click {args.ref}: {brief(exc)}. Call view to see the page as it is now.")
            opened = await watch.settle()
        done = f"Clicked {args.ref}."
        if opened is not None:
            done += f" It opened a new tab, now the active one [{tab.active}]."
        return await page_result(tab, ctx, [reopened, done])

    return await with_browser(ctx, work, acts=f"click on {args.ref}")


async def type_text(args: InputArgs, ctx: ToolContext) -> ToolOutcome:
    async def work(tab: TaskBrowser, reopened: str | None) -> ToolOutcome:
        assert tab.page is not None
        locator = await _locate(tab.page, args.ref)
        if locator is None:
            return _stale(args.ref)
        async with Watch(tab.page, tab) as watch:
            try:
                tag = await locator.evaluate("element => element.tagName.toLowerCase()", timeout=ACTION_TIMEOUT_MS)
                if tag == "select":
                    await locator.select_option(args.text, timeout=ACTION_TIMEOUT_MS)
                    done = f"Chose an option in {args.ref}"
                else:
                    await locator.fill(args.text, timeout=ACTION_TIMEOUT_MS)
                    done = f"Typed {len(args.text)} characters into {args.ref}"
                if args.submit:
                    await locator.press("Enter", timeout=ACTION_TIMEOUT_MS)
                    done += " and pressed Enter"
            except Exception as exc:
                return error(f"Could not type into {args.ref}: {brief(exc)}. Call view to see the page as it is now.")
            opened = await watch.settle()
        if opened is not None:
            done += f"; a new tab opened, now the active one [{tab.active}]"
        return await page_result(tab, ctx, [reopened, done + "."])

    return await with_browser(ctx, work, acts=f"input into {args.ref}")


_POSITION = "() => [Math.round(scrollY), innerHeight, document.documentElement.scrollHeight]"
_TWO_FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


async def scroll(args: ScrollArgs, ctx: ToolContext) -> ToolOutcome:
    async def work(tab: TaskBrowser, reopened: str | None) -> ToolOutcome:
        page = tab.page
        assert page is not None
        size = page.viewport_size or VIEWPORT
        before = await page.evaluate(_POSITION)
        step = args.amount * size["height"] * (1 if args.direction == "down" else -1)
        async with Watch(page, tab) as watch:
            # The wheel, at the middle of the view: it scrolls whatever scrolls there (the
            # window, or the panel of a page that scrolls inside an element).
            await page.mouse.move(size["width"] / 2, size["height"] / 2)
            await page.mouse.wheel(0, step)
            await page.evaluate(_TWO_FRAMES)
            await watch.settle()  # lazy loading, infinite lists
        top, height, total = await page.evaluate(_POSITION)
        screens = f"{args.amount:g} screen{'' if args.amount == 1 else 's'}"
        done = f"Scrolled {args.direction} {screens}: the view shows {top}-{top + height} of {total} px"
        if top == before[0]:
            edge = "top" if args.direction == "up" else "bottom"
            done += f" (the window did not move: at the {edge}, or the page scrolls inside an element)"
        elif top + height >= total:
            done += " (the bottom)"
        elif top == 0:
            done += " (the top)"
        return await page_result(tab, ctx, [reopened, done + "."])

    return await with_browser(ctx, work)


CLICK = ToolDefinition(
    name="click",
    description=f"""\
Click an element (link, button, checkbox...) by its reference from the latest snapshot.
Returns the page after the click; a click that opens a new tab makes it the active one.
{UNTRUSTED}
""",
    args_model=ClickArgs,
    handler=click,
    danger=Danger.MODERATE,
    idempotent=False,
    summary_keys=("ref",),
    compact_keys=("ref",),
)

INPUT = ToolDefinition(
    name="input",
    description=f"""\
Type text into a text box, or choose an option of a select box, by its reference.
The text replaces what the field held; submit=true then presses Enter. Returns the page after.
{UNTRUSTED}
""",
    args_model=InputArgs,
    handler=type_text,
    danger=Danger.MODERATE,
    idempotent=False,
    summary_keys=("ref", "text"),
    compact_keys=("ref",),
)

SCROLL = ToolDefinition(
    name="scroll",
    description=f"""\
Scroll the active page down or up by a number of screens. Use it to load more of a long
list, or before a screenshot. Returns the position and the page after. {UNTRUSTED}
""",
    args_model=ScrollArgs,
    handler=scroll,
    danger=Danger.SAFE,
    idempotent=True,
    read_only=True,
    compact_keys=("direction",),
)


__all__ = ["CLICK", "INPUT", "SCROLL", "ClickArgs", "InputArgs", "ScrollArgs", "click", "scroll", "type_text"]
