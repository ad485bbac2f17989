"""The Temporal UI as a person sees it, in a real headless Chromium.

Debian's ``chromium`` (``AGENT_CHROMIUM`` or ``chromium`` on PATH), driven by playwright,
never a browser playwright downloads. The session's dev server is headless, so this module
starts one of its own with the UI, from the same pinned CLI, runs a finished, a failed and a
waiting task on the real worker, and opens their pages. Without Chromium or playwright the
module is skipped with the line that says how to install them, except under
``AGENT_TEST_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where it fails instead: CI never
hides a missing browser.

Screenshots of every page are kept in ``$AGENT_TEST_ARTIFACTS/ui``, else in
``data/test-artifacts/ui`` (``data/`` is git-ignored).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from cli.tasks import start_task
from contracts.task import TaskInput, TaskOutcome, TaskState
from core.settings import CodecSettings
from fakes.scripted import tool
from temporal.codec import codec_for, data_converter
from temporal.codec_server import make_server
from temporal.server import SEARCH_ATTRIBUTES, port_open, temporal_cli
from tests import configured
from tests.workflows.harness import make_input, outcome_of, scripted_worker, wait_for_state

REQUIRE_ENV = "AGENT_TEST_REQUIRE_BROWSER"
CHROMIUM = os.environ.get("AGENT_CHROMIUM") or shutil.which("chromium") or ""
_missing = [
    f"{what} is missing ({how})" for what, absent, how in (
        ("Chromium", not os.access(CHROMIUM, os.X_OK), "sudo apt-get install chromium"),
        ("playwright", importlib.util.find_spec("playwright") is None, "pip install -e '.[test]'"),
    ) if absent
]
NO_BROWSER = f"no browser for the Temporal UI tests: {'; '.join(_missing)}" if _missing else None
if NO_BROWSER and not os.environ.get(REQUIRE_ENV):
    pytest.skip(NO_BROWSER, allow_module_level=True)
if NO_BROWSER and "playwright" in NO_BROWSER:
    pytest.fail(NO_BROWSER, pytrace=False)  # nothing below imports without it

from playwright.async_api import Browser, Locator, Page, async_playwright, expect  # noqa: E402

from tests.ports import free_port  # noqa: E402

# Closed network: background networking makes Chromium hang; a fresh profile per launch.
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
TIMEOUT_MS = 20_000  # the UI is a single-page app: first loads on 2 busy cores take seconds
# Markdown would read it as ``rm -rf logs/**old** && git push –force origin main``.
PENDING = "rm -rf logs/__old__ && git push --force origin main"
INSTRUCTION = "Clean logs/__old__, then push --force *now*"
CODEC_TOKEN = "ui-test-token"
ARTIFACTS = Path(os.environ.get("AGENT_TEST_ARTIFACTS") or Path(__file__).resolve().parents[2] / "data/test-artifacts")


@dataclass
class Tasks:
    """The three tasks the UI is asked about, on one task queue."""

    queue: str
    done: WorkflowHandle
    failed: WorkflowHandle
    waiting: WorkflowHandle


@pytest.fixture(scope="module", autouse=True)
def _browser_or_fail() -> None:
    """Under AGENT_TEST_REQUIRE_BROWSER a missing Chromium fails each test, never skips it."""
    if NO_BROWSER:
        pytest.fail(NO_BROWSER, pytrace=False)


@pytest.fixture(scope="module")
def screenshots() -> Path:
    path = ARTIFACTS / "ui"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def module_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The module's worker outlives each test's own data directory: give it one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_DATA_DIR", str(tmp_path_factory.mktemp("ui-data")))
        yield


@pytest.fixture(scope="module")
async def ui_server() -> AsyncIterator[tuple[WorkflowEnvironment, str]]:
    """An in-memory dev server from the pinned CLI with its UI on, the UI's codec endpoint the
    project's codec server (as the embedded default has it); (env, UI base URL)."""
    ui_port = free_port()
    codec = make_server(codec_for(CodecSettings()), CODEC_TOKEN, port=0, origins=[f"http://127.0.0.1:{ui_port}"])
    threading.Thread(target=codec.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{codec.server_address[1]}/{CODEC_TOKEN}"
    extra = [arg for name, kind in SEARCH_ATTRIBUTES.items() for arg in ("--search-attribute", f"{name}={kind}")]
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli(), data_converter=pydantic_data_converter,
        dev_server_extra_args=[*extra, "--ui-disable-news-fetch", "--ui-codec-endpoint", endpoint],
        ui=True, ui_port=ui_port,
    )
    try:
        deadline = asyncio.get_running_loop().time() + 30
        while not port_open("127.0.0.1", ui_port):
            assert asyncio.get_running_loop().time() < deadline, f"the Temporal UI never opened port {ui_port}"
            await asyncio.sleep(0.1)
        yield env, f"http://127.0.0.1:{ui_port}"
    finally:
        await env.shutdown()
        codec.shutdown()
        codec.server_close()


