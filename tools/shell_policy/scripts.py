"""Scripts and code: a shell running a file (``bash x.sh``, ``source x.sh``, ``sh < x.sh``) runs
what the gate can't see, so it asks, and the reason shows the file's first lines when the
workspace is at hand. A script the line itself writes is judged by the text the line puts in
it (``cat > x.sh <<EOF``), and asks when the line downloads it or makes it executable. Inline
code (``python -c``, ``perl -e``, ``node -e``, a heredoc fed to an interpreter) is read for what
it would do: delete, run commands, use the network, or hide itself. Interpreters running a file
(``python3 x.py``) stay MODERATE, the sandbox bounding them, unless the line wrote that file;
a virtualenv's ``bin/activate`` does not ask (its interpreter runs unasked anyway).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from tools.base import Danger
from tools.shell_policy.paths import HERE, is_secret, path_key
from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, SHELLS, Verdict, Word, bad, canonical, lit, opts, shorten, worse

SHOW_LINES = 40
SHOW_CHARS = 2000
_READ_BYTES = 4 * SHOW_CHARS
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "xh", "xhs", "aria2c"})
_VENV_ACTIVATE = re.compile(r"(?:[\w.-]+/)*bin/activate(?:\.\w+)?")
_SYSTEM_BIN = re.compile(r"/(?:usr/(?:local/)?)?s?bin/[^/]+")
_LANGS = frozenset({"python", "perl", "ruby", "node", "php", "Rscript", "lua"})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")

Judge = Callable[[str, str], Verdict]  # (text, via) -> verdict


def script_file(c: Call, script: Word, via: str, judge: Judge, *, shell: bool) -> Verdict:
    """``c`` runs the file ``script`` (a literal path): judged by what this line wrote there, else
    DANGEROUS for a shell (MODERATE for an interpreter)."""
    written = c.scan.written.get(path_key(script) or "")
    if written is not None:
        if written.content is None:
            return bad(f"runs {script.show}, which this command line writes or makes executable "
                        f"({written.how} {script.show})")
        return judge(written.content, via)
    if not shell or (_VENV_ACTIVATE.fullmatch(script.text or "") and not c.outside(script)):
        return MODERATE
    return bad(f"runs the script {script.show}, whose commands the gate can't see ({via}){_shown(c, script)}")


def _shown(c: Call, script: Word) -> str:
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


def from_stdin(c: Call, what: str, judge: Judge, *, shell: bool = True) -> Verdict:
    """A program reading its script from standard input: from a pipe, a file or literal text."""
    stdin = c.stdin
    if stdin is None:
        return MODERATE
    if stdin.kind == "pipe":
        download = " a download" if stdin.show in _DOWNLOADERS else ""
        return bad(f"pipes{download} into {what} ({c.name})")
    if stdin.text is None:
        return bad(f"runs a script built at run time ({c.name} {stdin.show})")
    if stdin.kind == "file":
        return script_file(c, Word(stdin.text, stdin.text), f"{c.name} {stdin.show}", judge, shell=shell)
    return judge(stdin.text, f"{c.name} <<")


def _shell(c: Call) -> Verdict:
    o = opts(c.args, "oO", ("--rcfile", "--init-file"), posix=True)
    for rc in o.values("--rcfile", "--init-file"):  # read by an interactive shell (-i)
        verdict = run_script(c, rc)
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    if o.has("-c"):
        if not o.pos:
            return MODERATE
        return c.joined(o.pos[:1], f"{c.name} -c")
    if o.has("-s") or not o.pos or o.pos[0].text == "-":
        return from_stdin(c, "a shell", c.nested)
    return run_script(c, o.pos[0])


def run_script(c: Call, script: Word) -> Verdict:
    if script.text is None:
        return bad(f"runs a script built at run time ({c.name} {script.show})")
    return script_file(c, script, f"{c.name} {script.show}", c.nested, shell=True)


def by_path(c: Call, head: Word) -> Verdict:
    """A program named by a path: a script this line wrote or made executable is judged as one;
    any other outside the system's directories is not SAFE (``./git status`` runs ``./git``)."""
    path = head.text or ""
    if "/" not in path or _SYSTEM_BIN.fullmatch(path):
        return SAFE
    if path_key(head) in c.scan.written:
        return script_file(c, head, path, _by_shebang(c), shell=True)
    return MODERATE


