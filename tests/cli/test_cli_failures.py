"""A failure as a person sees it: one line on the terminal, the details in the log file.

``run`` with a wrong API key, its worker in-process as on the embedded default, against a model
server that answers 401 as OpenAI does. The embedded default's server is the machine's one on
port 7233, which tests do not touch: the command runs on the test session's server with its
in-process worker turned on (what ``is_embedded`` decides for ``run``), everything else as a
person runs it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from fakes.scripted import ScriptedModelServer, Step

ROOT = Path(__file__).resolve().parents[2]
WRONG_KEY = {"error": {
    "message": "Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.",
    "type": "invalid_request_error", "param": None, "code": "invalid_api_key",
}}  # fmt: skip
IN_PROCESS_RUN = (
    "import sys, starter, cli.commands.run as run; run.is_embedded = lambda: True; "
    "raise SystemExit(starter.main(sys.argv[1:]))"
)


async def test_a_wrong_api_key_is_one_line_on_the_terminal_and_the_details_are_in_the_log(client, task_queue, workspace):
    with ScriptedModelServer([Step(status=401, error_body=WRONG_KEY)]) as model:
        env = dict(
            os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host, TEMPORAL_NAMESPACE="default",
            AGENT_TASK_QUEUE=task_queue, AGENT_MODEL="gpt-4o-mini", OPENAI_BASE_URL=model.url, OPENAI_API_KEY="sk-wrong",
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", IN_PROCESS_RUN, "run", "--workspace", str(workspace), "say hello", cwd=ROOT, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        out, err = (part.decode() for part in await asyncio.wait_for(proc.communicate(), 90))
    assert proc.returncode == 1, out + err
    assert err == "", err  # no log line, no warning, no traceback
    failures = [line for line in out.splitlines() if "401" in line]
    assert len(failures) == 1 and failures[0].startswith("FAILED (1 turns"), out
    assert "Incorrect API key provided" in failures[0] and "sk-wrong" not in out  # the key itself is redacted
    log = (Path(os.environ["AGENT_DATA_DIR"]) / "worker.log").read_text()
    assert "llm call failed" in log and "Traceback" in log  # the details are in the log file
    assert "sk-wrong" not in log  # redacted there too
