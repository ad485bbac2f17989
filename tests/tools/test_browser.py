"""The browser tools on a real Chromium, against pages served by the test itself.

One browser for the module (``shared_pool``); each test has its own task, so its own
context. ``Task.call`` plays the workflow: it runs a tool through the registry and keeps
the ``BrowserState`` the result declares as the next call's ``ctx.browser``.
"""

from __future__ import annotations

import asyncio
import base64
import re
import uuid
from dataclasses import dataclass, replace
from urllib.parse import parse_qs, urlsplit

import pytest

from core.tool_outcome import MAX_IMAGE_BYTES, BrowserState, ToolOutcome
from tests import configured
from tests.tools.browsing import require_browser, shared_pool
from tests.tools.web_fixtures import LocalWebServer, Reply, Route, Seen
from tools import REGISTRY, compact_line, execute
from tools.base import Danger, ToolContext
from tools.browser import screenshot
from tools.browser.chromium import chromium_problem
from tools.browser.page import PNG_SIGNATURE, image_size
from tools.browser.pool import BrowserPool

# --- pages ------------------------------------------------------------------------------------

JS_PAGE = """<!DOCTYPE html><html><head><title>Shell</title></head><body>
<div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript>
<script>
document.getElementById("root").innerHTML =
  "<h1>Rendered by script</h1><p>" + "Only JavaScript writes this paragraph. ".repeat(6) + "</p>";
</script></body></html>"""

FORM_PAGE = """<!DOCTYPE html><html><head><title>Guest book</title></head><body>
<h1>Sign the guest book</h1>
<form action="/greet" method="get">
  <label>Your name <input name="name"></label>
  <label>Colour <select name="colour"><option value="r">Red</option><option value="g">Green</option></select></label>
  <button type="submit">Send</button>
</form></body></html>"""

LINKS_PAGE = """<!DOCTYPE html><html><head><title>Links</title></head><body>
<h1>Links</h1>
<a href="/target">Go to the target</a>
<a href="/target" target="_blank">Open the target in a new tab</a>
<button onclick="setTimeout(() => window.open('/target'), 30)">Pop up</button>
<button onclick="alert('Hello from the page')">Alert</button>
<script>let clicks = 0;</script>
<button onclick="clicks += 1; this.textContent = 'Clicked ' + clicks">Count</button>
</body></html>"""

TARGET_PAGE = "<!DOCTYPE html><title>Target</title><h1>The target page</h1>"
# Loads, then a second later its script never yields again.
WEDGE_PAGE = "<!DOCTYPE html><title>Wedge</title><h1>Busy soon</h1><script>setTimeout(() => { while (true) {} }, 1000)</script>"

LONG_PAGE = (
    "<!DOCTYPE html><html><head><title>Long</title></head><body style='margin:0'>"
    + "".join(f"<p style='height:100px;margin:0'>Paragraph {i}</p>" for i in range(100))
    + "</body></html>"
)

# Low-contrast noise: a PNG cannot compress it, a JPEG drops most of it.
NOISE_PAGE = """<!DOCTYPE html><html><head><title>Noise</title></head><body style="margin:0">
<canvas id="c" width="1280" height="1800" style="display:block"></canvas>
<script>
const c = document.getElementById("c"), g = c.getContext("2d"), img = g.createImageData(1280, 1800);
for (let i = 0; i < img.data.length; i += 4) {
  const v = 120 + Math.floor(Math.random() * 24);
  img.data[i] = v; img.data[i + 1] = v; img.data[i + 2] = v; img.data[i + 3] = 255;
}
g.putImageData(img, 0, 0);
</script></body></html>"""

LEAKY_PAGE = """<!DOCTYPE html><html><head><title>Leaky</title></head><body>
<p>A page that asks for the cloud metadata.</p>
<img src="http://169.254.169.254/latest/meta-data/pixel.png" alt="pixel">
<script>
fetch("http://169.254.169.254/latest/user-data").catch(() => {});
try { new WebSocket("ws://169.254.169.254/socket"); } catch (e) {}
</script></body></html>"""


