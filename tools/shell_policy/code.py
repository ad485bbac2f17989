"""Code in a line: what a snippet of Python, Perl, Ruby, JavaScript, PHP, R or Lua would do, read from
the code itself (``python -c``, a heredoc fed to an interpreter, a script the line writes and runs)."""

from __future__ import annotations

import re

from tools.shell_policy.paths import _secret
from tools.shell_policy.verdict import MODERATE, Verdict, _bad, _show
from tools.shell_policy.words import _lit

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


def _inline(label: str, code: str, lang: str) -> Verdict:
    for phrase, pattern, langs in _CODE_RISKS:
        if langs is not None and lang not in langs:
            continue
        match = pattern.search(code)
        if match:
            return _bad(f"runs inline code that {phrase} ({label}: {_show(match.group(0))})")
    path = _CODE_OUTSIDE_PATH.search(code)
    if path and _CODE_WRITES.search(code):
        return _bad(f"runs inline code that writes outside the workspace ({label}: {_show(path.group(0))})")
    for literal in re.findall(r"""['"]([~/][^'"\s]*)['"]""", code):
        if _secret(_lit(literal)):
            return _bad(f"runs inline code that reads a secret file ({label}: {_show(literal)})")
    path = _CODE_PERSISTS.search(code)
    if path and _CODE_WRITES.search(code):
        return _bad(f"runs inline code that writes where code runs later ({label}: {_show(path.group(0))})")
    return MODERATE
