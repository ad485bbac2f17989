"""A failure as a person sees it: one line on the terminal, the details in the log file.

``run`` with a wrong API key on the embedded default (a dev server and worker of the test's
own, in the background: tests/cli/test_background.py), against a model server that answers
401 as OpenAI does; everything as a person runs it."""

from __future__ import annotations

from pathlib import Path

from fakes.scripted import ScriptedModelServer
from fakes.step import Step
from tests.cli.test_background import embedded, starter

WRONG_KEY = {"error": {
    "message": "Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.",
    "type": "invalid_request_error", "param": None, "code": "invalid_api_key",
}}  # fmt: skip


async def test_a_wrong_api_key_is_one_line_on_the_terminal_and_the_details_are_in_the_log(tmp_path, workspace):
    with ScriptedModelServer([Step(status=401, error_body=WRONG_KEY)]) as model:
        async with embedded(tmp_path, AGENT_MODEL="gpt-4o-mini", OPENAI_BASE_URL=model.url,
                            OPENAI_API_KEY="sk-wrong") as env:
            code, _, err = await starter(env, "list")  # the background server starts, and says so, here
            assert code == 0 and "in the background" in err
            code, out, err = await starter(env, "run", "--workspace", str(workspace), "say hello")
            (log_file,) = (Path(env["AGENT_DATA_DIR"]) / "workers").glob("*.log")  # the worker for its settings
            log = log_file.read_text()
    assert code == 1, out + err
    (said,) = err.splitlines()  # the worker it started, and no log line, no warning, no traceback
    assert said.startswith("started a worker for gpt-4o-mini"), err
    failures = [line for line in out.splitlines() if "401" in line]
    assert len(failures) == 1 and failures[0].startswith("FAILED (1 turns"), out
    assert "Incorrect API key provided" in failures[0] and "sk-wrong" not in out  # the key itself is redacted
    assert "llm call failed" in log and "Traceback" in log  # the details are in the worker's log file
    assert "sk-wrong" not in log  # redacted there too