def greet(seen: Seen) -> Reply:
    query = parse_qs(urlsplit(seen.path).query)
    name, colour = query.get("name", ["nobody"])[0], query.get("colour", ["?"])[0]
    return Reply(body=f"<title>Greeted</title><p>Hello, {name}! Colour {colour}.</p>".encode())


def routes() -> dict[str, Route]:
    return {
        "/js": Reply(body=JS_PAGE.encode()),
        "/form": Reply(body=FORM_PAGE.encode()),
        "/greet": greet,
        "/links": Reply(body=LINKS_PAGE.encode()),
        "/target": Reply(body=TARGET_PAGE.encode()),
        "/wedge": Reply(body=WEDGE_PAGE.encode()),
        "/long": Reply(body=LONG_PAGE.encode()),
        "/noise": Reply(body=NOISE_PAGE.encode()),
        "/leaky": Reply(body=LEAKY_PAGE.encode()),
        "/to-metadata": Reply(302, headers={"Location": "http://169.254.169.254/latest/meta-data/"}),
        "/to-target": Reply(302, headers={"Location": "/target"}),
        "/report.zip": Reply(
            body=b"PK\x03\x04", content_type="application/zip",
            headers={"Content-Disposition": 'attachment; filename="report.zip"'},
        ),  # fmt: skip
        "/pixel.png": Reply(body=PNG_SIGNATURE, content_type="image/png"),
    }


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server():
    with LocalWebServer(routes()) as running:
        yield running


@pytest.fixture(scope="module")
async def pool():
    async for each in shared_pool():
        yield each


@dataclass
class Task:
    """One task's calls, carrying the recorded browser state from call to call."""

    ctx: ToolContext

    async def call(self, name: str, **arguments: object) -> ToolOutcome:
        result = await execute(name, dict(arguments), self.ctx)
        if result.browser is not None:
            self.ctx.browser = result.browser
        return result


@pytest.fixture
async def task(pool, tmp_path):
    ctx = configured.tool_context(workspace=tmp_path, task_id=f"test-{uuid.uuid4().hex[:8]}", network=True,
                                  browsers=pool)
    yield Task(ctx)
    await pool.close_task(ctx.task_id)


def ref_of(content: str, element: str) -> str:
    """The reference of the first snapshot line that contains ``element``."""
    for line in content.splitlines():
        if element in line and (found := re.search(r"\[ref=(\w+)\]", line)):
            return found.group(1)
    raise AssertionError(f"no {element!r} with a reference in:\n{content}")


# --- reading pages --------------------------------------------------------------------------------


async def test_visit_shows_the_text_only_javascript_renders(task, server):
    result = await task.call("visit", url=server.url("/js"))
    assert result.status == "ok", result.content
    assert f"Opened {server.url('/js')}." in result.content
    assert 'heading "Rendered by script"' in result.content
    assert "Only JavaScript writes this paragraph." in result.content
    assert result.browser == BrowserState(tabs=[server.url("/js")], active=0)


async def test_page_content_is_wrapped_as_untrusted_and_the_tools_own_lines_are_not(task, server):
    result = await task.call("visit", url=server.url("/js"))
    lead, wrapped = result.content.split("<untrusted_content", 1)
    assert lead.startswith("Opened ") and "Rendered by script" not in lead
    assert wrapped.startswith(f' source="{server.url("/js")}">\n')
    assert "Title: Shell" in wrapped and wrapped.rstrip().endswith("</untrusted_content>")


async def test_view_cuts_the_snapshot_at_max_chars_with_a_note(task, server):
    await task.call("visit", url=server.url("/long"))
    result = await task.call("view", max_chars=600)
    assert result.status == "ok" and result.truncated
    assert re.search(r"\[Snapshot cut at \d+ of \d+ characters: call view with a larger max_chars", result.content)
    inside = result.content.split("</untrusted_content>")[0]
    assert "Paragraph 99" not in inside and "Paragraph 1" in inside


