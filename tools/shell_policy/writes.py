"""Writes: the programs that write files named in their arguments (``cp``, ``tee``, ``dd of=``,
``sed -i``, ``tar -C``, ``sort -o``...), DANGEROUS when one is outside the workspace; and the
read-only tools whose options may write or run something."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from tools.base import Danger
from tools.shell_policy.verdict import MODERATE, SAFE, Verdict, _bad
from tools.shell_policy.walk import _Call, _sink
from tools.shell_policy.words import _lit, _opts, _Word


def _copy_like(short: str = "") -> Callable[[_Call], Verdict]:
    """cp, mv, install, ln: the last operand (or -t DIR) is written; mv also removes its sources."""

    def rule(c: _Call) -> Verdict:
        o = _opts(c.args, "tS" + short, ("--target-directory", "--suffix"))
        directories = o.values("-t", "--target-directory")
        if c.name == "mv":
            targets = o.pos + directories
        elif directories or (c.name == "install" and o.has("-d")):
            targets = directories or o.pos
        else:
            targets = o.pos[-1:] if len(o.pos) >= 2 else []
        return c.targets_outside(targets, c.name)

    return rule


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
    for w in c.args:
        if w.text is not None and w.text.startswith("of="):
            target = _Word(w.text[3:], w.raw[3:])
            if target.text and target.text.startswith("/dev/") and not _sink(target):
                return _bad(f"changes disks or filesystems (dd of={target.show})")
            return c.targets_outside([target], "dd of=")
        if w.text is None and w.raw.startswith("of="):
            return _bad(f"writes outside the workspace (dd {w.show})")
    return MODERATE


_SED_WRITES = re.compile(r"(?:^|[;{}\n/!\d$gpIiMm])\s*[wWe](?:\s|$|;)")


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
    targets = o.values("-C", "--directory") if extracting else []
    targets += o.values("-f", "--file") if creating else []
    return c.targets_outside(targets, "tar -C" if extracting else "tar -f")


def _unzip(c: _Call) -> Verdict:
    return c.targets_outside(_opts(c.args, "dxP").values("-d"), "unzip -d")


def _seven_zip(c: _Call) -> Verdict:
    targets = [_Word(w.text[2:], w.raw[2:]) for w in c.args if w.text and w.text.startswith("-o")]
    return c.targets_outside(targets, "7z -o")


def _zip(c: _Call) -> Verdict:
    return c.targets_outside(_opts(c.args, "bnPtx", ("--password",)).pos[:1], c.name)


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
