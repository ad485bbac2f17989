"""Packages: installing or removing system packages, installing outside the workspace or globally
(``pip install --user``, ``npm install -g``), and publishing (``npm publish``, ``twine upload``...)."""

from __future__ import annotations

import re

from tools.base import Danger
from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad, opts

_PACKAGE_VERBS = frozenset(
    """install remove purge erase uninstall upgrade dist-upgrade full-upgrade autoremove reinstall add del
    refresh downgrade""".split()
)


def _packages(c: Call) -> Verdict:
    o = opts(c.args, "o", ("--option",))
    words = o.texts()
    verbs = set(words) & (_PACKAGE_VERBS | ({"update"} if c.name in ("yum", "dnf", "zypper", "flatpak") else set()))
    if c.name in ("pacman", "yay", "paru"):
        first = next((w.text or "" for w in c.args if (w.text or "").startswith("-")), "")
        if re.match(r"-[RU]", first) or (first.startswith("-S") and not re.search(r"[silgp]", first[2:])):
            verbs.add(first)
    if c.name in ("dpkg", "rpm", "nix-env"):
        risky = ("-i", "-r", "-P", "-U", "-e", "-F", "--install", "--remove", "--purge", "--erase", "--upgrade",
                 "--uninstall", "--set")
        verbs |= {name for name, _ in o.flags if name in risky}
    if c.name == "emerge" and words:
        verbs.add(words[0])
    if verbs:
        return bad(f"installs or removes system packages ({c.name} {sorted(verbs)[0]})")
    return MODERATE


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


_PUBLISH = {
    "yarn": (("publish",), ("npm", "publish")), "pnpm": (("publish",),), "twine": (("upload",),),
    "cargo": (("publish",),), "gem": (("push",),), "poetry": (("publish",),), "flit": (("publish",),),
    "hatch": (("publish",),), "lerna": (("publish",),), "dotnet": (("nuget", "push"),), "nuget": (("push",),),
    "vsce": (("publish",),), "ovsx": (("publish",),), "changeset": (("publish",),),
}


def _publisher(c: Call) -> Verdict:
    o = opts(c.args)
    words = o.texts()
    for verb in _PUBLISH.get(c.name, ()):
        if tuple(words[: len(verb)]) == verb:
            return bad(f"publishes a package ({c.name} {' '.join(verb)})")
    globally = o.has("-g", "--global") or any(n == "--location" and v and v.text == "global" for n, v in o.flags)
    if c.name == "yarn" and words[:1] == ["global"] or globally and words[:1] and words[0] in (
            "install", "i", "add", "uninstall", "remove", "rm", "update", "link"):
        verb = " ".join(words[:2]) if words[:1] == ["global"] else f"{' '.join(words[:1])} -g"
        return bad(f"installs packages globally ({c.name} {verb})")
    return MODERATE


def _npm(c: Call) -> Verdict:
    words = opts(c.args).texts()
    if words[:1] in (["publish"], ["unpublish"]):
        return bad(f"publishes a package (npm {words[0]})")
    if words[:1] in (["deprecate"], ["owner"], ["dist-tag"], ["access"]) and len(words) > 1:
        return bad(f"changes a published package (npm {words[0]})")
    verdict = _publisher(c)
    if verdict[0] is Danger.DANGEROUS:
        return verdict
    return SAFE if words[:1] in (["ls"], ["list"], ["view"], ["info"], ["outdated"], ["explain"], ["why"]) else verdict


def _mvn(c: Call) -> Verdict:
    goals = opts(c.args, "fPDslbTe", ("--file", "--activate-profiles", "--settings", "--threads")).texts()
    if any(g == "deploy" or g.startswith("deploy:") or g.endswith(":deploy") for g in goals):
        return bad(f"publishes a package ({c.name} deploy)")
    return MODERATE


def _gradle(c: Call) -> Verdict:
    tasks = opts(c.args, "pPDxb", ("--project-dir", "--exclude-task", "--build-file", "--settings-file")).texts()
    for task in tasks:
        name = task.rsplit(":", 1)[-1]
        if name.startswith("publish") and name != "publishToMavenLocal":
            return bad(f"publishes a package ({c.name} {name})")
    return MODERATE