# --- acting on pages ----------------------------------------------------------------------------------


async def test_a_form_is_filled_chosen_and_submitted(task, server):
    page = await task.call("visit", url=server.url("/form"))
    typed = await task.call("input", ref=ref_of(page.content, 'textbox "Your name"'), text="Ada")
    assert typed.status == "ok", typed.content
    assert typed.content.startswith("Typed 3 characters into ")
    assert "Ada" in typed.content  # the field's value, in the snapshot
    chosen = await task.call("input", ref=ref_of(typed.content, 'combobox "Colour"'), text="Green")
    assert chosen.status == "ok", chosen.content
    sent = await task.call("click", ref=ref_of(chosen.content, 'button "Send"'))
    assert sent.status == "ok", sent.content
    assert "Hello, Ada! Colour g." in sent.content
    assert sent.browser is not None and sent.browser.tabs == [server.url("/greet?name=Ada&colour=g")]


async def test_input_with_submit_presses_enter(task, server):
    page = await task.call("visit", url=server.url("/form"))
    result = await task.call("input", ref=ref_of(page.content, 'textbox "Your name"'), text="Grace", submit=True)
    assert result.status == "ok", result.content
    assert "and pressed Enter." in result.content and "Hello, Grace!" in result.content


async def test_click_follows_a_link(task, server):
    page = await task.call("visit", url=server.url("/links"))
    result = await task.call("click", ref=ref_of(page.content, 'link "Go to the target"'))
    assert result.status == "ok", result.content
    assert 'heading "The target page"' in result.content
    assert result.browser == BrowserState(tabs=[server.url("/target")], active=0)


async def test_a_link_to_a_new_tab_opens_it_as_the_active_tab(task, server):
    page = await task.call("visit", url=server.url("/links"))
    result = await task.call("click", ref=ref_of(page.content, 'link "Open the target in a new tab"'))
    assert result.status == "ok", result.content
    assert "It opened a new tab, now the active one [1]." in result.content
    assert 'heading "The target page"' in result.content
    assert "Tabs (2; * marks the active one" in result.content
    assert f"* [1] Target - {server.url('/target')}" in result.content
    assert result.browser == BrowserState(tabs=[server.url("/links"), server.url("/target")], active=1)
    back = await task.call("view", tab=0)
    assert back.status == "ok" and "Switched to tab [0]." in back.content
    assert back.browser is not None and back.browser.active == 0
    assert 'heading "Links"' in back.content


async def test_a_script_popup_becomes_the_active_tab(task, server):
    page = await task.call("visit", url=server.url("/links"))
    result = await task.call("click", ref=ref_of(page.content, 'button "Pop up"'))
    assert result.status == "ok", result.content
    assert result.browser is not None and len(result.browser.tabs) == 2 and result.browser.active == 1
    assert 'heading "The target page"' in result.content


async def test_a_dialog_is_dismissed_and_reported(task, server):
    page = await task.call("visit", url=server.url("/links"))
    result = await task.call("click", ref=ref_of(page.content, 'button "Alert"'))
    assert result.status == "ok", result.content
    assert "the page showed a alert dialog ('Hello from the page'); it was dismissed" in result.content


async def test_view_of_a_tab_that_does_not_exist_is_an_error(task, server):
    await task.call("visit", url=server.url("/links"))
    result = await task.call("view", tab=3)
    assert result.status == "error" and "There is no tab 3: the tabs are numbered 0 to 0." in result.content


async def test_scroll_moves_the_view_and_says_where_it_is(task, server):
    await task.call("visit", url=server.url("/long"))
    down = await task.call("scroll", direction="down", amount=2)
    assert down.status == "ok", down.content
    assert down.content.startswith("Scrolled down 2 screens: the view shows 1600-2400 of 10000 px.")
    up = await task.call("scroll", direction="up", amount=0.5)
    assert up.content.startswith("Scrolled up 0.5 screens: the view shows 1200-2000 of 10000 px.")
    top = await task.call("scroll", direction="up", amount=10)
    assert top.content.startswith("Scrolled up 10 screens: the view shows 0-800 of 10000 px (the top).")
    again = await task.call("scroll", direction="up")
    assert "the window did not move: at the top" in again.content