@pytest.fixture(scope="module")
async def tasks(ui_server, module_data_dir, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Tasks]:
    """A finished, a failed (max iterations) and a waiting (``PENDING``) task, started as the
    CLI starts them; the worker stays up, so the UI can ask the waiting one for its details."""
    client: Client = ui_server[0].client
    queue = f"ui-{uuid.uuid4().hex[:8]}"
    workspace = tmp_path_factory.mktemp("ui-ws")
    steps = [
        tool("shell", command="ls -la"), tool("message", type="result", text="listed"),
        tool("shell", command="ls -la"),
        tool("shell", command=PENDING),
    ]
    async with scripted_worker(client, queue, steps) as model:
        done = await started(client, queue, make_input(workspace, "List the files"))
        await outcome_of(done)
        failed = await started(client, queue, make_input(workspace, "Keep listing the files", max_iterations=1))
        await outcome_of(failed)
        waiting = await started(client, queue, make_input(workspace, INSTRUCTION))
        await wait_for_state(waiting, TaskState.WAITING_APPROVAL)
        model.assert_consumed()
        try:
            yield Tasks(queue, done, failed, waiting)
        finally:
            await waiting.terminate("the UI test is over")


@pytest.fixture(scope="module")
async def page() -> AsyncIterator[Page]:
    """One browser, one context, one page for the module."""
    async with async_playwright() as playwright:
        browser: Browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            # Tall and wide enough that a screenshot holds a short task's whole history.
            context = await browser.new_context(viewport={"width": 1920, "height": 2200})
            page = await context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            yield page
        finally:
            await browser.close()


async def test_the_workflow_list_shows_each_task_with_its_status(ui_server, tasks: Tasks, page: Page, screenshots):
    client, base = ui_server[0].client, ui_server[1]
    query = f'TaskQueue="{tasks.queue}"'
    await visible_in_list(client, query, 3)
    await page.goto(f"{base}/namespaces/default/workflows?query={quote(query)}")
    for handle, status in ((tasks.done, "Completed"), (tasks.failed, "Failed"), (tasks.waiting, "Running")):
        row = page.get_by_role("row").filter(has_text=handle.id)
        await expect(row.get_by_test_id("execution-status")).to_have_text(status, timeout=TIMEOUT_MS)
    await expect(page.get_by_role("row").filter(has_text="AgentTask")).to_have_count(3)
    await page.screenshot(path=screenshots / "workflow-list.png")


async def test_a_finished_task_shows_completed_and_what_each_activity_did(
    ui_server, tasks: Tasks, page: Page, screenshots
):
    await open_history(page, ui_server[1], tasks.done)
    await expect(page.get_by_test_id("execution-status")).to_have_text("Completed", timeout=TIMEOUT_MS)
    await expect(event_row(page, "Workflow Execution Completed")).to_contain_text('"status":"DONE"')
    assert await activity_summaries(page) == [
        "llm · scripted-model · turn 1", "tool · shell · ls -la", "llm · scripted-model · turn 2",
    ]
    assert await local_activity_summaries(page) == [
        "prompt · memory, conventions, skills", "tool · message · result listed",
    ]
    await page.screenshot(path=screenshots / "finished-task.png")


async def test_a_failed_task_shows_failed_and_why(ui_server, tasks: Tasks, page: Page, screenshots):
    await open_history(page, ui_server[1], tasks.failed)
    await expect(page.get_by_test_id("execution-status")).to_have_text("Failed", timeout=TIMEOUT_MS)
    await expect(event_row(page, "Workflow Execution Failed")).to_contain_text(
        "task failed: reached the maximum of 1 iterations"
    )
    assert await activity_summaries(page) == ["llm · scripted-model · turn 1", "tool · shell · ls -la"]
    await page.screenshot(path=screenshots / "failed-task.png")


