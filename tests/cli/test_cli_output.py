"""What ``run`` shows of a large result: its start, without the wrapper meant for the model,
and what the model got of it, as the tool activity really keeps it (a blob, a preview in the
history)."""

from __future__ import annotations

import re

from fakes.scripted import tool
from tests.cli.test_cli import cli
from tests.workflows.harness import scripted_worker


async def test_run_says_how_much_of_a_large_output_the_model_got(client, task_queue, workspace):
    steps = [tool("shell", command="seq 1 30000"), tool("message", type="result", text="counted")]
    async with scripted_worker(client, task_queue, steps) as model:
        code, out, err = await cli(client, "run", "--verify", "off", "--workspace", str(workspace), "count", queue=task_queue)
        assert code == 0, err
        sent = model.requests[1]["messages"][-1]["content"]  # what the model got of the output
    lines = out.splitlines()
    at = lines.index("← ok (exit 0)")
    assert [line.strip() for line in lines[at + 1:at + 7]] == [str(n) for n in range(1, 7)]
    (note,) = [line.strip() for line in lines if line.strip().startswith("… ")]
    assert note == f"… the rest is not shown here; the model got all {len(sent):,} characters", out
    assert "untrusted_content" not in out and "preview of" not in out and "blob" not in out
    assert [line for line in lines if re.fullmatch(r"── turn \d+ ──", line)] == ["── turn 1 ──", "── turn 2 ──"]
