"""Writes: the programs that write files named in their arguments (``cp``, ``tee``, ``dd of=``,
``sed -i``, ``tar -C``, ``sort -o``...), DANGEROUS when one is outside the workspace; and the
read-only tools whose options may write or run something."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable

from tools.base import Danger
from tools.shell_policy.accounts import _keeps_mode, _modes
from tools.shell_policy.paths import _persists
from tools.shell_policy.verdict import MODERATE, SAFE, Verdict, _bad, _worse
from tools.shell_policy.walk import _Call, _sink
from tools.shell_policy.words import _lit, _opts, _Word


def _copy_like(short: str = "") -> Callable[[_Call], Verdict]:
    """cp, mv, install, ln: the last operand (or -t DIR) is written; mv also removes its sources.
    Emptying or destroying asks (``cp /dev/null f``, ``mv f /dev/null``, ``ln -sf /dev/null f``), as
    does a link out of the workspace or a copy that keeps an outside file's mode (``accounts.py``)."""

    def rule(c: _Call) -> Verdict:
        o = _opts(c.args, "tS" + short, ("--target-directory", "--suffix", "--mode", "--owner", "--group"))
        directories = o.values("-t", "--target-directory")
        if c.name == "mv":
            targets = o.pos + directories
        elif directories or (c.name == "install" and o.has("-d")):
            targets = directories or o.pos
        else:
            targets = o.pos[-1:] if len(o.pos) >= 2 else []
        verdict = c.targets_outside(targets, c.name)
        sources = [w for w in o.pos if w not in targets] if not directories else o.pos
        if verdict[0] is Danger.DANGEROUS:
            return verdict
        if c.name == "mv" and o.pos[-1:] and _sink(o.pos[-1]):
            return _bad(f"destroys files (mv ... {o.pos[-1].show})")
        if c.name in ("cp", "ln", "install") and any(w.text == "/dev/null" for w in sources) and targets:
            return _bad(f"empties or replaces a file ({c.name} /dev/null {targets[0].show})")
        if c.name == "ln" or c.name == "cp" and o.has("-s", "-l", "--symbolic-link", "--link"):
            return _link(c, sources, targets[0] if targets else None, o.has("-s", "--symbolic", "--symbolic-link"))
        if c.name == "install":
            if o.has("-o", "-g", "--owner", "--group"):
                return _bad("changes owners (install -o)")
            return _modes(c, o.values("-m", "--mode"))
        return _keeps_mode(c, sources) if c.name == "cp" else verdict

    return rule


def _link(c: _Call, sources: list[_Word], link: _Word | None, symbolic: bool) -> Verdict:
    """A link to an outside path makes later reads and writes of an inside path reach it."""
    for source in sources:
        text = source.text
        if symbolic and text and not text.startswith(("/", "~")) and link is not None and link.text:
            base = link.text if link.text.endswith("/") else posixpath.dirname(link.text)
            text = posixpath.normpath(posixpath.join(base or ".", text))  # relative to the link
        if c.outside(source if text is None else _Word(text, source.raw)):
            return _bad(f"links to a path outside the workspace ({c.name} {source.show})")
        if text and _persists(_Word(text, source.raw), c.scan.cwd):  # ln -s .git g; echo x > g/hooks/x
            return _bad(f"links to a place where code runs later ({c.name} {source.show})")
    return MODERATE


def _all_operands(short: str = "", long: Iterable[str] = (), read_only: Iterable[str] = ()) -> Callable[
        [_Call], Verdict]:
    """touch, mkdir, truncate, gzip: every operand is written (unless a ``read_only`` flag is given)."""

    def rule(c: _Call) -> Verdict:
        o = _opts(c.args, short, long)
        if read_only and o.has(*read_only):
            return MODERATE
        return c.targets_outside(o.pos, c.name)

    return rule


def _tee(c: _Call) -> Verdict:
    o = _opts(c.args, long=("--output-error",))
    verdict = c.targets_outside(o.pos, "tee")
    return verdict if verdict[0] is Danger.DANGEROUS or any(not _sink(w) for w in o.pos) else SAFE


def _dd(c: _Call) -> Verdict:
    texts = [w.text or "" for w in c.args]
    for w in c.args:
        if w.text is not None and w.text.startswith("of="):
            target = _Word(w.text[3:], w.raw[3:])
            if target.text and target.text.startswith("/dev/") and not _sink(target):
                return _bad(f"changes disks or filesystems (dd of={target.show})")
            verdict = c.targets_outside([target], "dd of=")
            if verdict[0] is not Danger.DANGEROUS and "if=/dev/null" in texts and not _sink(target):
                return _bad(f"empties a file (dd if=/dev/null of={target.show})")
            if verdict[0] is not Danger.DANGEROUS and any("notrunc" in t for t in texts if t.startswith("conv=")):
                return _bad(f"overwrites a file in place (dd of={target.show} conv=notrunc)")
            return verdict
        if w.text is None and w.raw.startswith("of="):
            return _bad(f"writes outside the workspace (dd {w.show})")
    return MODERATE


def _truncate(c: _Call) -> Verdict:
    """Any size: it cuts a file's end off, or empties it."""
    o = _opts(c.args, "sr", ("--size", "--reference"))
    verdict = c.targets_outside(o.pos, "truncate")
    if verdict[0] is Danger.DANGEROUS or not o.pos:
        return verdict
    return _bad(f"cuts or empties files (truncate {o.pos[0].show})")


