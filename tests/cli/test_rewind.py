"""Rewind and fork: a task taken back to the end of an earlier turn, its workspace restored
from the per-turn checkpoints, with Temporal's reset (rewind) or as a new task (fork)."""

from __future__ import annotations

from contracts.task import ApprovalMode, TaskOutcome, TaskState
from fakes.scripted import tool
from tests.cli.test_cli import cli
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, tool_messages

WRITES = [
    tool("file", action="write", path="one.txt", content="1"),
    tool("file", action="write", path="two.txt", content="2"),
    tool("shell", command="echo 3 > three.txt && echo changed > one.txt"),
    tool("message", type="result", text="first ending"),
]


def files(path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(path.iterdir()) if p.is_file()}


async def test_rewind_restores_the_workspace_and_the_context_of_a_turn(client, task_queue, workspace):
    steps = [*WRITES, tool("message", type="result", text="after the rewind")]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        assert (await outcome_of(handle)).final_text == "first ending"
        assert files(workspace) == {"one.txt": "changed\n", "three.txt": "3\n", "two.txt": "2"}

        code, out, err = await cli(client, "rewind", handle.id, "--to-turn", "2")
        assert code == 0, err
        assert "workspace restored to the end of turn 2" in out
        assert files(workspace) == {"one.txt": "1", "two.txt": "2"}

        outcome = await outcome_of(client.get_workflow_handle(handle.id, result_type=TaskOutcome))  # after the reset
        assert outcome.status == TaskState.DONE and outcome.final_text == "after the rewind"
        assert outcome.turns == 3
        # The model saw turns 1 and 2 only: two tool results, nothing of the undone turns.
        after = model.requests[-1]
        assert len(tool_messages(after)) == 2
        assert "three.txt" not in str(after["messages"]) and "first ending" not in str(after["messages"])

    code, _, err = await cli(client, "rewind", handle.id, "--to-turn", "9")
    assert code == 2 and "never started turn 10" in err


async def test_fork_copies_the_workspace_of_a_turn_into_a_new_task(client, task_queue, workspace, tmp_path):
    steps = [*WRITES, tool("message", type="result", text="the fork's ending")]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await outcome_of(handle)
        copy = tmp_path / "forked"
        code, out, err = await cli(client, "fork", handle.id, "--to-turn", "1", "--workspace", str(copy))
        assert code == 0, err
        fork_id = out.strip().splitlines()[-1]
        assert fork_id.startswith(f"{handle.id}-fork-t1-")
        outcome = await outcome_of(client.get_workflow_handle(fork_id, result_type=TaskOutcome))
        assert outcome.final_text == "the fork's ending"
        assert len(tool_messages(model.requests[-1])) == 1  # turn 1 only
    assert files(copy) == {"one.txt": "1"}
    assert files(workspace) == {"one.txt": "changed\n", "three.txt": "3\n", "two.txt": "2"}  # untouched


async def test_rewind_undoes_an_rm_and_names_the_files_left_out_of_the_checkpoints(client, task_queue, workspace):
    """A fifo is not a file a checkpoint can hold: the call after it was made is told its
    changes are not undoable, and a rewind leaves it where it is, and says so; the file
    ``rm`` deleted comes back."""
    steps = [
        tool("file", action="write", path="one.txt", content="1"),
        tool("shell", command="mkfifo pipe && echo 2 > two.txt"),
        tool("shell", command="rm one.txt && echo 3 > three.txt"),
        tool("message", type="result", text="first ending"),
        tool("message", type="result", text="after the rewind"),
    ]
    async with scripted_worker(client, task_queue, steps) as model:
        # `rm` deletes files: dangerous, so it would wait for a person.
        handle = await start(client, task_queue, make_input(workspace, approval=ApprovalMode.NEVER))
        assert (await outcome_of(handle)).final_text == "first ending"
        assert "not undoable by rewind (left out of the checkpoint before this call): pipe (0.0 KB; not a " \
               "regular file)" in str(tool_messages(model.requests[-1])[-1])
        code, out, err = await cli(client, "rewind", handle.id, "--to-turn", "2")
        assert code == 0, err
        assert "workspace restored to the end of turn 2" in out
        assert "left out of the checkpoint, so left as they are: pipe (0.0 KB; not a regular file)" in out
        assert sorted(p.name for p in workspace.iterdir()) == ["one.txt", "pipe", "two.txt"]
        assert files(workspace) == {"one.txt": "1", "two.txt": "2\n"}
        outcome = await outcome_of(client.get_workflow_handle(handle.id, result_type=TaskOutcome))
        assert outcome.final_text == "after the rewind"