async def test_a_task_waiting_for_approval_shows_running_and_the_pending_call(
    ui_server, tasks: Tasks, page: Page, screenshots
):
    client, base = ui_server[0].client, ui_server[1]
    # As a person finds it: the list of tasks waiting for a decision, then the task's page.
    waiting = f'AgentState="WAITING_APPROVAL" AND TaskQueue="{tasks.queue}"'
    await visible_in_list(client, waiting, 1)
    await page.goto(f"{base}/namespaces/default/workflows?query={quote(waiting)}")
    await page.get_by_role("link", name=tasks.waiting.id, exact=True).click()
    await expect(page.get_by_test_id("execution-status")).to_have_text("Running", timeout=TIMEOUT_MS)
    # The timeline labels each activity with its summary.
    await page.get_by_test_id("timeline-tab").click()
    await expect(page.get_by_text("llm_call • llm · scripted-model · turn 1")).to_be_visible(timeout=TIMEOUT_MS)
    await page.screenshot(path=screenshots / "waiting-task-timeline.png")

    await page.get_by_test_id("history-tab").click()
    # The model asked for PENDING; the tool has not run: no tool activity was scheduled.
    assert await activity_summaries(page) == ["llm · scripted-model · turn 1"]
    await page.screenshot(path=screenshots / "waiting-task-history.png")

    # The UI renders these as Markdown: the text is in code, read back exactly as it runs.
    await page.get_by_test_id("user-metadata-tab").click()
    summary = page.frame_locator('iframe#user-metadata-summary').locator("code")
    details = page.frame_locator('iframe#user-metadata-current-details').locator("code")
    await expect(details.first).to_have_text("waiting_approval: shell", timeout=TIMEOUT_MS)
    assert await summary.all_inner_texts() == [INSTRUCTION]
    # A code block's text ends with the line break of its last line. Then why it asks, and
    # how to approve: the update's payload, and the same from a terminal.
    shown = await details.all_inner_texts()
    digest = (await tasks.waiting.query("status"))["pending_approval"]["digest"]
    assert shown[:3] == ["waiting_approval: shell", f"{PENDING}\n", "dangerous: deletes recursively or by force (rm)"]
    assert f'{{"approved": true, "digest": "{digest}"}}\n' in shown
    assert any(text.startswith(f"temporal workflow update execute \\\n  --workflow-id {tasks.waiting.id} --name decide")
               for text in shown)
    await expect(page.frame_locator('iframe#user-metadata-current-details').get_by_text(
        "More Actions → Send an Update")).to_be_visible(timeout=TIMEOUT_MS)
    await page.screenshot(path=screenshots / "waiting-task-current-details.png")


async def test_a_person_approves_a_call_by_following_the_current_details_in_the_dialog(
    ui_server, module_data_dir, tmp_path, page: Page, screenshots
):
    """What the current details say, done by clicking: More Actions → Send an Update, the
    ``decide`` update, Random UUID (the dialog sends nothing without an Update ID), the
    payload shown; the task then runs the call and finishes."""
    client, base = ui_server[0].client, ui_server[1]
    queue = f"ui-{uuid.uuid4().hex[:8]}"
    steps = [tool("shell", command="rm -rf build"), tool("message", type="result", text="cleaned")]
    (tmp_path / "build").mkdir()
    async with scripted_worker(client, queue, steps) as model:
        handle = await started(client, queue, make_input(tmp_path, "Clean the build"))
        await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        await page.goto(f"{base}/namespaces/default/workflows/{handle.id}")
        await page.get_by_test_id("user-metadata-tab").click()
        details = page.frame_locator('iframe#user-metadata-current-details')
        await expect(details.get_by_text("press Random UUID")).to_be_visible(timeout=TIMEOUT_MS)
        payload = next(text.strip() for text in await details.locator("code").all_inner_texts()
                       if text.startswith('{"approved"'))

        await page.get_by_role("button", name="More Actions").click()
        await page.get_by_role("menuitem", name="Send an Update").click()
        dialog = page.locator("#modal-content-update-confirmation-modal").locator("visible=true")
        await page.get_by_test_id("update-select-button").locator("visible=true").click()
        await page.locator("#update-select-select").get_by_role("option").filter(has_text="decide").first.click()
        await dialog.locator(".cm-content").click()
        await page.keyboard.insert_text(payload)
        await page.get_by_role("button", name="Random UUID").locator("visible=true").click()
        await page.screenshot(path=screenshots / "send-update-dialog.png")
        async with page.expect_request(lambda request: request.method == "POST" and "/update/decide" in request.url,
                                       timeout=TIMEOUT_MS):
            await page.get_by_role("button", name="Submit").locator("visible=true").click()

        outcome = TaskOutcome.model_validate(await asyncio.wait_for(outcome_of(handle), 60))
        model.assert_consumed()
    assert outcome.status == TaskState.DONE and outcome.final_text == "cleaned"
    assert not (tmp_path / "build").exists()