def _by_shebang(c: Call) -> Judge:
    """Text run as a program: by the interpreter its ``#!`` line names, else as shell."""

    def judge(text: str, via: str) -> Verdict:
        words = text.split("\n", 1)[0][2:].split() if text.startswith("#!") else []
        if words and os.path.basename(words[0]) == "env":
            words = [w for w in words[1:] if not w.startswith("-")]
        lang = canonical(os.path.basename(words[0])) if words else "sh"
        if lang in SHELLS:
            return c.nested(text, via)
        return inline_code(via, text, lang) if lang in _LANGS else bad(f"runs a script the gate can't read ({via})")

    return judge


_CODE_RISKS: list[tuple[str, re.Pattern[str], frozenset[str] | None]] = [
    ("deletes files", re.compile(
        r"rmtree|(?<![\w.])remove\s*\(|os\.remove|\.unlink\s*\(|\bunlink\b|\brmdir\b|removedirs|\brm\s+-"
        r"|\btruncate\b|\bfs\.rm|rmSync|unlinkSync|rimraf|FileUtils\.rm|File\.delete|Deno\.remove"), None),
    ("runs commands", re.compile(
        r"os\.system|subprocess|child_process|\bspawn\w*|\bpopen\w*|\bexecSync|\bexecFile|os\.exec\w*"
        r"|\bsystem\s*\(|\bsystem\s+['\"]|shell_exec|passthru|proc_open|Deno\.(?:run|Command)|Bun\.spawn"
        r"|\bpty\b|commands\.getoutput"), None),
    ("runs commands", re.compile(r"`|\bqx\s*[^\w\s]|%x[\W]"), frozenset({"perl", "ruby", "php"})),
    ("uses the network", re.compile(
        r"\bsocket|urllib|\brequests\b|http\.client|httpx|aiohttp|\bfetch\s*\(|\bnet\.|\bhttps?\.(?:get|request)"
        r"|XMLHttpRequest|LWP|IO::Socket|Net::|smtplib|ftplib|paramiko|websocket|https?://|open-uri|curl_"), None),
    ("changes permissions", re.compile(r"chmod|chown|\bset[ug]id"), None),
    ("can't be seen through", re.compile(
        r"(?<![\w.])eval\b|(?<![\w.])exec\s*\(|__import__|getattr\s*\([^)]*['\"]|base64|b64decode|atob\s*\("
        r"|(?<![\w.])compile\s*\(|importlib|\bmarshal\b|pickle\.loads|fromCharCode|\bFunction\s*\("
        r"|codecs\.decode|\\x[0-9a-fA-F]{2}|bytes\.fromhex|\brequire\s*\(\s*[^'\"\s)]|\bglobals\s*\(\)"
        r"|\bsetattr\b|ctypes|\bpack\s*\("), None),
]
_CODE_OUTSIDE_PATH = re.compile(r"""['"](?:/(?!tmp/|dev/null)|~|\.\./)[^'"]*""")
_CODE_WRITES = re.compile(
    r"""['"][wax]b?\+?['"]|\bwrite|mkdir|makedirs|rename|symlink|copy|\bmove|appendFile"""
    r"""|open\s*\(\s*[A-Z_]*\s*,\s*['"]?[>+]"""
)


_CODE_PERSISTS = re.compile(
    r"""['"][^'"]*(?:\.git/(?:hooks|config)|\.(?:bashrc|bash_profile|profile|zshrc|zshenv|zprofile|envrc)\b)[^'"]*"""
)


