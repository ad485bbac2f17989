import json
import subprocess
import sys
import threading
from pathlib import Path

from runtime.audit import AuditEntry, AuditLog, default_audit_path
from runtime.secrets import SecretStore
from tests.configured import settings
from tools.base import ToolOutcome

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {"time", "workflow_id", "turn", "tool", "arguments", "status", "exit_code", "duration_ms", "truncated"}
BIG = "x" * 100_000  # far over PIPE_BUF, so only the lock keeps lines whole


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_audit_log_appends_one_json_object_per_call_with_every_field(tmp_path: Path):
    log = AuditLog(tmp_path / "logs" / "audit.jsonl")
    log.record(
        workflow_id="wf-1", turn=3, tool="shell", arguments={"command": "ls"},
        result=ToolOutcome(content="a\n[exit code: 0]", exit_code=0), duration_ms=12,
    )
    log.record(
        workflow_id="wf-1", turn=4, tool="file", arguments={"action": "read", "path": "a"},
        result=ToolOutcome(status="error", content="no such file", truncated=True), duration_ms=1,
    )
    first, second = _lines(log.path)
    assert set(first) == FIELDS
    assert first["workflow_id"] == "wf-1" and first["turn"] == 3 and first["tool"] == "shell"
    assert first["arguments"] == {"command": "ls"} and first["status"] == "ok"
    assert first["exit_code"] == 0 and first["duration_ms"] == 12 and first["truncated"] is False
    assert first["time"].endswith("+00:00") and "T" in first["time"]
    assert second["status"] == "error" and second["exit_code"] is None and second["truncated"] is True


def test_audit_log_file_is_private_to_its_owner(tmp_path: Path):
    log = AuditLog(tmp_path / "audit.jsonl")
    log.append(AuditEntry(time="t", workflow_id="w", turn=1, tool="shell", arguments={}, status="ok", duration_ms=0))
    assert log.path.stat().st_mode & 0o077 == 0


def test_audit_log_redacts_secrets_again_when_given_a_store(tmp_path: Path):
    log = AuditLog(tmp_path / "audit.jsonl", secrets=SecretStore({"TOKEN": "ghp_supersecret"}))
    written = log.record(
        workflow_id="ghp_supersecret-in-an-id", turn=1, tool="shell",
        arguments={"command": "echo ghp_supersecret", "env": ["ghp_supersecret"]},
        result=ToolOutcome(content=""), duration_ms=5,
    )
    text = log.path.read_text()
    assert "ghp_supersecret" not in text
    (line,) = _lines(log.path)
    assert line["arguments"] == {"command": "echo {{secret:TOKEN}}", "env": ["{{secret:TOKEN}}"]}
    assert written.workflow_id == "{{secret:TOKEN}}-in-an-id"


def test_audit_log_concurrent_appends_from_threads_do_not_interleave(tmp_path: Path):
    log = AuditLog(tmp_path / "audit.jsonl")

    def work(n: int) -> None:
        for i in range(20):
            log.append(AuditEntry(
                time="t", workflow_id=f"w{n}", turn=i, tool="file",
                arguments={"content": BIG}, status="ok", duration_ms=0,
            ))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = _lines(log.path)
    assert len(lines) == 160
    assert all(line["arguments"]["content"] == BIG for line in lines)
    assert {(line["workflow_id"], line["turn"]) for line in lines} == {
        (f"w{n}", i) for n in range(8) for i in range(20)
    }


WRITER = """
import sys
from runtime.audit import AuditEntry, AuditLog
log = AuditLog(sys.argv[1])
for i in range(25):
    log.append(AuditEntry(time="t", workflow_id=sys.argv[2], turn=i, tool="file",
                          arguments={"content": "y" * 100_000}, status="ok", duration_ms=0))
"""


def test_audit_log_concurrent_appends_from_processes_do_not_interleave(tmp_path: Path):
    path = tmp_path / "audit.jsonl"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"p{n}"], cwd=ROOT)
        for n in range(4)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    lines = _lines(path)
    assert len(lines) == 100
    assert {(line["workflow_id"], line["turn"]) for line in lines} == {
        (f"p{n}", i) for n in range(4) for i in range(25)
    }


def test_default_audit_path_is_in_the_data_dir(tmp_path: Path):
    # conftest points AGENT_DATA_DIR at tmp_path / "data"
    assert default_audit_path(settings().paths) == tmp_path / "data" / "audit.jsonl"
