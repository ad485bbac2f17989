"""The tool activity's guarantees: no call runs unapproved, none runs twice.

The activity runs in Temporal's ActivityEnvironment with a real store (SQLite here; the
Postgres store implements the same calls and is exercised at the end); retries are
simulated as Temporal makes them: same input, a later attempt, the last heartbeat's details.
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import threading
import time

from temporalio.testing import ActivityEnvironment

from activities.tools import ToolActivities
from contracts.activities import ToolCallInput, ToolProgress
from core.entries import ToolResult, entry_digest
from core.messages import ToolCallRequest, call_digest
from runtime.audit import AuditLog
from runtime.checkpoints import Checkpoints
from runtime.secrets import SecretStore
from runtime.store import ContextStore, open_store
from tests import sandboxing
from tests.configured import settings
from workflows.policy import INTERRUPTED_BY_USER

APPEND = "echo ran >> runs.txt"
KEY = f"{ActivityEnvironment().info.workflow_run_id}:3:call_1"  # run, result seq, call id


def call_input(workspace, command: str = APPEND, **fields) -> ToolCallInput:
    call = ToolCallRequest(id="call_1", name="shell", arguments={"command": command})
    values = dict(task_id="t1", turn=1, workspace=str(workspace), call=call, context_id="ctx-1", result_seq=3,
                  approval="never")
    values.update(fields)
    return ToolCallInput(**values)


def activities(tmp_path, store=None) -> ToolActivities:
    return ToolActivities(store or ContextStore(tmp_path / "store.db"), SecretStore({}), settings())


def retry_env(attempt: int = 2, details: list | None = None) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt, heartbeat_details=details or [])
    return env


async def test_a_retry_of_a_finished_call_returns_its_recorded_result_without_running_it(tmp_path, workspace):
    acts = activities(tmp_path)
    first = await ActivityEnvironment().run(acts.run_tool, call_input(workspace))
    again = await retry_env().run(acts.run_tool, call_input(workspace))  # e.g. its completion was lost
    assert (workspace / "runs.txt").read_text() == "ran\n"
    assert again == first and first.exit_code == 0


async def test_a_retry_of_a_call_that_started_and_never_finished_is_not_run_again(tmp_path, workspace):
    acts = activities(tmp_path)
    store = acts.store
    await store.put_call("ctx-1", KEY, "started")  # the worker died while it ran
    details = [ToolProgress(output="step 1 done\nstep 2").model_dump()]
    result = await retry_env(details=details).run(acts.run_tool, call_input(workspace))
    assert not (workspace / "runs.txt").exists()
    assert result.status == "error" and result.content.startswith("[interrupted]")
    assert "may have partly run" in result.content and "step 1 done\nstep 2" in result.content
    # What the model was told is recorded as the call's result: a further retry says the same.
    assert await retry_env(attempt=3).run(acts.run_tool, call_input(workspace)) == result


async def test_heartbeat_details_alone_tell_a_retry_the_call_had_started(tmp_path, workspace):
    acts = activities(tmp_path)  # e.g. the store write of "started" is what was lost
    result = await retry_env(details=[{"started": True, "output": "partial"}]).run(acts.run_tool, call_input(workspace))
    assert "[interrupted]" in result.content and "partial" in result.content
    assert not (workspace / "runs.txt").exists()


class StoreDownAtFinish(ContextStore):
    """The store drops out just as the call's result is written (the first time only)."""

    down = True

    def finish_call(self, *args, **kwargs):
        if self.down:
            raise OSError("connection to the store lost")
        return super().finish_call(*args, **kwargs)


async def test_a_finished_result_the_store_could_not_take_is_stored_by_the_retry_not_lost(tmp_path, workspace):
    """The command ran to the end, but the store was down when its result was written: the
    result rides in the heartbeat details, and the retry stores it instead of telling the
    model the call was interrupted."""
    store = StoreDownAtFinish(tmp_path / "store.db")
    acts = activities(tmp_path, store)
    first = ActivityEnvironment()
    beats: list = []
    first.on_heartbeat = lambda *details: beats.append(details)
    try:
        await first.run(acts.run_tool, call_input(workspace, "echo ran >> runs.txt; echo output"))
        raise AssertionError("the store write was expected to fail")
    except OSError:
        pass
    store.down = False  # the store is back
    details = [beats[-1][0].model_dump()]
    result = await retry_env(details=details).run(acts.run_tool, call_input(workspace))
    assert (workspace / "runs.txt").read_text() == "ran\n"  # ran once
    assert result.status == "ok" and "output" in result.content and "[interrupted]" not in result.content
    assert result.stored_digest is not None
    # Recorded as finished: a further retry returns it without running anything.
    assert await retry_env(attempt=3).run(acts.run_tool, call_input(workspace)) == result


