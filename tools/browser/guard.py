"""A browser context under a policy: every request checked by a route, every connection by a proxy.

A context gets its own ``PolicyProxy`` (for redirect hops and WebSockets, which routes do
not see: see ``tools.egress_proxy``) and a route that checks every request and aborts a refused one,
noting it for the model; downloads off, service workers blocked (their requests would
bypass the route), a fixed 1280x800 viewport. The pool makes a task's contexts and
``render``'s throwaway ones this way alike.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from tools.browser.errors import first_line
from tools.egress_proxy import Owner, PolicyProxy

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Request, Route

log = logging.getLogger(__name__)

VIEWPORT = {"width": 1280, "height": 800}


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
            log.debug("browser route: %s", first_line(exc))

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


__all__ = ["VIEWPORT", "guarded_context", "install_routes"]
