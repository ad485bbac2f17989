"""Secrets: naming a well-known secret file anywhere in a command (``cat ~/.ssh/id_rsa``, ``base64
~/.kube/config``, ``cp /etc/shadow .``, ``--file=~/.netrc``; ``< ~/.netrc`` is the walk's) asks,
whatever the program: the file's contents would reach the model and the history. Also ``getent``
of the shadow databases. The paths are in ``paths.py``."""

from __future__ import annotations

from tools.shell_policy.paths import _secret
from tools.shell_policy.verdict import MODERATE, SAFE, Verdict, _bad
from tools.shell_policy.walk import _Call
from tools.shell_policy.words import _opts, _Word


def _reads_secret(c: _Call, head: _Word) -> Verdict:
    """Every command's arguments, and the values of its VAR=value assignments."""
    for w in [*c.args, *(value for _, value in c.env)]:
        if _secret(w, c.scan.cwd):
            return _bad(f"reads a secret file ({c.name} {w.show})")
    return SAFE


def _getent(c: _Call) -> Verdict:
    words = _opts(c.args, "s", ("--service",)).texts()
    if words[:1] in (["shadow"], ["gshadow"]):
        return _bad(f"reads a secret file (getent {words[0]})")
    return MODERATE
