"""Packages: installing or removing system packages, installing outside the workspace or globally
(``pip install --user``, ``npm install -g``), and publishing (``npm publish``, ``twine upload``...)."""

from __future__ import annotations

import re

from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad, opts


def judge_pip(c: Call) -> Verdict:
    o = opts(c.args, "tircefp", ("--target", "--prefix", "--root", "--index-url", "--extra-index-url", "--proxy",
                                   "--requirement", "--constraint", "--editable", "--python", "--cache-dir", "--log",
                                   "--src", "--find-links"))
    words = o.texts()
    sub = words[0] if words else ""
    if sub in ("install", "uninstall", "download", "sync"):
        if o.has("--user", "--break-system-packages", "--root", "--system"):
            flag = next(n for n, _ in o.flags if n in ("--user", "--break-system-packages", "--root", "--system"))
            return bad(f"installs packages outside the workspace ({c.name} {sub} {flag})")
        for target in o.values("-t", "--target", "--prefix"):
            if c.outside(target):
                return bad(f"installs packages outside the workspace ({c.name} {sub} --target {target.show})")
        return MODERATE
    return SAFE if sub in ("list", "show", "freeze", "check", "help", "inspect") else MODERATE


def _uv(c: Call) -> Verdict:
    words = opts(c.args, long=("--python", "--project", "--directory")).texts()
    if words[:1] == ["publish"]:
        return bad("publishes a package (uv publish)")
    if words[:1] in (["add"], ["remove"], ["sync"]) or words[:1] == ["pip"] and words[1:2] in (["install"], ["sync"]):
        return bad(f"{_INTO_VENV} (uv {' '.join(words[:2] if words[0] == 'pip' else words[:1])})")
    if words[:1] == ["pip"]:
        pip_args = c.args[[w.text for w in c.args].index("pip") + 1 :]
        return judge_pip(Call("uv pip", pip_args, c.stdin, c.scan))
    return MODERATE


_INTO_VENV = "installs packages into the workspace's virtualenv, whose site-packages Python runs at every start"
# A pip or python named by a path in the workspace: its virtualenv's (``.venv/bin/pip install x``).
_VENV_PROGRAM = re.compile(r"(?!/|~)(?:[^/]+/)*bin/(?:pip|python)[\d.]*")


def venv_install(c: Call, head: Word) -> Verdict:
    """Every command: ``.venv/bin/pip install x`` or ``venv/bin/python -m pip install x`` writes
    the workspace's site-packages, read-only in the sandbox unless approved."""
    path, words = head.text or "", [w.text or "" for w in c.args]
    if not _VENV_PROGRAM.fullmatch(path):
        return SAFE
    if "python" in path.rsplit("/", 1)[-1]:
        words = words[2:] if words[:2] == ["-m", "pip"] else []
    if words[:1] in (["install"], ["uninstall"]):
        return bad(f"{_INTO_VENV} ({path} {words[0]})")
    return SAFE