# --- screenshots ----------------------------------------------------------------------------------------


async def test_screenshot_is_a_png_of_the_view_under_the_cap(task, server):
    await task.call("visit", url=server.url("/links"))
    result = await task.call("screenshot")
    assert result.status == "ok", result.content
    image = result.image
    assert image is not None and image.media_type == "image/png" and image.data is not None
    data = base64.b64decode(image.data)
    assert data.startswith(PNG_SIGNATURE) and image_size(data) == (1280, 800)
    assert (image.width, image.height, image.size) == (1280, 800, len(data))
    assert len(data) <= MAX_IMAGE_BYTES
    assert result.content.startswith(f"Screenshot of {server.url('/links')} (Links), 1280x800 PNG, ")
    assert "data" not in image.model_dump()  # the bytes never reach a serialization


async def test_a_big_full_page_screenshot_falls_back_to_jpeg(task, server):
    await task.call("visit", url=server.url("/noise"))  # about 2.2 MB as a PNG, 0.3 MB as a JPEG
    result = await task.call("screenshot", full_page=True)
    assert result.status == "ok", result.content
    image = result.image
    assert image is not None and image.media_type == "image/jpeg"
    data = base64.b64decode(image.data or "")
    assert data.startswith(b"\xff\xd8") and image_size(data) == (1280, 1800)
    assert len(data) <= MAX_IMAGE_BYTES
    assert "JPEG at quality" in result.content and "(the PNG was" in result.content


async def test_a_screenshot_too_big_even_as_jpeg_is_an_error(task, server, monkeypatch):
    await task.call("visit", url=server.url("/links"))
    monkeypatch.setattr(screenshot, "MAX_IMAGE_BYTES", 2_000)
    result = await task.call("screenshot")
    assert result.status == "error" and result.image is None
    assert "The screenshot is too large to send" in result.content
    assert "Take it without full_page, or scroll and take several." in result.content


# --- refusals -------------------------------------------------------------------------------------------


async def test_http_without_network_is_refused(task, server):
    task.ctx.network = False
    result = await task.call("visit", url=server.url("/js"))
    assert result.status == "error" and "the task has no network access" in result.content
    assert "--network" in result.content
    assert result.browser is None


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://2852039166/",
     "http://metadata.google.internal/computeMetadata/v1/", "http://[::ffff:169.254.169.254]/"],
)  # fmt: skip
async def test_cloud_metadata_hosts_are_refused(task, url):
    result = await task.call("visit", url=url)
    assert result.status == "error" and "is on the deny list" in result.content


async def test_the_deny_list_takes_globs_from_the_environment(task, monkeypatch):
    task.ctx.settings = configured.use(monkeypatch, AGENT_BROWSER_DENY_HOSTS="*.internal, intranet.example.com")
    for url in ("http://db.corp.internal/", "https://INTRANET.example.com./x"):
        result = await task.call("visit", url=url)
        assert result.status == "error" and "deny list" in result.content, url


async def test_credentials_and_other_schemes_are_refused(task):
    for url, why in [
        ("http://user:secret@example.com/", "user name or password"),
        ("chrome://settings", "only http, https and file URLs"),
        ("view-source:http://example.com/", "only http, https and file URLs"),
        ("ftp://example.com/file.txt", "only http, https and file URLs"),
        ("javascript:alert(1)", "only http, https and file URLs"),
    ]:
        result = await task.call("visit", url=url)
        assert result.status == "error" and why in result.content, (url, result.content)


