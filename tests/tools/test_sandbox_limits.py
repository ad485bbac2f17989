"""Per-command limits: read from the settings, the pids cgroup found, rlimits chosen.

What they refuse, in the sandbox and out of it, is in tests/security/test_sandbox_as_root.py.
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import threading
from pathlib import Path

import pytest

from core.settings import ShellLimits
from tests import sandboxing
from tools import sandbox, sandbox_limits
from tools.sandbox_limits import Confinement, candidates

HYBRID_HOST = (
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "31 30 0:26 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "38 30 0:33 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n",
    "9:name=systemd:/\n8:pids:/\n4:memory:/box/5b56\n0::/\n",
)
DOCKER_V1 = (
    "700 690 0:40 /docker/abc /sys/fs/cgroup/pids ro,nosuid - cgroup cgroup rw,pids\n",
    "8:pids:/docker/abc\n",
)
SYSTEMD_V2 = (
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
    "0::/system.slice/agent.service\n",
)


def test_limits_have_defaults_the_operator_can_raise():
    assert ShellLimits.from_env({}) == ShellLimits(procs=256, memory_mb=2048, cpu_s=1800, file_mb=4096)
    raised = ShellLimits.from_env({"AGENT_SHELL_MAX_PROCS": "1000", "AGENT_SHELL_MAX_MEMORY_MB": " 8192 "})
    assert raised.procs == 1000 and raised.memory_mb == 8192 and raised.cpu_s == 1800
    for bad in ("0", "-5", "lots", "1.5"):
        with pytest.raises(ValueError, match="AGENT_SHELL_MAX_CPU_S"):
            ShellLimits.from_env({"AGENT_SHELL_MAX_CPU_S": bad})


def test_the_pids_cgroup_is_found_v1_first_then_v2():
    assert candidates(*HYBRID_HOST) == [Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup/unified")]
    assert candidates(*DOCKER_V1) == [Path("/sys/fs/cgroup/pids")]  # mounted from its own cgroup down
    assert candidates(*SYSTEMD_V2) == [Path("/sys/fs/cgroup/system.slice/agent.service")]
    assert candidates("", "") == []


def test_a_worker_counts_its_own_tasks():
    assert sandbox_limits.uid_tasks(os.getuid()) >= threading.active_count()
    assert sandbox_limits.uid_tasks(2**31 - 7) == 0


def test_rlimits_are_memory_cpu_file_size_and_no_core_dumps():
    fence = Confinement(ShellLimits(memory_mb=100, cpu_s=7, file_mb=3), pids_cgroup=None)
    chosen = dict(fence.rlimits)
    assert chosen[resource.RLIMIT_DATA] == 100 * 2**20 and chosen[resource.RLIMIT_CPU] == 7
    assert chosen[resource.RLIMIT_FSIZE] == 3 * 2**20 and chosen[resource.RLIMIT_CORE] == 0


def test_without_a_cgroup_a_worker_that_is_not_root_limits_its_uid(monkeypatch):
    monkeypatch.setattr(sandbox_limits.os, "getuid", lambda: 2**31 - 7)  # a uid with no processes
    chosen = dict(Confinement(ShellLimits(procs=40), pids_cgroup=None).rlimits)
    assert chosen[resource.RLIMIT_NPROC] == min(40, resource.getrlimit(resource.RLIMIT_NPROC)[1])


def test_root_without_a_cgroup_says_it_has_no_process_limit(monkeypatch):
    monkeypatch.setattr(sandbox.os, "getuid", lambda: 0)
    status = sandbox.SandboxStatus("off", None, pids_cgroup=None)
    assert "no process limit" in status.notice() and len(status.notice().splitlines()) == 1
    status = sandbox.SandboxStatus("off", None, pids_cgroup=Path("/sys/fs/cgroup/pids"))
    assert "256 processes, 2048 MiB memory, 1800 s CPU per process, files up to 4096 MiB" in status.notice()


async def test_each_command_gets_a_pids_cgroup_that_goes_with_it():
    base = sandbox_limits.find_pids_cgroup()
    if base is None:
        sandboxing.skip("no writable pids cgroup here")
    fence = Confinement(ShellLimits(procs=7), base)
    assert fence.cgroup is not None and fence.cgroup.parent == base
    made = fence.cgroup
    assert (made / "pids.max").read_text().strip() == "7" and resource.RLIMIT_NPROC not in dict(fence.rlimits)
    await fence.release()
    assert not made.exists()


async def test_a_cgroup_still_in_use_at_release_goes_once_its_processes_end():
    base = sandbox_limits.find_pids_cgroup()
    if base is None:
        sandboxing.skip("no writable pids cgroup here")
    fence = Confinement(ShellLimits(), base)
    made = fence.cgroup
    assert made is not None
    background = subprocess.Popen(["sleep", "0.3"], preexec_fn=fence.enter)  # an unsandboxed command's
    await fence.release(wait=False)
    assert made.exists() and made in sandbox_limits._LEFT
    background.wait()
    await asyncio.sleep(0.05)
    await Confinement(ShellLimits(), base).release()  # the next command tidies up
    assert not made.exists() and made not in sandbox_limits._LEFT
