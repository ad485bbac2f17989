"""Scripts and code. A shell running a file (``bash x.sh``, ``source x.sh``, ``sh < x.sh``) asks, the
reason showing the file's first lines when the workspace is at hand; a script the line writes is judged
by the text it puts there (``cat > x.sh <<EOF``), and asks when the line downloads it or makes it
executable. Inline code (``python -c``, ``perl -e``, ``node -e``, a heredoc fed to an interpreter) is read
for what it would do: delete, run commands, use the network, or hide itself. An interpreter running a
file (``python3 x.py``) is MODERATE, the sandbox bounding it, unless the line wrote that file; so is a
virtualenv's ``bin/activate`` (its interpreter runs unasked anyway).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable

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
    """``c`` runs the file ``script``: judged by what this line wrote there, else DANGEROUS for a shell
    (MODERATE for an interpreter, unless its path is built at run time)."""
    if script.text is None and (shell or script.procsub or not HERE.match(script.raw)):
        return bad(f"runs a script built at run time ({via})")
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
    """For the person asked, the script's first lines (up to SHOW_LINES lines, SHOW_CHARS characters):
    a regular file inside the workspace, when that is at hand and before any ``cd``."""
    if c.scan.workspace is None or c.scan.moved or script.text is None:
        return ""
    try:
        root = c.scan.workspace.resolve()
        target = (root / script.text).resolve()
        if not target.is_relative_to(root):
            return ""
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
            data = os.read(fd, _READ_BYTES + 1)
        finally:
            os.close(fd)
    except (OSError, ValueError, RuntimeError):
        return ""
    if b"\x00" in data:
        return f"; {script.show} as it is now (binary, not shown)"
    lines = _CONTROL.sub("?", data[:_READ_BYTES].decode("utf-8", "replace")).splitlines()
    shown = "\n".join(lines[:SHOW_LINES])[:SHOW_CHARS]
    whole = len(data) <= _READ_BYTES and shown == "\n".join(lines)
    how = "all of it" if whole else f"its first {shown.count(chr(10)) + 1} lines"
    return f"; {script.show} as it is now ({how}):\n{shown}"


def from_stdin(c: Call, judge: Judge, *, shell: bool = True) -> Verdict:
    """A shell or interpreter reading its script from standard input: from a pipe, a file or literal text."""
    stdin = c.stdin
    if stdin is None:
        return MODERATE
    if stdin.kind == "pipe":
        download = " a download" if stdin.show in _DOWNLOADERS else ""
        return bad(f"pipes{download} into {'a shell' if shell else 'an interpreter'} ({c.name})")
    if stdin.text is None:
        return bad(f"runs a script built at run time ({c.name} {stdin.show})")
    if stdin.kind == "file":
        return script_file(c, lit(stdin.text), f"{c.name} {stdin.show}", judge, shell=shell)
    return judge(stdin.text, f"{c.name} <<")


def _shell(c: Call) -> Verdict:
    o = opts(c.args, "oO", ("--rcfile", "--init-file"), posix=True)
    for rc in o.values("--rcfile", "--init-file"):  # read by an interactive shell (-i)
        verdict = run_script(c, rc)
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    if o.has("-c"):
        return c.joined(o.pos[:1], f"{c.name} -c") if o.pos else MODERATE
    if o.has("-s") or not o.pos or o.pos[0].text == "-":
        return from_stdin(c, c.nested)
    return run_script(c, o.pos[0])


def run_script(c: Call, script: Word) -> Verdict:
    """A shell running the file ``script`` (``bash x.sh``, ``source x.sh``)."""
    return script_file(c, script, f"{c.name} {script.show}", c.nested, shell=True)


def by_path(c: Call, head: Word) -> Verdict:
    """A program named by a path: a script this line wrote or made executable is judged as one;
    any other outside the system's directories is not SAFE (``./git status`` runs ``./git``)."""
    path = head.text or ""
    if "/" not in path or _SYSTEM_BIN.fullmatch(path):
        return SAFE
    return script_file(c, head, path, _by_shebang(c), shell=True) if path_key(head) in c.scan.written else MODERATE


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
        match = pattern.search(code) if langs is None or lang in langs else None
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
    """Inline code is read for what it does; a script by what this line wrote there; else standard input."""
    lang = canonical(c.name)
    code, code_long, value, value_long, attached = _CODE_OPTIONS[lang]
    o = opts(c.args, code + value, (*code_long, *value_long), optional=attached, posix=True)
    if lang == "python" and o.has("-m"):
        return c.run([lit("pip"), *o.pos], stdin=c.stdin) if o.values("-m")[:1] == [lit("pip")] else MODERATE
    codes = [(flag, word) for flag, word in o.flags if flag in code_long or len(flag) == 2 and flag[1] in code]
    dynamic = [flag for flag, word in codes if word is None or word.text is None]
    if dynamic:
        return bad(f"runs code built at run time ({c.name} {dynamic[0]})")
    if codes:
        text = "\n".join(word.text or "" for _, word in codes if word is not None)
        return inline_code(f"{c.name} {codes[0][0]}", text, lang)
    judge: Judge = lambda text, via: inline_code(via, text, lang)
    if o.pos and o.pos[0].text != "-":
        return script_file(c, o.pos[0], f"{c.name} {o.pos[0].show}", judge, shell=False)
    return from_stdin(c, judge, shell=False)


def _deno(c: Call) -> Verdict:
    """``deno eval CODE`` is read as JavaScript; ``deno run URL`` runs code from the network."""
    words = opts(c.args).pos
    sub, target = [w.text for w in words[:1]], words[1] if len(words) > 1 else lit("")
    if sub == ["eval"] and target.text is None:
        return bad("runs code built at run time (deno eval)")
    if sub == ["eval"] and target.text:
        return inline_code("deno eval", target.text, "node")
    if sub == ["run"] and re.match(r"https?://", target.text or ""):
        return bad(f"runs code from the network (deno run {target.show})")
    return MODERATE


def _perl(c: Call) -> Verdict:
    """``perl -i`` (``-pi``, ``-i.bak``) edits the files it is given."""
    verdict = _interpreter(c)
    if verdict[0] is Danger.DANGEROUS or not any(re.match(r"-\w*i", w.text or "") for w in c.args):
        return verdict
    return worse(verdict, c.targets_outside(opts(c.args, "eE").pos, f"{c.name} -i"))


# The programs this module judges, by name (``table.py`` gathers them).
RULES: dict[str, Callable[[Call], Verdict]] = {
    **dict.fromkeys(SHELLS, _shell),
    **dict.fromkeys(("source", "."), lambda c: run_script(c, c.args[0]) if c.args else MODERATE),
    **dict.fromkeys(("python", "ruby", "node", "php", "Rscript", "osascript", "lua"), _interpreter),
    "perl": _perl, "deno": _deno,
}