async def test_files_outside_the_workspace_are_refused_symlinks_too(task, tmp_path):
    outside = tmp_path.parent / f"outside-{uuid.uuid4().hex[:6]}.html"
    outside.write_text("<p>secret</p>")
    (tmp_path / "link.html").symlink_to(outside)
    for url in (outside.as_uri(), "file:///etc/passwd", (tmp_path / "link.html").as_uri(), "link.html"):
        result = await task.call("visit", url=url)
        assert result.status == "error" and "is outside the workspace" in result.content, (url, result.content)


async def test_a_workspace_file_opens_offline_and_its_requests_obey_the_rules(task, server, tmp_path):
    task.ctx.network = False
    (tmp_path / "page.html").write_text(
        "<title>Local</title><p>A page in the workspace.</p>"
        f'<img src="{server.url("/pixel.png?from-file")}" alt="remote">'
        '<iframe src="file:///etc/hostname"></iframe>'
    )
    result = await task.call("visit", url="page.html")
    assert result.status == "ok", result.content
    assert "A page in the workspace." in result.content
    assert f"refused {server.url('/pixel.png?from-file')}: the task has no network access" in result.content
    assert "refused file:///etc/hostname: file:///etc/hostname is outside the workspace" in result.content
    assert not any("from-file" in seen.path for seen in server.requests)


async def test_a_redirect_to_a_denied_host_is_refused(task, server):
    result = await task.call("visit", url=server.url("/to-metadata"))
    assert result.status == "error", result.content
    assert f"Could not open {server.url('/to-metadata')}" in result.content
    assert "refused http://169.254.169.254/latest/meta-data/: the host 169.254.169.254 is on the deny list" in (
        result.content
    )
    assert result.browser == BrowserState(tabs=[], active=0)  # no error page left behind


async def test_a_redirect_to_an_allowed_host_is_followed(task, server):
    result = await task.call("visit", url=server.url("/to-target"))
    assert result.status == "ok", result.content
    assert f"Opened {server.url('/target')}." in result.content and "The target page" in result.content


async def test_a_download_is_refused_with_a_hint(task, server):
    result = await task.call("visit", url=server.url("/report.zip"))
    assert result.status == "error", result.content
    assert "the URL is a download, not a page" in result.content and "fetch_url" in result.content
    assert result.browser == BrowserState(tabs=[], active=0)


async def test_subresources_scripts_and_sockets_to_a_denied_host_are_aborted(task, server):
    result = await task.call("visit", url=server.url("/leaky"))
    assert result.status == "ok", result.content
    assert "refused http://169.254.169.254/latest/meta-data/pixel.png: the host 169.254.169.254" in result.content
    assert "refused http://169.254.169.254/latest/user-data:" in result.content
    assert "refused a connection to 169.254.169.254:80: the host 169.254.169.254 is on" in result.content


# --- references and state ---------------------------------------------------------------------------------


async def test_a_reference_that_does_not_resolve_asks_for_view(task, server):
    await task.call("visit", url=server.url("/links"))
    result = await task.call("click", ref="e999")
    assert result.status == "error"
    assert "There is no element e999 on the page now" in result.content and "Call view" in result.content
    assert result.browser is not None and result.browser.tabs == [server.url("/links")]


async def test_a_reference_is_taken_as_the_snapshot_writes_it(task, server):
    page = await task.call("visit", url=server.url("/links"))
    ref = ref_of(page.content, 'link "Go to the target"')
    result = await task.call("click", ref=f"[ref={ref}]")
    assert result.status == "ok" and "The target page" in result.content
    bad = await task.call("click", ref="the blue button")
    assert bad.status == "retry" and 'a reference looks like "e12"' in bad.content


async def test_a_page_tool_with_no_page_open_says_to_visit_first_without_a_browser(task, pool):
    launches = pool.launches
    for name in ("view", "click", "screenshot"):
        arguments = {"ref": "e1"} if name == "click" else {}
        result = await task.call(name, **arguments)
        assert result.status == "error" and result.content == "No page is open: call visit first.", name
    assert pool.launches == launches and not pool.holds(task.ctx.task_id)