# -- helpers ---------------------------------------------------------------------------------


async def test_a_compressed_result_reads_as_text_through_the_codec_endpoint(
    ui_server, module_data_dir, workspace, page: Page, screenshots
):
    """The worker and client compress large payloads (the default); the history stores them
    as binary/zlib, and the UI shows them decoded through the codec server."""
    env, base = ui_server
    compressing = Client(**{**env.client.config(), "data_converter": data_converter(codec_for(CodecSettings()))})
    queue = f"ui-{uuid.uuid4().hex[:8]}"
    answer = "COMPRESSED-MARKER " + " ".join(f"line {i} of a long answer" for i in range(200))
    async with scripted_worker(compressing, queue, [tool("message", type="result", text=answer)]):
        handle = await started(compressing, queue, make_input(workspace, "Answer at length"))
        await outcome_of(handle)
    history = await env.client.get_workflow_handle(handle.id).fetch_history()
    (result,) = [e.workflow_execution_completed_event_attributes.result.payloads[0] for e in history.events
                 if e.HasField("workflow_execution_completed_event_attributes")]
    assert result.metadata["encoding"] == b"binary/zlib" and b"COMPRESSED-MARKER" not in result.data  # stored so
    await open_history(page, base, handle)
    await expect(event_row(page, "Workflow Execution Completed")).to_contain_text("COMPRESSED-MARKER",
                                                                                 timeout=TIMEOUT_MS)
    await page.screenshot(path=screenshots / "compressed-result.png")



async def started(client: Client, queue: str, inp: TaskInput) -> WorkflowHandle:
    return client.get_workflow_handle(await start_task(client, inp, queue, configured.settings().temporal))


async def visible_in_list(client: Client, query: str, count: int, timeout_s: float = 20.0) -> None:
    """Wait until the server's list (what the UI's list shows) has the tasks: it lags a little."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while (await client.count_workflows(query)).count != count:
        assert asyncio.get_running_loop().time() < deadline, f"{query}: not {count} workflow(s) in the list"
        await asyncio.sleep(0.1)


async def open_history(page: Page, base: str, handle: WorkflowHandle) -> None:
    run_id = (await handle.describe()).run_id
    await page.goto(f"{base}/namespaces/default/workflows/{handle.id}/{run_id}/history")


def event_row(page: Page, event_type: str) -> Locator:
    return page.get_by_test_id("event-summary-row").filter(has_text=event_type)


async def activity_summaries(page: Page) -> list[str]:
    """The Summary shown on each Activity Task Scheduled row, oldest first."""
    rows = event_row(page, "Activity Task Scheduled")
    await expect(rows.first).to_contain_text("Summary", timeout=TIMEOUT_MS)
    await expect(event_row(page, "Workflow Execution Started")).to_have_count(1, timeout=TIMEOUT_MS)
    summaries = []
    for text in reversed(await rows.all_inner_texts()):  # the history is shown newest first
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        summaries.append(lines[lines.index("Summary") + 1])
    return summaries


async def local_activity_summaries(page: Page) -> list[str]:
    """The Summary shown on each Local Activity row (the UI's name for a local activity's
    marker), oldest first."""
    rows = event_row(page, "Local Activity")
    await expect(rows.first).to_be_visible(timeout=TIMEOUT_MS)
    summaries = []
    for text in reversed(await rows.all_inner_texts()):
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        summaries.append(lines[lines.index("Summary") + 1])
    return summaries
