"""Which of the worker's variables must not be handed to every shell command without the
operator insisting (``AGENT_SHELL_ENV_ALLOW_UNSAFE=1``): a secret there is readable by every
command of every task, and a code-running variable makes the command's shell, loader or
interpreter run code the command never named, so the approval gate judged something else."""

from __future__ import annotations

CODE_RUNNING_ENV = frozenset({
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PYTHONSTARTUP", "PYTHONPATH",
    "PERL5OPT", "NODE_OPTIONS", "PROMPT_COMMAND",
})
SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_CREDENTIALS")


def unsafe_env_name(name: str) -> str:
    """Why giving ``name`` to every command is unsafe ("" when it is not)."""
    if name.upper().endswith(SECRET_SUFFIXES):
        return "looks like a secret"
    if name in CODE_RUNNING_ENV:
        return "makes commands run other code"
    return ""