# --- durability: reopening ----------------------------------------------------------------------------------


async def test_after_the_context_is_lost_click_reopens_and_does_not_click(task, server, pool):
    page = await task.call("visit", url=server.url("/links"))
    count = ref_of(page.content, 'button "Count"')
    assert (await task.call("click", ref=count)).status == "ok"
    await pool.close_task(task.ctx.task_id)
    await pool.close_task(task.ctx.task_id)  # twice: nothing happens
    result = await task.call("click", ref=count)
    assert result.status == "error"
    assert result.content.startswith(
        "[browser reopened] The worker that held this page stopped (or it sat idle), so the page was reopened at "
        f"{server.url('/links')}; what was typed and the scroll position were lost.\n"
        f"The click on {count} was not performed"
    )
    assert "Call it again with a reference from this snapshot." in result.content
    assert 'button "Count"' in result.content and "Clicked 1" not in result.content  # fresh page, not clicked
    again = await task.call("click", ref=ref_of(result.content, 'button "Count"'))
    assert again.status == "ok" and 'button "Clicked 1"' in again.content
    assert "[browser reopened]" not in again.content


async def test_after_the_context_is_lost_view_reopens_every_tab(task, server, pool):
    page = await task.call("visit", url=server.url("/links"))
    await task.call("click", ref=ref_of(page.content, 'link "Open the target in a new tab"'))
    await task.call("view", tab=0)
    await pool.close_task(task.ctx.task_id)
    result = await task.call("view")
    assert result.status == "ok", result.content
    assert result.content.startswith(
        "[browser reopened] The worker that held this page stopped (or it sat idle), so its 2 tabs were reopened "
        f"(the active one at {server.url('/links')})"
    )
    assert result.browser == BrowserState(tabs=[server.url("/links"), server.url("/target")], active=0)


async def test_pages_out_of_date_with_the_record_are_reopened(task, server):
    await task.call("visit", url=server.url("/links"))
    # Another worker answered a call since: the workflow's record moved on without this process.
    task.ctx.browser = BrowserState(tabs=[server.url("/target")], active=0)
    result = await task.call("view")
    assert result.content.startswith("[browser reopened] This worker's copy of the page was out of date")
    assert 'heading "The target page"' in result.content
    assert result.browser == BrowserState(tabs=[server.url("/target")], active=0)


async def test_a_crashed_browser_is_relaunched_and_the_page_reopened(task, server, pool):
    await task.call("visit", url=server.url("/js"))
    launches = pool.launches
    assert pool._browser is not None
    await pool._browser.close()  # as if it crashed: its contexts are gone
    result = await task.call("screenshot")
    assert result.status == "ok", result.content
    assert result.content.startswith("[browser reopened]") and pool.launches == launches + 1


async def test_the_idle_reaper_closes_a_context(server, tmp_path):
    require_browser()
    idle = BrowserPool(replace(configured.settings().browser, idle_s=0.3))
    try:
        ctx = configured.tool_context(workspace=tmp_path, task_id="idle-task", network=True, browsers=idle)
        assert (await execute("visit", {"url": server.url("/target")}, ctx)).status == "ok"
        assert idle.holds("idle-task")
        for _ in range(40):
            await asyncio.sleep(0.1)
            if not idle.holds("idle-task"):
                break
        assert not idle.holds("idle-task")
    finally:
        await idle.close_all()
        await idle.close_all()  # twice: nothing happens


async def test_calls_of_different_tasks_run_side_by_side(pool, server, tmp_path):
    tasks = [Task(configured.tool_context(workspace=tmp_path, task_id=f"par-{i}-{uuid.uuid4().hex[:6]}", network=True,
                                          browsers=pool))
             for i in range(2)]  # fmt: skip
    try:
        results = await asyncio.gather(*(t.call("visit", url=server.url("/target")) for t in tasks))
        assert all(r.status == "ok" for r in results)
        same = await asyncio.gather(tasks[0].call("view"), tasks[0].call("view"))
        assert all(r.status == "ok" for r in same)
    finally:
        for each in tasks:
            await pool.close_task(each.ctx.task_id)


