"""What a person attaches to a message (a chat's files and images) reaches the task: every
file lands under the workspace's ``attachments/``, an image is shown to a model that takes
images in the message that brought it, and the bytes enter the history with the message and
the activity that saves them, never again (the model's calls carry a reference)."""

from __future__ import annotations

import base64
import json

from contracts.attachments import Attachment
from contracts.task import Interjection, TaskState
from fakes.scripted import tool
from tests.providers.images import b64, png
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, wait_for_state
from workflows.task import AgentTaskWorkflow

PLOT = png(4, 5)
NOTES = b"line one\nline two\n"


def user_parts(request: dict) -> list:
    """The content of the request's user messages, in order (a string, or a list of parts)."""
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def images_in(content) -> list[str]:
    return [p["image_url"]["url"] for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


async def test_files_land_in_the_workspace_and_an_image_reaches_a_vision_model(client, task_queue, workspace):
    attachments = [
        Attachment(kind="image", name="plot.png", media_type="image/png", size=len(PLOT), data_b64=b64(PLOT)),
        Attachment(kind="file", name="../../etc/notes.txt", size=len(NOTES), data_b64=b64(NOTES)),
        Attachment(kind="file", name="huge.iso", size=5_000_000),  # too large to carry: named, not saved
    ]
    async with scripted_worker(client, task_queue, [tool("message", type="result", text="a grey plot")]) as model:
        handle = await start(client, task_queue, make_input(
            workspace, "what is in the plot?", model="gpt-4o", attachments=attachments))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE, outcome.error
    assert (workspace / "attachments" / "plot.png").read_bytes() == PLOT
    assert (workspace / "attachments" / "notes.txt").read_bytes() == NOTES  # its path dropped: inside
    assert not (workspace / "attachments" / "huge.iso").exists()
    first = user_parts(model.requests[0])[-1]
    said = next(p["text"] for p in first if p["type"] == "text")
    assert said.startswith("what is in the plot?\n[attached: attachments/plot.png (")
    assert "attachments/notes.txt (18 bytes)" in said and "huge.iso (not received: 5,000,000 bytes" in said
    assert images_in(first) == [f"data:image/png;base64,{b64(PLOT)}"]
    carrying = [p for p in payloads(json.loads((await handle.fetch_history()).to_json())) if b64(PLOT) in p]
    # The task's input, and the activity that saves them; never an LLM call's input or a result.
    assert len(carrying) == 2 and carrying[0].startswith('{"instruction":"what is in the plot?"')
    assert carrying[1].startswith('{"workspace":')


def payloads(node) -> list[str]:
    """Every payload's data in a history (as JSON), decoded."""
    if isinstance(node, dict):
        found = [base64.b64decode(node["data"]).decode("utf-8", "replace")] if "metadata" in node and "data" in node else []
        return found + [p for v in node.values() for p in payloads(v)]
    return [p for v in node for p in payloads(v)] if isinstance(node, list) else []


async def test_a_text_only_model_is_told_the_image_is_not_shown_and_still_has_the_file(client, task_queue, workspace):
    image = Attachment(kind="image", name="shot.png", media_type="image/png", data_b64=b64(PLOT))
    async with scripted_worker(client, task_queue, [tool("message", type="result", text="ok")]) as model:
        outcome = await outcome_of(await start(client, task_queue, make_input(workspace, "", attachments=[image])))
    assert outcome.status == TaskState.DONE, outcome.error
    said = user_parts(model.requests[0])[-1]
    assert isinstance(said, str) and said.startswith("[attached: attachments/shot.png (")
    assert "does not take images" in said
    assert (workspace / "attachments" / "shot.png").read_bytes() == PLOT


async def test_an_attachment_sent_as_a_reply_lands_too_and_a_same_name_file_does_not_overwrite(
        client, task_queue, workspace):
    (workspace / "attachments").mkdir()
    (workspace / "attachments" / "data.csv").write_text("mine\n")
    steps = [tool("message", type="ask", text="Which data?"), tool("message", type="result", text="read it")]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.WAITING_REPLY)
        await handle.signal(AgentTaskWorkflow.interject, Interjection(text="this one", attachments=[
            Attachment(kind="file", name="data.csv", data_b64=b64(b"a,b\n1,2\n"))]))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE, outcome.error
    assert (workspace / "attachments" / "data.csv").read_text() == "mine\n"
    assert (workspace / "attachments" / "data-1.csv").read_text() == "a,b\n1,2\n"
    assert user_parts(model.requests[1])[-1] == "this one\n[attached: attachments/data-1.csv (8 bytes)]"