async def test_a_call_that_ends_after_the_workflow_put_interrupted_at_its_seq_leaves_it(tmp_path, workspace):
    """Cancelled for a person's message, the call still ends and stores its result: the
    ``[interrupted]`` entry the workflow put there stays, and the digest returned (then on a
    retry too) is that entry's, so the workflow's check sends its own and the model reads it."""
    acts = activities(tmp_path)
    interrupted = ToolResult(seq=3, turn=1, call_id="call_1", name="shell", content=INTERRUPTED_BY_USER)
    await acts.store.put("ctx-1", [interrupted])
    result = await ActivityEnvironment().run(acts.run_tool, call_input(workspace))
    assert result.status == "ok" and result.stored_digest == entry_digest(interrupted)
    assert await acts.store.load_range("ctx-1", 3, 4) == [(entry_digest(interrupted), interrupted)]
    assert await retry_env().run(acts.run_tool, call_input(workspace)) == result
    assert (workspace / "runs.txt").read_text() == "ran\n"


async def test_an_idempotent_call_that_was_cut_off_simply_runs_again(tmp_path, workspace):
    acts = activities(tmp_path)
    (workspace / "a.txt").write_text("hello")
    await acts.store.put_call("ctx-1", KEY, "started")
    result = await retry_env().run(acts.run_tool, call_input(workspace, "cat a.txt"))
    assert result.status == "ok" and "hello" in result.content


async def test_a_first_attempt_of_an_idempotent_call_runs_without_a_lookup_and_a_retry_finds_its_record(
    tmp_path, workspace
):
    """A workflow task replayed after a crash runs a local read again as a first attempt: it
    simply runs (what it declares safe), with no store read; a retry reads its record."""
    acts = activities(tmp_path)
    (workspace / "a.txt").write_text("first")
    lookups: list[str] = []
    get_call = acts.store.get_call

    async def counted(context_id: str, key: str):  # type: ignore[no-untyped-def]
        lookups.append(key)
        return await get_call(context_id, key)

    acts.store.get_call = counted  # type: ignore[method-assign]
    first = await ActivityEnvironment().run(acts.run_tool, call_input(workspace, "cat a.txt"))
    (workspace / "a.txt").write_text("second")
    rerun = await ActivityEnvironment().run(acts.run_tool, call_input(workspace, "cat a.txt"))
    assert lookups == [] and "first" in first.content and "second" in rerun.content
    retried = await retry_env().run(acts.run_tool, call_input(workspace, "cat a.txt"))
    assert lookups == [KEY] and retried == rerun  # the recorded result, not a third run
    # A call that must not run twice looks its record up on every attempt.
    await ActivityEnvironment().run(acts.run_tool, call_input(workspace, result_seq=4))
    assert lookups[-1].endswith(":4:call_1")


async def test_a_call_that_needs_approval_runs_only_with_the_digest_of_that_exact_call(tmp_path, workspace):
    acts = activities(tmp_path)
    (workspace / "build").mkdir()
    (workspace / "important_data").mkdir()
    approved_a = call_digest("shell", {"command": "rm -rf build"})
    # Arguments B under an approval of arguments A: refused, nothing deleted.
    refused = await ActivityEnvironment().run(
        acts.run_tool,
        call_input(workspace, "rm -rf important_data", approval="dangerous", approved=approved_a, result_seq=5),
    )
    assert refused.status == "error" and refused.content.startswith("[refused]")
    assert "not approved" in refused.content and (workspace / "important_data").is_dir()
    # No approval at all (a reset, a bug): refused too.
    unapproved = await ActivityEnvironment().run(
        acts.run_tool, call_input(workspace, "rm -rf build", approval="dangerous", result_seq=6)
    )
    assert unapproved.content.startswith("[refused]") and (workspace / "build").is_dir()
    # The approved call itself runs.
    ran = await ActivityEnvironment().run(
        acts.run_tool, call_input(workspace, "rm -rf build", approval="dangerous", approved=approved_a, result_seq=7)
    )
    assert ran.status == "ok" and not (workspace / "build").exists()
    # A moderate command needs no approval in the default mode; under "always" it does.
    assert (await ActivityEnvironment().run(
        acts.run_tool, call_input(workspace, "echo hi", approval="dangerous", result_seq=8)
    )).status == "ok"
    assert (await ActivityEnvironment().run(
        acts.run_tool, call_input(workspace, "echo hi", approval="always", result_seq=9)
    )).content.startswith("[refused]")


