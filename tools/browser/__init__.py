"""The browser tools: a real Chromium the model drives through accessibility snapshots.

The six tools, each answering with the page as it is after the call:

- ``navigate``: ``visit`` and ``view``; ``interact``: ``click``, ``input`` and ``scroll``;
  ``screenshot``.
- ``calls``: how every call runs on the task's browser, reopening a task's pages on a
  worker that lost them; ``result``: the page as the model reads it, fenced as untrusted.

The browser they run on:

- ``pool``: one Chromium per worker process, one context per task, the idle reaper;
  worker.py makes the ``BrowserPool`` and tools find it in their ``ToolContext``
  (``browsers``).
- ``chromium``: which Chromium; ``chromium_problem()`` says in one line why no browser
  can run here.
- ``tabs``: one task's context and tabs, and what the model has not been told yet.
- ``guard``: a context whose every request and connection is checked against the policy.
- ``policy``: which URLs a page may load (network, deny list, workspace files).
- ``proxy``: the per-context proxy that applies the policy to every connection (redirect
  hops and WebSockets included, which playwright's routes do not see).
- ``page``: the snapshot, waiting for what an action set off, image headers.
- ``errors``: playwright's errors in one line.

The worker calls the pool's ``close_task(task_id)`` when a task ends and ``close_all()``
at shutdown; ``fetch_url`` calls its ``render`` for pages only JavaScript fills.
"""

from typing import Any

from tools.base import ToolDefinition
from tools.browser.chromium import BrowserUnavailable, chromium_problem
from tools.browser.interact import CLICK, INPUT, SCROLL
from tools.browser.navigate import VIEW, VISIT
from tools.browser.pool import BrowserPool
from tools.browser.screenshot import SCREENSHOT

TOOLS: tuple[ToolDefinition[Any], ...] = (VISIT, VIEW, CLICK, INPUT, SCROLL, SCREENSHOT)

__all__ = ["TOOLS", "BrowserPool", "BrowserUnavailable", "chromium_problem"]
