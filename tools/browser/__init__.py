"""The browser tools: a real Chromium the model drives through accessibility snapshots.

- ``actions``: the six tools (``visit``, ``view``, ``click``, ``input``, ``scroll``,
  ``screenshot``), reopening a task's pages on a worker that lost them.
- ``pool``: one Chromium per worker process, one context per task, the idle reaper;
  worker.py makes the ``BrowserPool`` and tools find it in their ``ToolContext``
  (``browsers``); ``chromium_problem()`` says in one line why no browser can run here.
- ``policy``: which URLs a page may load (network, deny list, workspace files).
- ``proxy``: the per-context proxy that applies the policy to every connection (redirect
  hops and WebSockets included, which playwright's routes do not see).
- ``page``: the snapshot, waiting for what an action set off, image headers.

The worker calls the pool's ``close_task(task_id)`` when a task ends and ``close_all()``
at shutdown; ``fetch_url`` calls its ``render`` for pages only JavaScript fills.
"""

from tools.browser.actions import TOOLS
from tools.browser.pool import BrowserPool, BrowserUnavailable, chromium_problem

__all__ = ["TOOLS", "BrowserPool", "BrowserUnavailable", "chromium_problem"]
