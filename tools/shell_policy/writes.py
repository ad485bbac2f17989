"""Programs that write or delete the files they name: they ask for a target outside the workspace or
where code runs later, for emptying or destroying a file, and for a setuid, setgid or world-writable
mode or an outside file copied with its mode (``cp -p /usr/bin/passwd .``). What only names the words
it writes is rows (``WRITES``: ``touch F``, ``sort -o F``); the rest is code (``cp``, ``dd of=``, ``rm``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from tools.base import Danger
from tools.shell_policy.paths import HERE, check_modes, is_sink, keeps_mode, mode_risk, persisting
from tools.shell_policy.rows import VALUE_OPTIONS, Row, row
from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad, lit, opts, worse


def _copy_like(c: Call) -> Verdict:
    """cp, mv, install, ln: the last operand (or -t DIR) is written; mv also removes its sources.
    Emptying or destroying asks (``cp /dev/null f``, ``mv f /dev/null``, ``ln -sf /dev/null f``), as
    does a link out of the workspace or a copy that keeps an outside file's mode (``keeps_mode``).
    Only install has ``-m``, ``-o`` and ``-g``; they take a value."""
    o = opts(c.args, "tSmog", ("--target-directory", "--suffix", "--mode", "--owner", "--group"))
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
    if c.name == "mv" and o.pos[-1:] and is_sink(o.pos[-1]):
        return bad(f"destroys files (mv ... {o.pos[-1].show})")
    if c.name in ("cp", "ln", "install") and any(w.text == "/dev/null" for w in sources) and targets:
        return bad(f"empties or replaces a file ({c.name} /dev/null {targets[0].show})")
    if c.name == "ln" or c.name == "cp" and o.has("-s", "-l", "--symbolic-link", "--link"):
        return _link(c, sources, targets[0] if targets else None, o.has("-s", "--symbolic", "--symbolic-link"))
    if c.name == "install":
        if o.has("-o", "-g", "--owner", "--group"):
            return bad("changes owners (install -o)")
        return check_modes(c, o.values("-m", "--mode"))
    return keeps_mode(c, sources) if c.name == "cp" else verdict


def _link(c: Call, sources: list[Word], link: Word | None, symbolic: bool) -> Verdict:
    """A link to an outside path makes later reads and writes of an inside path reach it."""
    for source in sources:
        text = source.text
        if symbolic and text and not text.startswith(("/", "~")) and link is not None and link.text:
            text = posixpath.normpath(posixpath.join(posixpath.dirname(link.text), text))  # relative to the link
        if c.outside(source if text is None else Word(text, source.raw)):
            return bad(f"links to a path outside the workspace ({c.name} {source.show})")
        if text and persisting(Word(text, source.raw), c.scan.cwd):  # ln -s .git g; echo x > g/hooks/x
            return bad(f"links to a place where code runs later ({c.name} {source.show})")
    return MODERATE


def _tee(c: Call) -> Verdict:
    o = opts(c.args, long=("--output-error",))
    verdict = c.targets_outside(o.pos, "tee")
    files = [w for w in o.pos if not is_sink(w)]
    if verdict[0] is not Danger.DANGEROUS and files and c.stdin is not None and c.stdin.text == "/dev/null":
        return bad(f"empties a file (tee {files[0].show} < /dev/null)")
    return verdict if verdict[0] is Danger.DANGEROUS or files else SAFE


def _dd(c: Call) -> Verdict:
    texts = [w.text or "" for w in c.args]
    given = next((w for w in c.args if (w.raw if w.text is None else w.text).startswith("of=")), None)
    if given is None:
        return MODERATE
    if given.text is None:
        return bad(f"writes outside the workspace (dd {given.show})")
    target = Word(given.text[3:], given.raw[3:])
    if target.text and target.text.startswith("/dev/") and not is_sink(target):
        return bad(f"changes disks or filesystems (dd of={target.show})")
    verdict = c.targets_outside([target], "dd of=")
    if verdict[0] is Danger.DANGEROUS:
        return verdict
    if "if=/dev/null" in texts and not is_sink(target):
        return bad(f"empties a file (dd if=/dev/null of={target.show})")
    if any("notrunc" in t for t in texts if t.startswith("conv=")):
        return bad(f"overwrites a file in place (dd of={target.show} conv=notrunc)")
    return verdict


_SED_WRITES = re.compile(r"(?:^|[;{}\n/!\d$gpIiMm])\s*[wWe](?:\s|$|;)|\bs(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1[gpIiMm\d]*[ewW]")


def _sed(c: Call) -> Verdict:
    o = opts(c.args, "efl", ("--expression", "--file", "--line-length"), optional="i")
    scripts, files = o.values("-e", "--expression"), o.pos
    if not scripts and not o.has("-f", "--file"):  # the first operand is the script
        scripts, files = o.pos[:1], o.pos[1:]
    if o.has("-i", "--in-place"):
        return c.targets_outside(files, "sed -i")
    if o.has("-f", "--file") or any(s.text is None or _SED_WRITES.search(s.text) for s in scripts):
        return MODERATE
    return SAFE


def _tar(c: Call) -> Verdict:
    args = list(c.args)
    if args and args[0].text and re.fullmatch(r"[A-Za-z]+", args[0].text):
        args[0] = lit("-" + args[0].text)  # old style: tar xzf a.tgz
    long = ("--file", "--directory", "--files-from", "--exclude-from", "--use-compress-program")
    o = opts(args, "fCTXbHKLNVgI", long)
    extracting = o.has("-x", "--extract", "--get")
    creating = o.has("-c", "-r", "-u", "-A", "--create", "--append", "--update", "--concatenate")
    if extracting and o.has("-P", "--absolute-names"):
        return bad("writes outside the workspace (tar -P)")
    if o.has("--remove-files"):
        return bad("deletes the files it archives (tar --remove-files)")
    targets = o.values("-C", "--directory") if extracting else []
    targets += o.values("-f", "--file") if creating else []
    return c.targets_outside(targets, "tar -C" if extracting else "tar -f")


def _man(c: Call) -> Verdict:
    """man runs the pager, browser or preprocessor named in its options: at least MODERATE, and
    judged as that command; a local file (``man ./x.1``) is MODERATE."""
    o = opts(c.args, "PMLmpSseCRIO", ("--pager", "--manpath", "--locale", "--systems", "--sections",
                                       "--extension", "--config-file", "--recode", "--preprocessor"), optional="TH")
    runs = o.values("-P", "--pager", "-H", "--html", "-p", "--preprocessor")
    if runs:
        return worse(MODERATE, c.joined(runs[:1], f"{c.name} -P"))
    local = o.has("-l", "--local-file", "-H", "--html") or any("/" in (w.text or "/") for w in o.pos)
    return MODERATE if local else SAFE


def _rm(c: Call) -> Verdict:
    o = opts(c.args)
    if o.has("-r", "-R", "-f", "--recursive", "--force", "--no-preserve-root"):
        return MODERATE  # its row asks first: deletes recursively or by force
    for target in o.pos:
        if target.text is None and not target.procsub and not HERE.match(target.raw):
            return bad(f"deletes a path it can't see (rm {target.show})")
        if c.outside(target):
            return bad(f"deletes outside the workspace (rm {target.show})")
        if target.glob:
            return bad(f"deletes by a glob pattern (rm {target.show})")
    return MODERATE


def _delete_inside(c: Call) -> Verdict:
    """rmdir, unlink, trash: fine in the workspace."""
    for target in opts(c.args).pos:
        if c.outside(target):
            return bad(f"deletes outside the workspace ({c.name} {target.show})")
    return MODERATE


def _gio(c: Call) -> Verdict:
    o = opts(c.args)
    sub = o.texts()[:1]
    if sub == ["trash"] and o.has("--empty"):
        return bad("empties the trash (gio trash --empty)")
    if sub in (["trash"], ["remove"], ["rm"]):
        return _delete_inside(Call(f"gio {sub[0]}", o.pos[1:], c.stdin, c.scan))
    return MODERATE


def _chmod(c: Call) -> Verdict:
    o = opts(c.args, long=("--reference",))
    if o.has("-R", "--recursive"):
        return bad("changes permissions recursively (chmod -R)")
    for reference in o.values("--reference"):
        if c.outside(reference):
            return bad(f"copies the mode of an outside file (chmod --reference={reference.show})")
    operands = list(o.pos)
    # `chmod -w f`, `chmod -x f`: the mode looks like an option
    mode = next((name for name, _ in o.flags if re.fullmatch(r"-[rwxXst]", name)), "")
    if not mode and operands and not o.has("--reference"):
        mode = operands.pop(0).text or ""
    risk = mode_risk(mode)
    if risk:
        return bad(f"{risk} (chmod {mode})")
    for target in operands:
        if c.outside(target):
            return bad(f"changes permissions outside the workspace (chmod {target.show})")
    for target in operands:  # a script made executable here and run next asks (scripts.py)
        verdict = c.scan.wrote(target, "chmod", keep=True)
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    return MODERATE


# What touch, gzip, mkdir, sort... write (``writes``), and what else they do. First among the rows (after
# code: ``mkdir -m``, ``zip -m``), so a write outside is named before later rows ask (``sort -o``).
_OUT = "writes outside the workspace"
WRITES: list[Row] = [
    row(_OUT, "touch", "", ["touch /etc/nologin", "cd /etc && touch motd"], ["touch notes.txt"], writes=":"),
    row(_OUT, "gzip", "", ["gzip ../data.csv", "xz -T4 /etc/x", "gunzip -S -c ~/a.gz"],
        ["gzip -dc ../a.gz", "zstd -l ../a"], writes=": !-c !--stdout !-l !--list !-t !--test"),
    row(_OUT, "mkdir", "", ["mkdir -p ~/bin", "mkdir -m 755 /opt/x"], ["mkdir -p build"], writes=":"),
    row("empties or destroys files", "truncate", "cuts or empties files ({name} {sub})",  # any size
        ["truncate -s 0 app.log", "truncate -s 1G disk.img"], ["truncate -s 0", "truncate -s 0 /var/log/syslog"],
        writes=":"),
    row(_OUT, "sort", "", ["sort -o /etc/x data.txt", "sort -rno ~/.x f"], ["sort -o out.txt f"], writes="-o --output"),
    row(_OUT, "uniq xxd", "", ["uniq -c in.txt /etc/x", "xxd -r dump ~/.x"], ["uniq in.txt out.txt"], writes="1:2"),
    row(_OUT, "tree", "", ["tree -o /etc/x", "tree -L 2 -o ../t.txt"], ["tree -o t.txt"], writes="-o"),
    row(_OUT, "patch", "", ["patch -o /etc/x a.diff", "patch -p1 -d /opt/src"], ["patch -p1 -d src"], writes="-o -d"),
    row(_OUT, "yq", "", ["yq -i '.a=1' /etc/x.yml", "yq --inplace . ../x.yml"], ["yq . /etc/x.yml"], writes="1:",
        flags=("-i", "--inplace")),
    row(_OUT, "unzip", "", ["unzip a.zip -d /opt/x", "unzip -d ~/x a.zip"], ["unzip a.zip -d out"], writes="-d"),
    row(_OUT, "zip", "", ["zip /etc/a.zip f", "zip -r ../a.zip d"], ["zip a.zip /etc/hosts"], writes=":1"),
    row("deletes", "7z", "deletes the files it archives ({name} -sdel)", ["7z a -sdel a.7z f", "7z a a.7z -sdel d"],
        ["7z a a.7z f"], flags=("-sdel",)),
    row(_OUT, "7z", "", ["7z x a.7z -o/opt/x", "7z x a.7z '-o../x'"], ["7z x a.7z -oout"], writes="-o*"),
]

# The programs this module judges, by name (``table.py`` gathers them).
RULES: dict[str, Callable[[Call], Verdict | None]] = {
    "rm": _rm, **dict.fromkeys(("rmdir", "unlink", "trash"), _delete_inside), "gio": _gio,
    **dict.fromkeys(("cp", "mv", "ln", "install"), _copy_like), "man": _man,
    "mkdir": lambda c: check_modes(c, opts(c.args, *VALUE_OPTIONS["mkdir"]).values("-m", "--mode")),
    "zip": lambda c: bad(f"deletes the files it archives ({c.name} -m)")
    if opts(c.args, *VALUE_OPTIONS["zip"]).has("-m", "--move") else None,
    "tee": _tee, "dd": _dd, "sed": _sed, "tar": _tar, "chmod": _chmod,
    "rg": lambda c: MODERATE if any((w.text or "").startswith("--pre") for w in c.args) else SAFE,
}
