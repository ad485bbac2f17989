"""Inline code: what ``python -c``, ``perl -e``, ``node -e``, ``awk`` and a script fed to an
interpreter on standard input would do, read from the code itself."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tools.base import Danger
from tools.shell_policy.code import _inline
from tools.shell_policy.names import _canonical
from tools.shell_policy.packages import _pip
from tools.shell_policy.scripts import _from_stdin, _script_file
from tools.shell_policy.verdict import MODERATE, Verdict, _bad, _show, _worse
from tools.shell_policy.walk import _HERE, _Call
from tools.shell_policy.words import _lit, _opts, _Word


@dataclass(frozen=True)
class _Lang:
    code: str  # short options whose value is code
    code_long: tuple[str, ...] = ()
    value: str = ""  # short options that take a value (attached or next)
    value_long: tuple[str, ...] = ()
    attached: str = ""  # short options that swallow the rest of their cluster


_LANGS = {
    "python": _Lang("c", value="mWXQ"),
    "perl": _Lang("eE", attached="iIMmlx0dDC"),
    "ruby": _Lang("e", value="rICEF", attached="ilx0TWK"),
    "node": _Lang("ep", ("--eval", "--print"), "r", ("--require", "--import", "--input-type", "--loader")),
    "php": _Lang("r", value="cdzt"),
    "Rscript": _Lang("e"),
    "osascript": _Lang("e", value="l"),
    "lua": _Lang("e", value="l"),
}


def _interpreter(c: _Call) -> Verdict:
    lang_name = _canonical(c.name)
    lang = _LANGS[lang_name]
    codes: list[tuple[str, _Word | None]] = []
    args, i, script, reads_stdin = c.args, 0, None, False
    while i < len(args):
        word, text = args[i], args[i].text
        nxt = args[i + 1] if i + 1 < len(args) else None
        if text is None or not text.startswith("-") or text == "-" or text == "--":
            script = nxt if text == "--" else word
            reads_stdin = text == "-" or (text == "--" and nxt is None)
            break
        name, eq, value = text.partition("=")
        if text.startswith("--"):
            if name in lang.code_long:
                codes.append((name, _lit(value) if eq else nxt))
            i += 1 if (name in lang.code_long or name in lang.value_long) and not eq else 0
        else:
            for j, letter in enumerate(text[1:], 1):
                rest = text[j + 1 :]
                if lang_name == "python" and letter == "m":
                    module = rest or (nxt.text if nxt else "")
                    tail = args[i + (1 if rest else 2) :]
                    return _pip(_Call(f"{c.name} -m pip", tail, c.stdin, c.scan)) if module == "pip" else MODERATE
                if letter in lang.code or letter in lang.value:
                    if letter in lang.code:
                        codes.append(("-" + letter, _lit(rest) if rest else nxt))
                    i += 0 if rest else 1
                    break
                if letter in lang.attached:
                    break
        i += 1
    if codes:
        dynamic = [flag for flag, code in codes if code is None or code.text is None]
        if dynamic:
            return _bad(f"runs code built at run time ({c.name} {dynamic[0]})")
        text = "\n".join(code.text or "" for _, code in codes if code is not None)
        return _inline(f"{c.name} {codes[0][0]}", text, lang_name)
    if script is not None and not reads_stdin:
        if script.text is None and (script.procsub or not _HERE.match(script.raw)):
            return _bad(f"runs a script built at run time ({c.name} {script.show})")
        return _script_file(c, script, f"{c.name} {script.show}", lambda code, via: _inline(via, code, lang_name),
                            shell=False)
    return _from_stdin(c, "an interpreter", lambda code, via: _inline(via, code, lang_name), shell=False)


def _deno(c: _Call) -> Verdict:
    o = _opts(c.args)
    sub = o.texts()[:1]
    if sub == ["eval"] and len(o.pos) > 1:
        code = o.pos[1]
        return _inline("deno eval", code.text, "node") if code.text is not None else _bad(
            "runs code built at run time (deno eval)")
    if sub == ["run"] and any(re.match(r"https?://", t) for t in o.texts()[1:2]):
        return _bad(f"runs code from the network (deno run {o.pos[1].show})")
    return MODERATE


def _awk(c: _Call) -> Verdict:
    o = _opts(c.args, "Fvf", ("--field-separator", "--assign", "--file"))
    if o.has("-f", "--file") or not o.pos:
        return MODERATE
    program = o.pos[0].text or ""
    match = re.search(r"system\s*\(|\|\s*getline|\|&|print[^;}]*\|\s*\"", program)
    if match:
        return _bad(f"runs commands from awk code ({c.name}: {_show(match.group(0))})")
    match = re.search(r">>?\s*\"((?:/(?!tmp/|dev/)|~|\.\./)[^\"]*)", program)
    if match:
        return _bad(f"writes outside the workspace ({c.name} > {_show(match.group(1))})")
    return MODERATE


def _perl_in_place(c: _Call) -> Verdict:
    verdict = _interpreter(c)
    in_place = any(re.match(r"-\w*i", w.text or "") and not (w.text or "").startswith("--") for w in c.args)
    if verdict[0] is Danger.DANGEROUS or not in_place:
        return verdict
    files = _opts(c.args, "eE").pos
    return _worse(verdict, c.targets_outside(files, f"{c.name} -i"))
