"""The ``screenshot`` tool: the active page as an image the model can see.

The visible part, or the whole page. A PNG, or a JPEG at falling qualities when the PNG is
over the size an image may have (``MAX_IMAGE_BYTES``); too large even then, an error that
says how to take it instead.
"""

from __future__ import annotations

import base64

from core.text import shorten
from core.tool_outcome import MAX_IMAGE_BYTES, ImageRef
from core.untrusted import neutralise
from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.browser.calls import with_browser
from tools.browser.page import NAV_TIMEOUT_MS, image_size, title_of
from tools.browser.result import UNTRUSTED, error
from tools.browser.tabs import TaskBrowser

JPEG_QUALITIES = (80, 60, 40, 25)  # tried in turn when a PNG screenshot is over MAX_IMAGE_BYTES


class ScreenshotArgs(StrictArgs):
    full_page: bool = Field(default=False, description="The whole page, not only the visible part.")


async def screenshot(args: ScreenshotArgs, ctx: ToolContext) -> ToolOutcome:
    async def work(tab: TaskBrowser, reopened: str | None) -> ToolOutcome:
        page = tab.page
        assert page is not None
        async def shoot(quality: int | None = None) -> bytes:
            return await page.screenshot(
                type="png" if quality is None else "jpeg", quality=quality, full_page=args.full_page,
                timeout=NAV_TIMEOUT_MS, animations="disabled", caret="hide",
            )  # fmt: skip

        data = await shoot()
        media, kind = "image/png", "PNG"
        limit = MAX_IMAGE_BYTES
        if len(data) > limit:
            png_size = len(data)
            for quality in JPEG_QUALITIES:
                data = await shoot(quality)
                if len(data) <= limit:
                    media, kind = "image/jpeg", f"JPEG at quality {quality} (the PNG was {_kb(png_size)}, over the limit)"
                    break
            else:
                return error(
                    f"The screenshot is too large to send: {_kb(len(data))} even as a JPEG at quality "
                    f"{JPEG_QUALITIES[-1]} (the limit is {_kb(limit)}). Take it without full_page, or scroll and take several."
                )
        width, height = image_size(data) or (None, None)
        title = neutralise(shorten(await title_of(page) or "no title", 80))
        preview = f"Screenshot of {page.url} ({title}), {width}x{height} {kind}, {_kb(len(data))}."
        image = ImageRef(
            media_type=media, data=_base64(data), size=len(data), width=width, height=height
        )
        return ToolOutcome(content="\n".join(line for line in (reopened, preview) if line), image=image)

    return await with_browser(ctx, work)


def _kb(size: int) -> str:
    return f"{size / 1024:.0f} KB"


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


SCREENSHOT = ToolDefinition(
    name="screenshot",
    description=f"""\
Take a screenshot of the active page. It shows the visible part, or the whole page with
full_page=true: use it to see layout, images and charts the snapshot does not describe.
{UNTRUSTED}
""",
    args_model=ScreenshotArgs,
    handler=screenshot,
    danger=Danger.SAFE,
    idempotent=True,
    read_only=True,
    compact_keys=("full_page",),
)


__all__ = ["SCREENSHOT", "ScreenshotArgs", "screenshot"]