async def test_only_the_approved_call_may_write_a_control_file(tmp_path, workspace, monkeypatch):
    """Approval reaches the tool (``ToolContext.approved``): a mode that asks nothing runs the
    call, but it may not write ``.git/config``; the call the person approved may."""
    sandboxing.require(monkeypatch)
    acts = activities(tmp_path)
    (workspace / ".git").mkdir()
    config = workspace / ".git" / "config"
    config.write_text("[core]\n")
    write = {"action": "write", "path": ".git/config", "content": "[core]\n\thooksPath = x\n"}
    file_call = ToolCallRequest(id="call_1", name="file", arguments=write)
    shell = "echo '[alias]' >> .git/config"
    for seq, call in enumerate((file_call, call_input(workspace, shell).call), start=10):
        ran = await ActivityEnvironment().run(
            acts.run_tool, call_input(workspace, call=call, approval="never", result_seq=seq))
        assert config.read_text() == "[core]\n", ran.content
    approved = await ActivityEnvironment().run(acts.run_tool, call_input(
        workspace, call=file_call, approval="dangerous", approved=call_digest("file", write), result_seq=20))
    assert approved.status == "ok" and "hooksPath" in config.read_text()
    shell_digest = call_digest("shell", {"command": shell})
    await ActivityEnvironment().run(acts.run_tool, call_input(
        workspace, shell, approval="dangerous", approved=shell_digest, result_seq=21))
    assert config.read_text().endswith("[alias]\n")


async def test_a_call_input_without_an_approval_mode_is_refused(tmp_path, workspace):
    (workspace / "build").mkdir()
    refused = await ActivityEnvironment().run(
        activities(tmp_path).run_tool, call_input(workspace, "rm -rf build", approval=None, approved=None)
    )
    assert refused.status == "error" and "names no approval mode" in refused.content
    assert (workspace / "build").is_dir()


async def test_call_records_in_postgres(postgres_url, tmp_path, workspace):
    store = open_store(postgres_url, settings().paths)
    try:
        acts = activities(tmp_path, store)
        key = f"t-{workspace.name}-{id(store)}"
        first = await ActivityEnvironment().run(acts.run_tool, call_input(workspace, context_id=key))
        again = await retry_env().run(acts.run_tool, call_input(workspace, context_id=key))
        assert again == first and (workspace / "runs.txt").read_text() == "ran\n"
        # The record is the result; the digest returned with it is what the seq holds when asked.
        assert await store.get_call(key, KEY) == ("finished", first.model_copy(update={"stored_digest": None}).model_dump_json())
        [(digest, entry)] = await store.load_range(key, 3, 4)  # the result entry, written with the record
        assert digest == first.stored_digest and entry.kind == "tool_result"
    finally:
        await store.close()


async def test_a_locked_audit_log_delays_the_call_but_never_the_event_loop(tmp_path):
    """The audit log is shared by a worker's processes through a file lock; while another
    process holds it, the call waits in a thread and the worker's loop keeps running (its
    heartbeats and its other tasks' calls go on)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    log_path = tmp_path / "audit.jsonl"
    holder = subprocess.Popen(  # another worker process, holding the log's lock for 1.5 s
        [sys.executable, "-c", (
            "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('held', flush=True); time.sleep(1.5)"), str(log_path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    acts = ToolActivities(ContextStore(tmp_path / "store.db"), SecretStore({}), settings(), AuditLog(log_path))
    call = asyncio.ensure_future(ActivityEnvironment().run(acts.run_tool, call_input(workspace, "echo hi")))
    stalls, last = [], time.monotonic()
    while not call.done():  # the loop ticks every 10 ms while the call waits for the log
        await asyncio.sleep(0.01)
        now = time.monotonic()
        stalls.append(now - last)
        last = now
    result = call.result()
    assert holder.wait(10) == 0
    assert result.status == "ok" and "hi" in result.content
    assert len(stalls) > 50 and max(stalls) < 0.5, max(stalls)  # it waited, and the loop ran all along
    assert '"tool":"shell"' in log_path.read_text()


class HeldSaves(Checkpoints):
    """Checkpoints whose saves wait for ``release``, counting how many run at once."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.release, self.lock = threading.Event(), threading.Lock()
        self.running = self.most = self.saves = 0

    def save(self, workspace, task_id: str, turn: int) -> str:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.release.wait(30)
        with self.lock:
            self.running -= 1
            self.saves += 1
        return "held"


async def test_tasks_sharing_a_workspace_wait_for_its_checkpoint_without_taking_the_workers_threads(
        tmp_path, workspace):
    saves = HeldSaves(tmp_path / "checkpoints")
    acts = ToolActivities(ContextStore(tmp_path / "store.db"), SecretStore({}), settings(), workspace_checkpoints=saves)
    calls = [asyncio.create_task(ActivityEnvironment().run(acts.run_tool, call_input(workspace, task_id=f"t{n}")))
             for n in range(12)]  # more than the default executor's threads (min(32, cores + 4))
    while saves.running == 0:
        await asyncio.sleep(0.01)
    # The store and every other task still get a thread while twelve saves wait on one workspace.
    assert await asyncio.wait_for(asyncio.to_thread(lambda: "a thread was free"), 10) == "a thread was free"
    saves.release.set()
    results = await asyncio.gather(*calls)
    assert all(r.status == "ok" for r in results) and saves.saves == 12
    assert saves.most == 1  # one save of a workspace at a time, the others waiting without a thread
