"""Scripts: a shell running a file (``bash x.sh``, ``source x.sh``, ``sh < x.sh``) runs what the
gate can't see, so it asks, and the reason shows the file's first lines when the workspace is at
hand (the file as it is when the model asks; nothing else of the task runs until the person
answers). A script the line itself writes is judged by the text the line puts in it (``cat > x.sh
<<EOF``), and asks when the line downloads it or makes it executable (``curl -o i.sh``, ``chmod +x
x.sh && ./x.sh``). Interpreters running a file (``python3 x.py``) stay MODERATE, the sandbox
bounding them, unless the line wrote that file. A virtualenv's ``bin/activate`` does not ask: its
interpreter, right next to it, runs unasked anyway.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from tools.base import Danger
from tools.shell_policy.code import _inline
from tools.shell_policy.names import _canonical
from tools.shell_policy.stdin import _key
from tools.shell_policy.verdict import MODERATE, SAFE, Verdict, _bad
from tools.shell_policy.walk import _Call
from tools.shell_policy.words import _opts, _Word

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "csh", "tcsh"})
SHOW_LINES = 40
SHOW_CHARS = 2000
_READ_BYTES = 4 * SHOW_CHARS
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "xh", "xhs", "aria2c"})
_VENV_ACTIVATE = re.compile(r"(?:[\w.-]+/)*bin/activate(?:\.\w+)?")
_SYSTEM_BIN = re.compile(r"/(?:usr/(?:local/)?)?s?bin/[^/]+")
_LANGS = frozenset({"python", "perl", "ruby", "node", "php", "Rscript", "lua"})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")

Judge = Callable[[str, str], Verdict]  # (text, via) -> verdict


def _script_file(c: _Call, script: _Word, via: str, judge: Judge, *, shell: bool) -> Verdict:
    """``c`` runs the file ``script`` (a literal path): judged by what this line wrote there, else
    DANGEROUS for a shell (MODERATE for an interpreter)."""
    written = c.scan.written.get(_key(script) or "")
    if written is not None:
        if written.content is None:
            return _bad(f"runs {script.show}, which this command line writes or makes executable "
                        f"({written.how} {script.show})")
        return judge(written.content, via)
    if not shell or (_VENV_ACTIVATE.fullmatch(script.text or "") and not c.outside(script)):
        return MODERATE
    return _bad(f"runs the script {script.show}, whose commands the gate can't see ({via}){_shown(c, script)}")


def _shown(c: _Call, script: _Word) -> str:
    """The script's first lines, for the person asked, when the workspace is at hand."""
    workspace = c.scan.workspace
    if workspace is None or c.scan.moved or script.text is None:
        return ""
    head = _head(workspace, script.text)
    return "" if head is None else f"; {script.show} as it is now{head}"


def _head(workspace: Path, path: str) -> str | None:
    """Up to SHOW_LINES lines / SHOW_CHARS characters of a regular file inside the workspace."""
    try:
        root = workspace.resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            return None
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = os.read(fd, _READ_BYTES + 1)
        finally:
            os.close(fd)
    except (OSError, ValueError, RuntimeError):
        return None
    if b"\x00" in data:
        return " (binary, not shown)"
    text = _CONTROL.sub("?", data[:_READ_BYTES].decode("utf-8", "replace"))
    lines = text.splitlines()
    shown = "\n".join(lines[:SHOW_LINES])[:SHOW_CHARS]
    whole = len(data) <= _READ_BYTES and len(lines) <= SHOW_LINES and len(shown) == len("\n".join(lines))
    return (" (all of it):" if whole else f" (its first {shown.count(chr(10)) + 1} lines):") + "\n" + shown


def _from_stdin(c: _Call, what: str, judge: Judge, *, shell: bool = True) -> Verdict:
    """A program reading its script from standard input: from a pipe, a file or literal text."""
    stdin = c.stdin
    if stdin is None:
        return MODERATE
    if stdin.kind == "pipe":
        download = " a download" if stdin.show in _DOWNLOADERS else ""
        return _bad(f"pipes{download} into {what} ({c.name})")
    if stdin.text is None:
        return _bad(f"runs a script built at run time ({c.name} {stdin.show})")
    if stdin.kind == "file":
        return _script_file(c, _Word(stdin.text, stdin.text), f"{c.name} {stdin.show}", judge, shell=shell)
    return judge(stdin.text, f"{c.name} <<")


def _shell(c: _Call) -> Verdict:
    o = _opts(c.args, "oO", ("--rcfile", "--init-file"), posix=True)
    for rc in o.values("--rcfile", "--init-file"):  # read by an interactive shell (-i)
        verdict = _run_script(c, rc)
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    if o.has("-c"):
        if not o.pos:
            return MODERATE
        return c.joined(o.pos[:1], f"{c.name} -c")
    if o.has("-s") or not o.pos or o.pos[0].text == "-":
        return _from_stdin(c, "a shell", c.nested)
    return _run_script(c, o.pos[0])


def _source(c: _Call) -> Verdict:
    return _run_script(c, c.args[0]) if c.args else MODERATE


def _run_script(c: _Call, script: _Word) -> Verdict:
    if script.text is None:
        return _bad(f"runs a script built at run time ({c.name} {script.show})")
    return _script_file(c, script, f"{c.name} {script.show}", c.nested, shell=True)


def _by_path(c: _Call, head: _Word) -> Verdict:
    """A program named by a path: a script this line wrote or made executable is judged as one;
    any other outside the system's directories is not SAFE (``./git status`` runs ``./git``)."""
    path = head.text or ""
    if "/" not in path or _SYSTEM_BIN.fullmatch(path):
        return SAFE
    if _key(head) in c.scan.written:
        return _script_file(c, head, path, _by_shebang(c), shell=True)
    return MODERATE


def _by_shebang(c: _Call) -> Judge:
    """Text run as a program: by the interpreter its ``#!`` line names, else as shell."""

    def judge(text: str, via: str) -> Verdict:
        words = text.split("\n", 1)[0][2:].split() if text.startswith("#!") else []
        if words and os.path.basename(words[0]) == "env":
            words = [w for w in words[1:] if not w.startswith("-")]
        lang = _canonical(os.path.basename(words[0])) if words else "sh"
        if lang in SHELLS:
            return c.nested(text, via)
        return _inline(via, text, lang) if lang in _LANGS else _bad(f"runs a script the gate can't read ({via})")

    return judge


def _runs_input(c: _Call, words: list[_Word], via: str, placeholder: str | None) -> Verdict | None:
    """What xargs or find -exec runs when its input becomes code: ``xargs -I{} sh -c '{}'``,
    ``xargs -I{} {}``, ``xargs bash`` (each input a script). None when it does not."""
    head = words[0].text if words else None
    if head is None:
        return None
    if placeholder and placeholder in head:
        return _bad(f"runs what it reads as commands ({via} {words[0].show})")
    if os.path.basename(head) not in SHELLS:
        return None
    o = _opts(words[1:], "oO", ("--rcfile", "--init-file"), posix=True)
    if not o.has("-c"):
        scripts = "".join(" " + w.show for w in o.pos[:1])
        return _bad(f"runs the scripts it finds ({via} {words[0].show}{scripts})")
    code = o.pos[0].text if o.pos else None
    if placeholder and (code is None or placeholder in code):
        return _bad(f"runs what it reads as shell code ({via} {words[0].show} -c {o.pos[0].show})")
    return None
