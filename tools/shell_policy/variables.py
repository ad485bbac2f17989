"""Variables that name a command or code to load: set before a command (``PAGER=... git log``) or
through ``env``, they make a read run something (``GIT_EXTERNAL_DIFF=x git diff``, ``LESSOPEN``,
``MANPAGER``), so the value is judged as the command it names (``PAGER=cat`` stays SAFE) and
``BASH_ENV`` as a script the shell runs; code loaded
from elsewhere (``LD_PRELOAD``, ``NODE_OPTIONS``) makes the command at least MODERATE; git config set
through the environment (``GIT_CONFIG_KEY_0``) is judged as ``git -c``."""

from __future__ import annotations

import re

from tools.base import Danger
from tools.shell_policy.scripts import _run_script
from tools.shell_policy.verdict import MODERATE, SAFE, Verdict, _bad, _worse
from tools.shell_policy.version_control import _GIT_COMMAND_CONFIG
from tools.shell_policy.walk import _Call
from tools.shell_policy.words import _Word

_RUNS = frozenset(
    """PAGER GIT_PAGER MANPAGER SYSTEMD_PAGER LESSOPEN LESSCLOSE GIT_EXTERNAL_DIFF GIT_SSH_COMMAND GIT_SSH
    GIT_EDITOR GIT_SEQUENCE_EDITOR EDITOR VISUAL GIT_ASKPASS SSH_ASKPASS SUDO_ASKPASS PROMPT_COMMAND
    GIT_PROXY_COMMAND BROWSER""".split()
)
_LOADS = frozenset(
    """LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH PYTHONSTARTUP PYTHONPATH PYTHONHOME NODE_OPTIONS PERL5OPT PERL5LIB
    RUBYOPT RUBYLIB GIT_EXEC_PATH GIT_TEMPLATE_DIR GIT_DIR GIT_CONFIG GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM
    RIPGREP_CONFIG_PATH""".split()
)


def _command_variables(c: _Call, head: _Word) -> Verdict:
    verdict = SAFE
    for name, value in c.env:
        if name in ("BASH_ENV", "ENV"):  # a script the shell sources first
            verdict = _worse(verdict, _run_script(c, value) if value.text else MODERATE)
        elif name in _RUNS:
            if value.text is None:
                return _bad(f"runs a command built at run time ({name}={value.show})")
            verdict = _worse(verdict, c.nested(value.text.lstrip("|"), f"{name}="))  # LESSOPEN='|cmd %s'
        elif re.fullmatch(r"GIT_CONFIG_(PARAMETERS|KEY_\d+|VALUE_\d+)", name):
            if value.text is None or _GIT_COMMAND_CONFIG.match(value.text.strip("'")) or (
                    name.startswith("GIT_CONFIG_VALUE") and _sets_command(c, name)):
                return _bad(f"runs a command set through git config ({name}={value.show})")
            verdict = _worse(verdict, MODERATE)
        elif name in _LOADS:
            verdict = _worse(verdict, MODERATE)
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    return verdict


def _sets_command(c: _Call, value_name: str) -> bool:
    """GIT_CONFIG_VALUE_n: whether its GIT_CONFIG_KEY_n names a key that runs commands."""
    key = dict(c.env).get(value_name.replace("VALUE", "KEY"))
    return key is None or key.text is None or bool(_GIT_COMMAND_CONFIG.match(key.text + "="))