# --- without Chromium ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["AGENT_CHROMIUM", "PATH"])
async def test_without_chromium_every_tool_says_how_to_install_it(tmp_path, monkeypatch, how):
    if how == "AGENT_CHROMIUM":
        config = configured.use(monkeypatch, AGENT_CHROMIUM=str(tmp_path / "no-such-chromium"))
    else:
        monkeypatch.delenv("AGENT_CHROMIUM", raising=False)  # looked for on PATH
        config = configured.use(monkeypatch, PATH=str(tmp_path))
    ctx = configured.tool_context(
        tmp_path, config, task_id="no-browser", network=True,
        browser=BrowserState(tabs=["https://example.com/"]), browsers=BrowserPool(config.browser),
    )  # fmt: skip
    problem = chromium_problem(config.browser)
    assert problem is not None and "\n" not in problem and "apt-get install chromium" in problem
    assert "AGENT_CHROMIUM" in problem
    calls = {"visit": {"url": "https://example.com/"}, "view": {}, "click": {"ref": "e1"},
             "input": {"ref": "e1", "text": "x"}, "scroll": {}, "screenshot": {}}  # fmt: skip
    for name, arguments in calls.items():
        result = await execute(name, arguments, ctx)
        assert result.status == "error" and result.content == problem, name


# --- the registry ---------------------------------------------------------------------------------------------


def test_the_browser_tools_are_registered_with_their_policy():
    expected = {
        "visit": (Danger.MODERATE, True), "view": (Danger.SAFE, True), "click": (Danger.MODERATE, False),
        "input": (Danger.MODERATE, False), "scroll": (Danger.SAFE, True), "screenshot": (Danger.SAFE, True),
    }  # fmt: skip
    for name, (danger, idempotent) in expected.items():
        tool = REGISTRY[name]
        assert (tool.danger, tool.idempotent) == (danger, idempotent), name
        assert "untrusted" in tool.description and tool.untrusted_source is None
    assert compact_line("input", {"ref": "e5", "text": "hunter2"}) == '<tool name="input" ref="e5"/>'
    assert compact_line("visit", {"url": "https://a.example/", "new_tab": True}) == (
        '<tool name="visit" url="https://a.example/"/>'
    )
    assert REGISTRY["input"].summarize({"ref": "e5", "text": "Ada", "submit": True}) == "e5 Ada"


async def test_a_tab_whose_script_never_yields_is_replaced_and_the_model_told(task, server):
    opened = await task.call("visit", url=server.url("/wedge"))
    assert opened.status == "ok", opened.content
    await asyncio.sleep(1.5)  # the page's script is now in its endless loop
    viewed = await asyncio.wait_for(task.call("view"), 30)
    assert viewed.status == "error"
    assert f"[tab replaced] The page at {server.url('/wedge')} stopped answering" in viewed.content
    assert viewed.browser == BrowserState(tabs=["about:blank"], active=0)
    # The task's browser works again at once: no later call waits on the wedged page.
    again = await asyncio.wait_for(task.call("visit", url=server.url("/target")), 30)
    assert again.status == "ok" and 'heading "The target page"' in again.content


async def test_a_snapshot_preview_shows_the_page_text_not_the_wrapper(task, server):
    from cli.render import preview  # what run and watch show of the result
    from core.entries import result_entry

    result = await task.call("visit", url=server.url("/js"))
    assert "<untrusted_content" in result.content  # the model's copy is wrapped...
    shown = preview(result_entry("c1", "visit", result, seq=1, turn=1))
    assert "untrusted_content" not in shown and "Outside data" not in shown  # ...the person's is not
    assert 'heading "Rendered by script"' in shown and "Only JavaScript writes this paragraph." in shown
