"""Reads without a shell: how a command runs when there is no sandbox to bound it.

Under ``AGENT_SANDBOX=auto`` on a worker without bubblewrap only plain reads run. A read
handed to ``bash -c`` is only as read-only as the shell leaves it: ``hash -p
/usr/bin/python3 cat; cat -c '…'``, an alias, a function or a ``PATH=.:$PATH`` prefix make
the ``cat`` the classifier judged run another program. So no shell runs at all: the line
must be one simple command or a pipeline of them with literal words
(``shell_policy.shape.plain_pipeline``) that the stricter no-code table passes
(``runs_no_code``), each program named by its bare name and found only in the system's own
directories (``TRUSTED_DIRS``, never the command's ``PATH``), and started with ``execve``;
the worker wires the pipes itself. Nothing interprets the line but the parser that judged
it. Anything else is refused with the line that says how to install bubblewrap.
"""

from __future__ import annotations

import os
import shutil

from tools import shell_policy
from tools.shell_policy.shape import plain_pipeline

TRUSTED_DIRS = ("/usr/local/bin", "/usr/bin", "/bin")


def direct_argvs(command: str) -> list[list[str]] | None:
    """The argv (program by absolute path) of each command of the pipeline ``command`` is,
    when it may run without a shell or sandbox; None when it may not."""
    if not shell_policy.runs_no_code(command):
        return None
    pipeline = plain_pipeline(command)
    if not pipeline:
        return None
    found: list[list[str]] = []
    for program, *rest in pipeline:
        if not program or "/" in program:
            return None  # a program named by a path is never a system read
        where = shutil.which(program, path=os.pathsep.join(TRUSTED_DIRS))
        if where is None:
            return None  # a shell builtin (cd, type) or nothing installed: no shell to run it
        found.append([where, *rest])
    return found