def inline_code(label: str, code: str, lang: str) -> Verdict:
    for phrase, pattern, langs in _CODE_RISKS:
        if langs is not None and lang not in langs:
            continue
        match = pattern.search(code)
        if match:
            return bad(f"runs inline code that {phrase} ({label}: {shorten(match.group(0))})")
    path = _CODE_OUTSIDE_PATH.search(code)
    if path and _CODE_WRITES.search(code):
        return bad(f"runs inline code that writes outside the workspace ({label}: {shorten(path.group(0))})")
    for literal in re.findall(r"""['"]([~/][^'"\s]*)['"]""", code):
        if is_secret(lit(literal)):
            return bad(f"runs inline code that reads a secret file ({label}: {shorten(literal)})")
    path = _CODE_PERSISTS.search(code)
    if path and _CODE_WRITES.search(code):
        return bad(f"runs inline code that writes where code runs later ({label}: {shorten(path.group(0))})")
    return MODERATE


# How each interpreter is given code: short and long options whose value is code, short and long
# options that take another value, short options that swallow the rest of their cluster.
_CODE_OPTIONS: dict[str, tuple[str, tuple[str, ...], str, tuple[str, ...], str]] = {
    "python": ("c", (), "mWXQ", (), ""), "perl": ("eE", (), "", (), "iIMmlx0dDC"),
    "ruby": ("e", (), "rICEF", (), "ilx0TWK"), "php": ("r", (), "cdzt", (), ""), "Rscript": ("e", (), "", (), ""),
    "node": ("ep", ("--eval", "--print"), "r", ("--require", "--import", "--input-type", "--loader"), ""),
    **dict.fromkeys(("osascript", "lua"), ("e", (), "l", (), "")),
}


def _interpreter(c: Call) -> Verdict:
    lang = canonical(c.name)
    code, code_long, value, value_long, attached = _CODE_OPTIONS[lang]
    o = opts(c.args, code + value, (*code_long, *value_long), optional=attached, posix=True)
    if lang == "python" and o.has("-m"):
        return c.run([lit("pip"), *o.pos], stdin=c.stdin) if o.values("-m")[:1] == [lit("pip")] else MODERATE
    codes = [(flag, word) for flag, word in o.flags if flag in code_long or len(flag) == 2 and flag[1] in code]
    judge: Judge = lambda text, via: inline_code(via, text, lang)
    if codes:
        dynamic = [flag for flag, word in codes if word is None or word.text is None]
        if dynamic:
            return bad(f"runs code built at run time ({c.name} {dynamic[0]})")
        return judge("\n".join(word.text or "" for _, word in codes if word is not None), f"{c.name} {codes[0][0]}")
    script = o.pos[0] if o.pos else None
    if script is not None and script.text != "-":
        if script.text is None and (script.procsub or not HERE.match(script.raw)):
            return bad(f"runs a script built at run time ({c.name} {script.show})")
        return script_file(c, script, f"{c.name} {script.show}", judge, shell=False)
    return from_stdin(c, "an interpreter", judge, shell=False)


def _deno(c: Call) -> Verdict:
    o = opts(c.args)
    sub = o.texts()[:1]
    if sub == ["eval"] and len(o.pos) > 1:
        code = o.pos[1]
        return inline_code("deno eval", code.text, "node") if code.text is not None else bad(
            "runs code built at run time (deno eval)")
    if sub == ["run"] and any(re.match(r"https?://", t) for t in o.texts()[1:2]):
        return bad(f"runs code from the network (deno run {o.pos[1].show})")
    return MODERATE


def _perl_in_place(c: Call) -> Verdict:
    verdict = _interpreter(c)
    in_place = any(re.match(r"-\w*i", w.text or "") and not (w.text or "").startswith("--") for w in c.args)
    if verdict[0] is Danger.DANGEROUS or not in_place:
        return verdict
    files = opts(c.args, "eE").pos
    return worse(verdict, c.targets_outside(files, f"{c.name} -i"))


# The programs this module judges, by name (``table.py`` gathers them).
RULES: dict[str, Callable[[Call], Verdict]] = {
    **dict.fromkeys(SHELLS, _shell),
    **dict.fromkeys(("source", "."), lambda c: run_script(c, c.args[0]) if c.args else MODERATE),
    **dict.fromkeys(("python", "ruby", "node", "php", "Rscript", "osascript", "lua"), _interpreter),
    "perl": _perl_in_place, "deno": _deno,
}