def _mkdir(c: _Call) -> Verdict:
    o = _opts(c.args, "m", ("--mode", "--context"))
    verdict = c.targets_outside(o.pos, c.name)
    return verdict if verdict[0] is Danger.DANGEROUS else _modes(c, o.values("-m", "--mode"))


_SED_WRITES = re.compile(r"(?:^|[;{}\n/!\d$gpIiMm])\s*[wWe](?:\s|$|;)|\bs(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1[gpIiMm\d]*[ewW]")


def _sed(c: _Call) -> Verdict:
    o = _opts(c.args, "efl", ("--expression", "--file", "--line-length"), optional="i")
    scripts = o.values("-e", "--expression")
    files = o.pos if scripts or o.has("-f", "--file") else o.pos[1:]
    if not scripts and not o.has("-f", "--file") and o.pos:
        scripts = o.pos[:1]
    if o.has("-i", "--in-place"):
        return c.targets_outside(files, "sed -i")
    if o.has("-f", "--file") or any(s.text is None or _SED_WRITES.search(s.text) for s in scripts):
        return MODERATE
    return SAFE


def _tar(c: _Call) -> Verdict:
    args = list(c.args)
    if args and args[0].text and re.fullmatch(r"[A-Za-z]+", args[0].text):
        args[0] = _lit("-" + args[0].text)  # old style: tar xzf a.tgz
    long = ("--file", "--directory", "--files-from", "--exclude-from", "--use-compress-program")
    o = _opts(args, "fCTXbHKLNVgI", long)
    extracting = o.has("-x", "--extract", "--get")
    creating = o.has("-c", "-r", "-u", "-A", "--create", "--append", "--update", "--concatenate")
    if extracting and o.has("-P", "--absolute-names"):
        return _bad("writes outside the workspace (tar -P)")
    if o.has("--remove-files"):
        return _bad("deletes the files it archives (tar --remove-files)")
    targets = o.values("-C", "--directory") if extracting else []
    targets += o.values("-f", "--file") if creating else []
    return c.targets_outside(targets, "tar -C" if extracting else "tar -f")


def _unzip(c: _Call) -> Verdict:
    return c.targets_outside(_opts(c.args, "dxP").values("-d"), "unzip -d")


def _seven_zip(c: _Call) -> Verdict:
    if any(w.text == "-sdel" for w in c.args):
        return _bad("deletes the files it archives (7z -sdel)")
    targets = [_Word(w.text[2:], w.raw[2:]) for w in c.args if w.text and w.text.startswith("-o")]
    return c.targets_outside(targets, "7z -o")


def _zip(c: _Call) -> Verdict:
    o = _opts(c.args, "bnPtx", ("--password",))
    if o.has("-m", "--move"):
        return _bad(f"deletes the files it archives ({c.name} -m)")
    return c.targets_outside(o.pos[:1], c.name)


def _sort(c: _Call) -> Verdict:
    o = _opts(c.args, "kotST", ("--key", "--output", "--field-separator", "--buffer-size", "--temporary-directory",
                                "--files0-from", "--compress-program", "--parallel", "--batch-size", "--random-source"))
    outputs = o.values("-o", "--output")
    verdict = c.targets_outside(outputs, "sort -o")
    return verdict if outputs or o.has("--compress-program") else SAFE


def _second_operand_written(short: str) -> Callable[[_Call], Verdict]:
    """uniq IN OUT, xxd IN OUT."""

    def rule(c: _Call) -> Verdict:
        o = _opts(c.args, short)
        return c.targets_outside(o.pos[1:2], c.name) if len(o.pos) > 1 else SAFE

    return rule


def _output_option(*names: str, short: str = "", otherwise: Verdict = MODERATE) -> Callable[[_Call], Verdict]:
    """tree -o, patch -o: the option's value is written; ``otherwise`` without it."""

    def rule(c: _Call) -> Verdict:
        outputs = _opts(c.args, short).values(*names)
        return c.targets_outside(outputs, f"{c.name} {names[0]}") if outputs else otherwise

    return rule


def _yq(c: _Call) -> Verdict:
    o = _opts(c.args, "oIpe", ("--output-format", "--indent", "--input-format", "--arg"))
    if o.has("-i", "--inplace"):
        return c.targets_outside(o.pos[1:], "yq -i")
    return SAFE


def _rg(c: _Call) -> Verdict:
    return MODERATE if any((w.text or "").startswith("--pre") for w in c.args) else SAFE


def _man(c: _Call) -> Verdict:
    """man runs the pager, browser or preprocessor named in its options: at least MODERATE, and
    judged as that command; a local file (``man ./x.1``) is MODERATE."""
    o = _opts(c.args, "PMLmpSseCRIO", ("--pager", "--manpath", "--locale", "--systems", "--sections",
                                       "--extension", "--config-file", "--recode", "--preprocessor"), optional="TH")
    runs = o.values("-P", "--pager", "-H", "--html", "-p", "--preprocessor")
    if runs:
        return _worse(MODERATE, c.joined(runs[:1], f"{c.name} -P"))
    local = o.has("-l", "--local-file", "-H", "--html") or any("/" in (w.text or "/") for w in o.pos)
    return MODERATE if local else SAFE
