"""Which shell commands ask before they run, and why.

A parser-based classifier. The command line is parsed with tree-sitter-bash and
every simple command in it is looked at wherever it sits: lists (``;``, ``&&``,
``||``, ``&``), pipelines, subshells, groups, ``if``/``for``/``while``/``case``
bodies, functions, ``!``, ``time``, and ``$(...)``, backticks and ``<(...)`` in
arguments, assignments, redirection targets and heredocs. A program named by
path is known by its name (``/bin/rm`` is ``rm``). Wrappers are seen through:
``VAR=v``, ``env``, ``nohup``, ``nice``, ``ionice``, ``timeout``, ``stdbuf``,
``command``, ``exec``, ``builtin``, ``time``, ``setsid``, ``chronic``,
``coproc``, ``busybox``; so are the commands that ``xargs``, ``find -exec``,
``fd -x``, ``watch``, ``flock`` and ``parallel`` run. Nested shells are parsed
in turn: the string of ``bash -c``/``sh -c``/``eval``/``trap``/``watch``, and a
literal heredoc or here-string fed to a shell, up to four levels deep.

What can't be seen through asks. A command is DANGEROUS, with the first reason
found, when any part of it:

| rule | examples |
|---|---|
| can't be seen through | unparsable (unbalanced quotes), over 64 KB, nested too deeply, a command built at run time (``$CMD x``, ``"$@"``, ``$(echo rm) x``, ``bash -c "$X"``, ``eval $(cat f)``, ``source <(curl ...)``) |
| runs as another user | ``sudo``, ``su``, ``doas``, ``pkexec``, ``run0`` |
| pipes into a shell or interpreter | ``curl ... \\| sh``, ``... \\| bash -s``, ``\\| python3 -``, ``\\| perl``, ``\\| node``, ``bash <(curl ...)`` |
| runs risky inline code | ``python -c``, ``perl -e``, ``node -e``, ``ruby -e``, ``php -r``, ``Rscript -e``, ``osascript -e``, ``lua -e``, ``deno eval`` whose code deletes (``rmtree``, ``unlink``), runs commands (``subprocess``, ``os.system``, ``child_process``), uses the network (``socket``, ``urllib``, ``requests``, ``fetch(``), changes permissions, writes to an outside path, or is obfuscated (``eval(``, ``exec(``, ``__import__``, ``base64``, ``compile(``, ``importlib``) |
| deletes | ``rm`` with ``-r``/``-f``, of a glob, of an outside or run-time path; ``find -delete``, ``find -exec rm``, ``xargs rm``, ``shred``, ``srm``, ``wipe``, ``rmdir``/``unlink`` outside, ``git clean -f``, ``rsync --delete``, ``trash-empty`` |
| rewrites or pushes history | ``git push``, ``git reset --hard``, ``git rebase``, ``git filter-branch``/``filter-repo``, ``--force``/``-f`` to git, ``git branch -D``, ``git tag -d``, ``git stash drop``/``clear``, ``git checkout -- .``, ``git restore``, ``git update-ref -d``, ``git reflog expire``, ``git gc --prune=now``, ``git -c`` setting a command, ``hg push``, ``svn commit`` |
| changes infrastructure | ``kubectl`` (but ``get``/``describe``/``logs``/``top``...), ``helm install``/``upgrade``/``uninstall``/``rollback``, ``terraform``/``tofu`` ``apply``/``destroy``/``import``/``state rm`` or ``-auto-approve``, ``pulumi up``/``destroy``, ``aws`` (but ``describe-*``/``list-*``/``get-*``/``s3 ls``), ``gcloud``/``az``/``doctl`` ``delete``/``create``/``deploy``/``set``..., ``ansible-playbook``, ``vault write``, ``heroku``, ``flyctl deploy``, ``vercel --prod``, ``cdk deploy``, ``serverless deploy`` |
| changes containers or images | ``docker``/``podman`` ``rm``, ``rmi``, ``kill``, ``stop``, ``prune``, ``volume rm``; ``run --privileged`` or mounting an outside path; ``compose down -v`` |
| runs SQL that destroys data | ``psql``/``mysql``/``sqlite3``/``sqlcmd``/``cqlsh``/``clickhouse-client`` with ``DROP``, ``TRUNCATE``, ``DELETE``, ``ALTER``, ``UPDATE``, ``GRANT``, ``REVOKE``; SQL it can't see (``psql -f f.sql``, ``mysql < dump.sql``); ``mongosh --eval`` dropping or deleting; ``redis-cli flushall``; ``dropdb``, ``dropuser`` |
| publishes a package | ``npm``/``yarn``/``pnpm publish``, ``twine upload``, ``cargo publish``, ``gem push``, ``poetry``/``uv``/``flit``/``hatch publish``, ``mvn deploy``, ``gradle publish``, ``docker push``, ``gh release create``, ``dotnet nuget push`` |
| sends data over the network | ``curl -d``/``-F``/``-T``/``--json``/``-X POST``, ``wget --post-data``/``--method``, ``http POST``/``http url a=b``, ``nc``, ``socat``, ``telnet``, ``ssh``, ``scp``, ``sftp``, ``ftp``, ``rsync host:``, ``rclone``, ``mail``, ``gh pr create``, ``> /dev/tcp/...`` |
| writes outside the workspace | a redirection, ``tee``, ``cp``/``mv``/``install``/``ln``/``touch``/``mkdir``/``truncate``/``dd of=``/``sed -i``/``rsync``/``tar -C``/``unzip -d``/``curl -o``/``wget -O`` to an absolute path, ``~``, ``..`` or a run-time path (``"$HOME/x"``), after ``cd`` out of the workspace; ``git config --global``; ``pip install --user``, ``npm install -g`` (``/tmp``, ``/dev/null``, ``/dev/std*``, ``/dev/fd/*``, ``$PWD`` count as inside) |
| changes disks or filesystems | ``mkfs*``, ``dd of=/dev/...``, ``fdisk``, ``parted``, ``mount``, ``umount``, ``swapon``, ``wipefs``, ``losetup``, ``fsck`` |
| changes permissions or owners | ``chmod -R``, ``chmod 777``/``o+w``/``u+s``, ``chmod`` outside, ``chown``, ``chgrp``, ``setfacl``, ``chattr`` |
| controls the machine | ``shutdown``, ``reboot``, ``halt``, ``systemctl``/``service`` (but ``status``), ``killall``, ``pkill``, ``kill -1``, ``crontab -r``/``crontab file``, ``iptables``, ``modprobe``, ``history -c``, a fork bomb |
| installs system packages | ``apt``/``apt-get``/``yum``/``dnf``/``pacman``/``brew``/``zypper``/``apk``/``snap``/``flatpak``/``dpkg``/``rpm`` installing, removing or upgrading |

A command line is SAFE (never asks, and may be rerun after a crash) only when
every simple command in it is plainly read-only and no redirection writes to a
file (``/dev/null`` is fine): ``ls``, ``cat``, ``head``, ``tail``, ``wc``,
``grep``/``rg``/``ag``, ``find`` (no ``-delete``/``-exec``/``-fprint``),
``pwd``, ``echo``, ``printf``, ``stat``, ``file``, ``du``, ``df``, ``tree``,
``which``, ``type``, ``whoami``, ``id``, ``date``, ``uname``, ``env``,
``printenv``, ``diff``, ``cmp``, ``sort`` (no ``-o``), ``uniq``, ``cut``,
``tr``, ``jq``, ``yq`` (no ``-i``), ``less``, ``sha256sum``, ``basename``,
``realpath``, ``readlink``, ``true``, ``test``, ``seq``, ``od``, ``xxd``,
``strings``, ``sed`` (no ``-i``, ``w`` or ``e``), ``cd``, ``git
status``/``log``/``diff``/``show``/``branch``/``rev-parse``/``ls-files``/``blame``,
``kubectl get``/``describe``/``logs``, ``docker ps``/``images``/``inspect``/``logs``,
``helm list``/``status``, ``pip list``, any known tool's ``--version``.

Everything else is MODERATE: it can change the workspace (``mkdir``, ``cp``,
``sed -i``, ``make``, ``pytest``, ``git commit``, ``pip install x``, ``python3
script.py``, ``curl -o f url``), and a sandbox bounds it, so the unknown falls
there rather than asking.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import PurePosixPath
from typing import Literal

import tree_sitter
import tree_sitter_bash

from tools.base import Danger

Verdict = tuple[Danger, str]
SAFE: Verdict = (Danger.SAFE, "")
MODERATE: Verdict = (Danger.MODERATE, "")

MAX_CHARS = 64 * 1024
MAX_NESTING = 4  # bash -c inside eval inside ...
MAX_TREE_DEPTH = 150
MAX_NODES = 8000  # bounds the walk: a long script, not a command
SHOW_CHARS = 40


def _bad(reason: str) -> Verdict:
    return Danger.DANGEROUS, reason


def _worse(a: Verdict, b: Verdict) -> Verdict:
    """The first dangerous verdict, else MODERATE if either is, else SAFE."""
    for verdict in (a, b):
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    return MODERATE if Danger.MODERATE in (a[0], b[0]) else SAFE


# ---- parsing ---------------------------------------------------------------------------------

_PARSE_LOCK = threading.Lock()


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _parse(source: bytes) -> tree_sitter.Tree:
    with _PARSE_LOCK:  # a Parser is not safe to share between threads
        return _parser().parse(source)


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text else ""


def _show(raw: str) -> str:
    raw = " ".join(raw.split())
    return raw if len(raw) <= SHOW_CHARS else raw[: SHOW_CHARS - 1] + "…"


@dataclass(frozen=True)
class _Word:
    """One shell word: its value when it is literal (``text``), and as written (``raw``)."""

    text: str | None
    raw: str
    glob: bool = False  # an unquoted * ? or [
    procsub: bool = False  # <(...) or >(...): a pipe, not a path

    @property
    def show(self) -> str:
        return _show(self.raw)


def _lit(text: str) -> _Word:
    return _Word(text, text)


_GLOB = re.compile(r"(?<!\\)[*?\[]")
_ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "v": "\v"}


def _unescape(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw.replace("\\\n", ""), flags=re.S)


def _unescape_dq(raw: str) -> str:
    return re.sub(r'\\([\\"$`])', r"\1", raw.replace("\\\n", ""))


def _ansi_c(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] in "xuU":
            return chr(min(int(esc[1:], 16), 0x10FFFF))
        if esc[0].isdigit():
            return chr(int(esc, 8))
        return _ANSI_C.get(esc, esc)

    return re.sub(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|.)", one, body, flags=re.S)


def _word(node: tree_sitter.Node) -> _Word:
    kind, raw = node.type, _text(node)
    if kind == "command_name":
        return _word(node.named_children[0]) if node.named_child_count else _lit(raw)
    if kind == "word":
        return _Word(_unescape(raw), raw, glob=bool(_GLOB.search(raw)))
    if kind in ("number", "brace_expression"):
        return _lit(raw)
    if kind == "raw_string":
        return _Word(raw[1:-1], raw)
    if kind == "ansi_c_string":
        return _Word(_ansi_c(raw[2:-1]), raw)
    if kind == "string":
        literal = all(child.type == "string_content" for child in node.named_children)
        return _Word(_unescape_dq(raw[1:-1]) if literal else None, raw)
    if kind == "concatenation":
        parts = [_word(child) for child in node.named_children]
        if any(part.text is None for part in parts):
            return _Word(None, raw)
        return _Word("".join(part.text or "" for part in parts), raw, glob=any(part.glob for part in parts))
    return _Word(None, raw, procsub=kind == "process_substitution")


@dataclass(frozen=True)
class _Opts:
    flags: list[tuple[str, _Word | None]]
    pos: list[_Word]

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.flags)

    def values(self, *names: str) -> list[_Word]:
        return [value for name, value in self.flags if name in names and value is not None]

    def texts(self) -> list[str]:
        return [w.text or "" for w in self.pos]


def _opts(
    args: Sequence[_Word],
    short: str = "",
    long: Iterable[str] = (),
    *,
    optional: str = "",
    posix: bool = False,
    dash_long: Iterable[str] = (),
) -> _Opts:
    """getopt: ``short`` letters and ``long`` names take a value; ``optional`` letters take one only
    when attached; ``posix`` stops at the first operand; ``dash_long`` are ``-name`` options."""
    long, dash_long = frozenset(long), frozenset(dash_long)
    flags: list[tuple[str, _Word | None]] = []
    pos: list[_Word] = []
    i = 0
    while i < len(args):
        word, text = args[i], args[i].text
        nxt = args[i + 1] if i + 1 < len(args) else None
        if text is None or text == "-" or not text.startswith("-"):
            if posix:
                pos.extend(args[i:])
                break
            pos.append(word)
        elif text == "--":
            pos.extend(args[i + 1 :])
            break
        elif text.startswith("--") or text.split("=")[0] in dash_long:
            name, eq, value = text.partition("=")
            if eq:
                flags.append((name, _lit(value)))
            elif name in long or name in dash_long:
                flags.append((name, nxt))
                i += 1
            else:
                flags.append((name, None))
        else:
            for j, letter in enumerate(text[1:], 1):
                rest = text[j + 1 :]
                if letter in short:
                    flags.append(("-" + letter, _lit(rest) if rest else nxt))
                    i += 0 if rest else 1
                    break
                if letter in optional:
                    flags.append(("-" + letter, _lit(rest) if rest else None))
                    break
                flags.append(("-" + letter, None))
        i += 1
    return _Opts(flags, pos)


# ---- the walk --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Stdin:
    """Where a command's standard input comes from, when it matters (a shell reading a script)."""

    kind: Literal["pipe", "text", "file"]
    text: str | None  # heredoc or here-string value, file path; None when built at run time
    show: str = ""  # for reasons; for a pipe, the program feeding it


_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})
_HERE = re.compile(r'^"?(\$PWD|\$\{PWD\}|\$\(pwd\)|`pwd`)"?(/|$)')
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "xh", "xhs", "aria2c"})


def _sink(w: _Word) -> bool:
    return w.text is not None and (w.text in _SINKS or w.text.startswith("/dev/fd/"))


class _Scan:
    """One walk over a parsed command line; keeps the first dangerous verdict."""

    def __init__(self, nesting: int, cwd_outside: bool = False) -> None:
        self.nesting = nesting
        self.cwd_outside = cwd_outside  # after `cd /elsewhere`, relative paths are outside too
        self.verdict = SAFE

    def note(self, verdict: Verdict) -> None:
        self.verdict = _worse(self.verdict, verdict)

    def outside(self, w: _Word) -> bool:
        if w.procsub or _sink(w):
            return False
        if w.text is None:
            return self.cwd_outside or not _HERE.match(w.raw) or ".." in w.raw
        if ".." in PurePosixPath(w.text).parts or w.text.startswith("~"):
            return True
        if w.text.startswith("/"):
            return not (w.text == "/tmp" or w.text.startswith("/tmp/"))
        return self.cwd_outside

    def visit(self, node: tree_sitter.Node, stdin: _Stdin | None, depth: int) -> None:
        if self.verdict[0] is Danger.DANGEROUS:
            return
        if depth > MAX_TREE_DEPTH:
            self.note(_bad("nested too deeply to see through"))
            return
        kind = node.type
        if kind == "command":
            redirects = node.children_by_field_name("redirect")
            words = [_word(child) for child in node.children_by_field_name("name")]
            words += [_word(child) for child in node.children_by_field_name("argument")]
            if words:
                self.note(_evaluate(words, _stdin_of(redirects, stdin), self))
            stdin = None
        elif kind == "redirected_statement":
            body = node.child_by_field_name("body")
            redirects = node.children_by_field_name("redirect")
            if body is not None:
                self.visit(body, _stdin_of(redirects, stdin), depth + 1)
            for redirect in redirects:
                self.visit(redirect, None, depth + 1)
            return
        elif kind == "pipeline":
            feeder = _program_of(node.named_children[0]) if node.named_child_count else ""
            for i, stage in enumerate(node.named_children):
                self.visit(stage, stdin if i == 0 else _Stdin("pipe", None, feeder), depth + 1)
                feeder = _program_of(stage)
            return
        elif kind == "heredoc_redirect":
            for child in node.named_children:
                if child.type == "pipeline":  # `cat <<EOF | sh`: the pipe starts at the heredoc
                    for stage in child.named_children:
                        self.visit(stage, _Stdin("pipe", None, ""), depth + 1)
                else:
                    self.visit(child, None, depth + 1)
            return
        elif kind == "file_redirect":  # what runs inside the target first: `> "$(git push)"`
            for child in node.named_children:
                self.visit(child, None, depth + 1)
            if self.verdict[0] is not Danger.DANGEROUS:
                self._redirect(node)
            return
        elif kind in ("command_substitution", "process_substitution"):
            stdin = None
        elif kind == "function_definition":
            self._fork_bomb(node)
        for child in node.named_children:
            self.visit(child, stdin, depth + 1)

    def _redirect(self, node: tree_sitter.Node) -> None:
        ops = [child.type for child in node.children if not child.is_named]
        dests = node.children_by_field_name("destination")
        if not ops or not dests:
            return
        op, dest = ops[0], _word(dests[0])
        if op in (">&", "<&") and (dests[0].type == "number" or dest.text == "-"):
            return  # 2>&1: a copy of a descriptor, not a file
        if dest.text is not None and dest.text.startswith(("/dev/tcp/", "/dev/udp/")):
            self.note(_bad(f"sends data over the network (redirection to {dest.show})"))
        elif op in _WRITES:
            if self.outside(dest):
                self.note(_bad(f"writes outside the workspace (redirection to {dest.show})"))
            elif not _sink(dest):
                self.note(MODERATE)

    def _fork_bomb(self, node: tree_sitter.Node) -> None:
        name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        if name is None or body is None:
            return
        calls, stack = 0, [body]
        while stack:
            current = stack.pop()
            if current.type == "command_name" and current.text == name.text:
                calls += 1
            stack.extend(current.named_children)
        if calls >= 2:
            self.note(_bad(f"defines a fork bomb ({_text(name)})"))


def _stdin_of(redirects: list[tree_sitter.Node], stdin: _Stdin | None) -> _Stdin | None:
    for node in redirects:
        if node.type == "heredoc_redirect":
            stdin = _Stdin("text", _heredoc_text(node), "<<")
        elif node.type == "herestring_redirect" and node.named_child_count:
            value = _word(node.named_children[-1])
            stdin = _Stdin("text", value.text, f"<<< {value.show}")
        elif node.type == "file_redirect":
            ops = [child.type for child in node.children if not child.is_named]
            descriptor = [_text(c) for c in node.children if c.type == "file_descriptor"]
            dests = node.children_by_field_name("destination")
            if ops and ops[0] == "<" and descriptor in ([], ["0"]) and dests:
                path = _word(dests[0])
                stdin = _Stdin("file", path.text, f"< {path.show}")
    return stdin


def _heredoc_text(node: tree_sitter.Node) -> str | None:
    start = next((_text(c) for c in node.children if c.type == "heredoc_start"), "")
    body = next((c for c in node.children if c.type == "heredoc_body"), None)
    if body is None:
        return ""
    if any(q in start for q in "'\"\\"):
        return _text(body)
    if all(child.type == "heredoc_content" for child in body.named_children):
        return re.sub(r"\\([\\$`])", r"\1", _text(body))
    return None  # expansions: the shell sees text built at run time


def _program_of(node: tree_sitter.Node) -> str:
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        node = body if body is not None else node
    name = node.child_by_field_name("name") if node.type == "command" else None
    text = _word(name).text if name is not None else None
    return PurePosixPath(text).name if text else ""


def _classify(command: str, nesting: int, cwd_outside: bool = False) -> Verdict:
    if len(command) > MAX_CHARS:
        return _bad("too long to inspect")
    if "\x00" in command:
        return _bad("contains a NUL byte, so it can't be seen through")
    root = _parse(command.encode("utf-8", "replace")).root_node
    if root.has_error:
        return _bad("could not be parsed, so it can't be seen through")
    if root.descendant_count > MAX_NODES:
        return _bad("too long to inspect")
    scan = _Scan(nesting, cwd_outside)
    scan.visit(root, None, 0)
    return scan.verdict


# ---- one simple command ----------------------------------------------------------------------


@dataclass
class _Call:
    name: str  # as written, without its directory: for reasons
    args: list[_Word]
    stdin: _Stdin | None
    scan: _Scan = field(repr=False)

    def outside(self, w: _Word) -> bool:
        return self.scan.outside(w)

    def run(self, words: Sequence[_Word], via: str = "", stdin: _Stdin | None = None) -> Verdict:
        """The verdict of a command this one runs (``xargs rm``), named ``via`` when dangerous."""
        if not words:
            return SAFE
        verdict = _evaluate(list(words), stdin, self.scan)
        return _bad(f"in {via}: {verdict[1]}") if via and verdict[0] is Danger.DANGEROUS else verdict

    def nested(self, source: str, via: str) -> Verdict:
        """The verdict of shell source this command runs (``bash -c STR``)."""
        if self.scan.nesting >= MAX_NESTING:
            return _bad("nested too deeply to see through")
        verdict = _classify(source, self.scan.nesting + 1, self.scan.cwd_outside)
        return _bad(f"in {via}: {verdict[1]}") if verdict[0] is Danger.DANGEROUS else verdict

    def joined(self, words: Sequence[_Word], via: str) -> Verdict:
        """Words a shell will join and parse again (``eval a b``, ``watch cmd``)."""
        dynamic = [w for w in words if w.text is None]
        if dynamic:
            return _bad(f"runs a command built at run time ({via} {dynamic[0].show})")
        return self.nested(" ".join(w.text or "" for w in words), via)

    def targets_outside(self, targets: Iterable[_Word], what: str) -> Verdict:
        """MODERATE, or DANGEROUS when one of these written paths is outside the workspace."""
        for target in targets:
            if self.outside(target):
                return _bad(f"writes outside the workspace ({what} {target.show})")
        return MODERATE


_PYTHON = re.compile(r"(python|pypy)[\d.]*")
_ALIASES = {
    "nodejs": "node", "bun": "node", "mariadb": "mysql", "mongo": "mongosh", "podman": "docker",
    "nerdctl": "docker", "tofu": "terraform", "terragrunt": "terraform", "oc": "kubectl", "fly": "flyctl",
    "ncat": "nc", "netcat": "nc", "socat": "nc", "telnet": "nc", "mosh": "ssh", "sshpass": "ssh",
    "ssh-copy-id": "ssh", "gradlew": "gradle", "mvnw": "mvn", "egrep": "grep", "fgrep": "grep",
    "gawk": "awk", "mawk": "awk", "nawk": "awk", "luajit": "lua", "R": "Rscript", "fdfind": "fd",
    "srm": "shred", "wipe": "shred", "gunzip": "gzip", "bzip2": "gzip", "bunzip2": "gzip", "xz": "gzip",
    "unxz": "gzip", "zstd": "gzip", "lz4": "gzip", "sls": "serverless", "mailx": "mail", "sendmail": "mail",
    "mutt": "mail", "trash-put": "trash", "toybox": "busybox", "pip3": "pip",
}


def _canonical(name: str) -> str:
    if _PYTHON.fullmatch(name):
        return "python"
    if re.fullmatch(r"pip[\d.]+", name):
        return "pip"
    for family in ("mkfs", "fsck"):
        if name.startswith(family + ".") or name == family:
            return family
    return _ALIASES.get(name, name)


def _evaluate(words: list[_Word], stdin: _Stdin | None, scan: _Scan) -> Verdict:
    head = words[0]
    if head.text is None:
        return _bad(f"runs a command built at run time ({head.show})")
    name = head.text.rsplit("/", 1)[-1] or head.text
    prog = _canonical(name)
    call = _Call(name, words[1:], stdin, scan)
    rule = _RULES.get(prog)
    if rule is not None:
        if [w.text for w in call.args] in (["--version"], ["--help"]):
            return SAFE
        return rule(call)
    return SAFE if prog in _READ_ONLY else MODERATE


_READ_ONLY = frozenset(
    """
    ls ll dir vdir cat tac head tail wc grep ag ack pwd echo printf stat file du df which whereis type
    whoami id groups uname printenv diff cmp comm cut tr jq less more most bat sha1sum sha224sum sha256sum
    sha384sum sha512sum md5sum b2sum cksum sum basename dirname realpath readlink true false test [ seq column
    nl od hexdump hd strings rev fold fmt expand unexpand paste join look zcat bzcat xzcat zgrep zless ps
    pgrep lsof free uptime w who users locale nproc lscpu lsblk lsmod getconf arch tty sleep wait : pushd popd
    dirs set shopt read help man apropos whatis cal jobs hash
    """.split()
)


# ---- wrappers and nested shells --------------------------------------------------------------


def _as_user(c: _Call) -> Verdict:
    return _bad(f"runs as another user ({c.name})")


def _wrapper(short: str = "", long: Iterable[str] = ()) -> Callable[[_Call], Verdict]:
    """A program that runs the rest of its words as a command, after its options (``nohup``, ``nice``)."""

    def rule(c: _Call) -> Verdict:
        return c.run(_opts(c.args, short, long, posix=True).pos, stdin=c.stdin)

    return rule


def _env(c: _Call) -> Verdict:
    o = _opts(c.args, "uCS", ("--unset", "--chdir", "--split-string"), posix=True)
    if o.has("-S", "--split-string"):
        return c.joined(o.values("-S", "--split-string") + o.pos, "env -S")
    rest = list(o.pos)
    while rest and rest[0].text is not None and re.match(r"[A-Za-z_]\w*=", rest[0].text):
        rest.pop(0)
    return c.run(rest, stdin=c.stdin)


def _command_builtin(c: _Call) -> Verdict:
    o = _opts(c.args, posix=True)
    return SAFE if o.has("-v", "-V") else c.run(o.pos, stdin=c.stdin)


def _timeout(c: _Call) -> Verdict:
    rest = _opts(c.args, "sk", ("--signal", "--kill-after"), posix=True).pos
    return c.run(rest[1:], stdin=c.stdin)


def _ionice(c: _Call) -> Verdict:
    o = _opts(c.args, "cnp", ("--class", "--classdata", "--pid"), posix=True)
    return MODERATE if o.has("-p", "--pid") else c.run(o.pos, stdin=c.stdin)


def _busybox(c: _Call) -> Verdict:
    return c.run(c.args, stdin=c.stdin)


_DELETERS = frozenset({"rm", "unlink", "shred", "srm", "wipe"})


def _runs_each(c: _Call, words: Sequence[_Word], via: str) -> Verdict:
    """The command xargs, find -exec, fd -x or parallel runs; a deleter there deletes what they find."""
    verdict = c.run(words, via)
    head = words[0].text if words else None
    deleter = PurePosixPath(head).name if head is not None else ""
    if verdict[0] is not Danger.DANGEROUS and deleter in _DELETERS:
        return _bad(f"deletes what {via.split()[0]} finds ({via} {deleter})")
    return verdict


def _xargs(c: _Call) -> Verdict:
    o = _opts(
        c.args, "InPLsdEa", ("--max-args", "--max-procs", "--max-lines", "--max-chars", "--delimiter", "--eof",
                             "--arg-file", "--process-slot-var"), optional="ile", posix=True,
    )
    return _runs_each(c, o.pos, "xargs")


def _find(c: _Call) -> Verdict:
    verdict, args, i = SAFE, c.args, 0
    while i < len(args):
        text = args[i].text
        if text == "-delete":
            return _bad("deletes files (find -delete)")
        if text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j].text in (";", "+")), len(args))
            inner = args[i + 1 : end]
            verdict = _worse(verdict, _runs_each(c, inner, f"find {text}"))
            i = end
        elif text in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
            verdict = _worse(verdict, c.targets_outside([args[i + 1]], f"find {text}"))
        i += 1
    return verdict


def _fd(c: _Call) -> Verdict:
    for i, w in enumerate(c.args):
        if w.text in ("-x", "--exec", "-X", "--exec-batch"):
            inner = [x for x in c.args[i + 1 :] if x.text != ";"]
            return _runs_each(c, inner, f"fd {w.text}")
    return SAFE


def _watch(c: _Call) -> Verdict:
    o = _opts(c.args, "nq", ("--interval", "--equexit"), optional="d", posix=True)
    if o.has("-x", "--exec"):
        return c.run(o.pos, "watch")
    return c.joined(o.pos, "watch")


def _flock(c: _Call) -> Verdict:
    o = _opts(c.args, "wE", ("--wait", "--timeout", "--conflict-exit-code"), posix=True)
    if not o.pos:
        return MODERATE
    verdict, rest = c.targets_outside(o.pos[:1], "flock"), o.pos[1:]
    if rest and rest[0].text in ("-c", "--command"):
        return _worse(verdict, c.joined(rest[1:2], "flock -c"))
    return _worse(verdict, c.run(rest, "flock"))


def _parallel(c: _Call) -> Verdict:
    o = _opts(
        c.args, "jSaIdnNL", ("--jobs", "--sshlogin", "--arg-file", "--colsep", "--delimiter", "--joblog",
                             "--results", "--timeout", "--halt", "--max-args", "--sshloginfile"), posix=True,
    )
    if o.has("-S", "--sshlogin", "--sshloginfile"):
        return _bad("runs commands on remote hosts (parallel -S)")
    command = []
    for w in o.pos:
        if w.text in (":::", "::::", ":::+", "::::+"):
            break
        command.append(w)
    if not command:
        piped = c.stdin is not None and c.stdin.kind == "pipe"
        return _bad("runs commands read from its input (parallel)") if piped else MODERATE
    verdict = c.joined(command, "parallel")
    head = command[0].text or ""
    if verdict[0] is not Danger.DANGEROUS and PurePosixPath(head.split()[0] if head.split() else "").name in _DELETERS:
        return _bad(f"deletes what parallel finds (parallel {head.split()[0]})")
    return verdict


def _eval(c: _Call) -> Verdict:
    return c.joined(c.args, "eval")


def _trap(c: _Call) -> Verdict:
    o = _opts(c.args)
    if o.has("-l", "-p") or len(o.pos) < 2 or o.pos[0].text in ("-", ""):
        return SAFE
    return c.joined(o.pos[:1], "trap")


def _source(c: _Call) -> Verdict:
    if not c.args:
        return MODERATE
    script = c.args[0]
    return MODERATE if script.text is not None else _bad(f"runs a script built at run time ({c.name} {script.show})")


def _cd(c: _Call) -> Verdict:
    o = _opts(c.args)
    target = o.pos[0] if o.pos else _lit("~")
    if target.text == "-" or c.outside(target):
        c.scan.cwd_outside = True
    return SAFE


def _from_stdin(c: _Call, what: str, on_text: Callable[[str], Verdict]) -> Verdict:
    """A program reading its script from standard input: from a pipe, a file or literal text."""
    stdin = c.stdin
    if stdin is None:
        return MODERATE
    if stdin.kind == "pipe":
        download = " a download" if stdin.show in _DOWNLOADERS else ""
        return _bad(f"pipes{download} into {what} ({c.name})")
    if stdin.text is None:
        return _bad(f"runs a script built at run time ({c.name} {stdin.show})")
    return MODERATE if stdin.kind == "file" else on_text(stdin.text)


def _shell(c: _Call) -> Verdict:
    o = _opts(c.args, "oO", ("--rcfile", "--init-file"), posix=True)
    if o.has("-c"):
        if not o.pos:
            return MODERATE
        return c.joined(o.pos[:1], f"{c.name} -c")
    if o.has("-s") or not o.pos or o.pos[0].text == "-":
        return _from_stdin(c, "a shell", lambda text: c.nested(text, f"{c.name} <<"))
    script = o.pos[0]
    return MODERATE if script.text is not None else _bad(f"runs a script built at run time ({c.name} {script.show})")


# ---- inline code -----------------------------------------------------------------------------

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
    return MODERATE


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
        return MODERATE
    return _from_stdin(c, "an interpreter", lambda code: _inline(f"{c.name} <<", code, lang_name))


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


# ---- SQL and data stores ---------------------------------------------------------------------

_SQL_DESTROYS = re.compile(r"\b(DROP|TRUNCATE|DELETE|ALTER|UPDATE|REPLACE\s+INTO|FLUSHALL|FLUSHDB)\b", re.I)
_SQL_ACCESS = re.compile(r"\b(GRANT|REVOKE)\b", re.I)
_SQL_ESCAPES = re.compile(
    r"\\!|\\(?:i|ir|include|include_relative)\b|\bCOPY\b[^;]*\bPROGRAM\b|^\s*\.(?:shell|system|read|restore)\b",
    re.I | re.M,
)
_MONGO_DESTROYS = re.compile(
    r"drop\w*\s*\(|delete(?:One|Many)|\bremove\s*\(|update(?:One|Many)?\s*\(|replaceOne|findOneAnd\w+"
    r"|renameCollection"
)
_REDIS_DESTROYS = frozenset(
    {"FLUSHALL", "FLUSHDB", "DEL", "UNLINK", "SHUTDOWN", "CONFIG", "DEBUG", "SWAPDB", "RENAME", "SCRIPT",
     "FUNCTION", "EVAL", "EVALSHA", "SLAVEOF", "REPLICAOF", "MIGRATE", "ACL", "CLIENT", "MODULE"}
)


def _sql(client: str, text: str) -> Verdict:
    match = _SQL_DESTROYS.search(text)
    if match:
        return _bad(f"runs SQL that destroys data ({client}: {' '.join(match.group(1).upper().split())})")
    match = _SQL_ACCESS.search(text)
    if match:
        return _bad(f"runs SQL that changes permissions ({client}: {match.group(1).upper()})")
    match = _SQL_ESCAPES.search(text)
    if match:
        return _bad(f"runs SQL that runs commands or files it can't see ({client}: {match.group(0).strip()})")
    return MODERATE


def _sql_client(c: _Call, statements: list[_Word], files: list[_Word]) -> Verdict:
    """SQL from options, files, or standard input: DANGEROUS when destructive or unseen."""
    if files:
        return _bad(f"runs SQL from a file it can't see ({c.name} {files[0].show})")
    for statement in statements:
        if statement.text is None:
            return _bad(f"runs SQL built at run time ({c.name} {statement.show})")
        verdict = _sql(c.name, statement.text)
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    if statements:
        return MODERATE
    stdin = c.stdin
    if stdin is not None and (stdin.kind != "text" or stdin.text is None):
        feed = f"{stdin.show or '...'} | {c.name}" if stdin.kind == "pipe" else f"{c.name} {stdin.show}"
        return _bad(f"runs SQL it can't see ({_show(feed)})")
    return _sql(c.name, stdin.text or "") if stdin is not None else MODERATE


def _psql(c: _Call) -> Verdict:
    o = _opts(c.args, "cfdhpUvoLPFRT", ("--command", "--file", "--dbname", "--host", "--port", "--username",
                                       "--set", "--variable", "--output", "--log-file", "--pset"))
    return _sql_client(c, o.values("-c", "--command"), o.values("-f", "--file"))


def _mysql(c: _Call) -> Verdict:
    o = _opts(c.args, "euhPDS", ("--execute", "--user", "--host", "--port", "--database", "--socket"))
    return _sql_client(c, o.values("-e", "--execute"), [])


def _sqlite(c: _Call) -> Verdict:
    value_options = ("-cmd", "-init", "-separator", "-nullvalue", "-newline", "-mode", "-vfs", "-maxsize")
    o = _opts(c.args, long={"--" + name[1:] for name in value_options}, dash_long=value_options)
    statements = o.values("-cmd", "--cmd") + o.pos[1:]
    return _sql_client(c, statements, o.values("-init", "--init"))


def _sqlcmd(c: _Call) -> Verdict:
    o = _opts(c.args, "QqiSdUP")
    return _sql_client(c, o.values("-Q", "-q"), o.values("-i"))


def _cqlsh(c: _Call) -> Verdict:
    o = _opts(c.args, "efuk", ("--execute", "--file", "--username", "--keyspace"))
    return _sql_client(c, o.values("-e", "--execute"), o.values("-f", "--file"))


def _clickhouse(c: _Call) -> Verdict:
    o = _opts(c.args, "qhud", ("--query", "--queries-file", "--host", "--user", "--database"))
    return _sql_client(c, o.values("-q", "--query"), o.values("--queries-file"))


def _mongosh(c: _Call) -> Verdict:
    o = _opts(c.args, "fup", ("--eval", "--file", "--username", "--password", "--host", "--port"))
    scripts = o.values("-f", "--file") + [w for w in o.pos if (w.text or "").endswith(".js")]
    if scripts:
        return _bad(f"runs a script it can't see ({c.name} {scripts[0].show})")
    for code in o.values("--eval"):
        if code.text is None:
            return _bad(f"runs code built at run time ({c.name} --eval)")
        match = _MONGO_DESTROYS.search(code.text) or _SQL_DESTROYS.search(code.text)
        if match:
            return _bad(f"runs code that destroys data ({c.name}: {_show(match.group(0))})")
    if c.stdin is not None and c.stdin.kind == "pipe":
        return _bad(f"runs code it can't see ({c.name} reading a pipe)")
    return MODERATE


def _redis(c: _Call) -> Verdict:
    o = _opts(c.args, "hpanusrid", ("--user", "--pass", "--pattern", "--tls", "--cacert"))
    words = o.texts()
    if words and words[0].upper() in _REDIS_DESTROYS:
        return _bad(f"runs a command that destroys data ({c.name}: {words[0].upper()})")
    if not words and c.stdin is not None and c.stdin.kind != "text":
        feed = f"{c.stdin.show or '...'} | {c.name}" if c.stdin.kind == "pipe" else f"{c.name} {c.stdin.show}"
        return _bad(f"runs commands it can't see ({_show(feed)})")
    return MODERATE


def _drop_database(c: _Call) -> Verdict:
    if c.name == "mysqladmin" and not {"drop", "flush-privileges", "shutdown"} & set(_opts(c.args).texts()):
        return MODERATE
    if c.name == "pg_restore" and not _opts(c.args, "dfhpUnt").has("-c", "--clean"):
        return MODERATE
    return _bad(f"drops or overwrites a database ({c.name})")


# ---- deletion ---------------------------------------------------------------------------------


def _rm(c: _Call) -> Verdict:
    o = _opts(c.args)
    if o.has("-r", "-R", "-f", "--recursive", "--force", "--no-preserve-root"):
        return _bad("deletes recursively or by force (rm)")
    for target in o.pos:
        if target.text is None and not target.procsub and not _HERE.match(target.raw):
            return _bad(f"deletes a path it can't see (rm {target.show})")
        if c.outside(target):
            return _bad(f"deletes outside the workspace (rm {target.show})")
        if target.glob:
            return _bad(f"deletes by a glob pattern (rm {target.show})")
    return MODERATE


def _delete_inside(c: _Call) -> Verdict:
    """rmdir, unlink, trash: fine in the workspace."""
    for target in _opts(c.args).pos:
        if c.outside(target):
            return _bad(f"deletes outside the workspace ({c.name} {target.show})")
    return MODERATE


def _shred(c: _Call) -> Verdict:
    return _bad(f"destroys files ({c.name})")


def _trash_empty(c: _Call) -> Verdict:
    return _bad(f"empties the trash ({c.name})")


def _gio(c: _Call) -> Verdict:
    o = _opts(c.args)
    sub = o.texts()[:1]
    if sub == ["trash"] and o.has("--empty"):
        return _bad("empties the trash (gio trash --empty)")
    if sub in (["trash"], ["remove"], ["rm"]):
        return _delete_inside(_Call(f"gio {sub[0]}", o.pos[1:], c.stdin, c.scan))
    return MODERATE


# ---- version control --------------------------------------------------------------------------

_GIT_SAFE = frozenset(
    """status log diff show rev-parse ls-files ls-tree ls-remote blame annotate describe shortlog cat-file grep
    rev-list name-rev merge-base show-ref for-each-ref whatchanged count-objects help version var check-ignore
    check-attr verify-commit verify-tag show-branch cherry range-diff fsck""".split()
)
_GIT_FORCE_LETTER = frozenset(
    {"checkout", "switch", "branch", "tag", "rm", "mv", "add", "worktree", "submodule", "fetch", "pull", "clean",
     "update-ref", "symbolic-ref", "remote", "stash", "filter-branch", "notes", "replace", "clone"}
)
_GIT_COMMAND_CONFIG = re.compile(
    r"^(alias\.[^=]*=\s*!|[^=]*(sshcommand|pager|editor|fsmonitor|hookspath|askpass|credential\.helper"
    r"|diff\.external|textconv|\.process|\.clean|\.smudge|gpg\.program|core\.gitproxy))", re.I,
)


def _git(c: _Call) -> Verdict:
    top = _opts(c.args, "Cc", ("--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"),
                posix=True)
    for setting in top.values("-c", "--config-env"):
        if setting.text is None or _GIT_COMMAND_CONFIG.match(setting.text):
            return _bad(f"runs a command set through git config (git -c {setting.show})")
    if not top.pos:
        return SAFE
    sub, args = top.pos[0].text or "", top.pos[1:]
    raw = [w.text or "" for w in args]
    o = _opts(args, "mFCcSOoeb", ("--message", "--file", "--author", "--date", "--format", "--pretty"))
    words = o.texts()
    force = any(a.startswith("--force") for a in raw)
    if sub == "push":
        return _bad("pushes to a remote (git push)")
    if force or (sub in _GIT_FORCE_LETTER and o.has("-f") and sub != "clean"):
        return _bad(f"forces a git operation (git {sub} {'--force' if force else '-f'})")
    match sub:
        case "reset" if o.has("--hard"):
            return _bad("discards work (git reset --hard)")
        case "rebase":
            return MODERATE if o.has("--abort", "--quit") else _bad("rewrites history (git rebase)")
        case "filter-branch" | "filter-repo":
            return _bad(f"rewrites history (git {sub})")
        case "clean":
            if o.has("-f"):
                return _bad("deletes untracked files (git clean -f)")
            return SAFE if o.has("-n", "--dry-run") else MODERATE
        case "branch":
            if o.has("-D"):
                return _bad("deletes a branch (git branch -D)")
            writes = o.has("-d", "--delete", "-m", "-M", "-c", "-C", "--move", "--copy", "-u", "--set-upstream-to",
                           "--unset-upstream", "--edit-description")
            return MODERATE if writes or (words and not o.has("--list", "-l")) else SAFE
        case "tag":
            if o.has("-d", "--delete"):
                return _bad("deletes a tag (git tag -d)")
            return SAFE if not words or o.has("-l", "--list") else MODERATE
        case "stash":
            if words[:1] in (["drop"], ["clear"]):
                return _bad(f"drops stashed work (git stash {words[0]})")
            return SAFE if words[:1] in (["list"], ["show"]) else MODERATE
        case "checkout" if "--" in raw or "." in words:
            return _bad("discards uncommitted changes (git checkout -- ...)")
        case "restore" if not o.has("--staged", "-S") or o.has("--worktree", "-W"):
            return _bad("discards uncommitted changes (git restore)")
        case "update-ref" if o.has("-d"):
            return _bad("deletes a ref (git update-ref -d)")
        case "reflog":
            if words[:1] in (["expire"], ["delete"]):
                return _bad(f"expires history (git reflog {words[0]})")
            return SAFE
        case "gc" if any(a in ("--prune=now", "--prune=all") for a in raw) or "--prune" in raw and "now" in raw:
            return _bad("prunes unreachable commits (git gc --prune=now)")
        case "prune":
            return _bad("prunes unreachable commits (git prune)")
        case "send-email":
            return _bad("sends email (git send-email)")
        case "config":
            return _git_config(o)
        case "remote":
            return SAFE if not words or words[0] in ("show", "get-url", "-v") else MODERATE
        case "clone" if len(o.pos) >= 2:
            return c.targets_outside(o.pos[1:2], "git clone")
        case "worktree" | "submodule" | "notes" if words[:1] in (["list"], ["status"], ["show"]):
            return SAFE
    if sub in _GIT_SAFE:
        outputs = [a for a in raw if a.startswith("--output")]
        return MODERATE if outputs else SAFE
    return MODERATE


def _git_config(o: _Opts) -> Verdict:
    reads = o.has("--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch", "--show-origin")
    words = o.texts()
    if reads or (len(words) == 1 and not o.has("--unset", "--unset-all", "--add", "-e", "--edit")):
        return SAFE
    if words and _GIT_COMMAND_CONFIG.match(words[0] + "="):
        return _bad(f"sets a command git will run (git config {_show(words[0])})")
    if o.has("--global", "--system"):
        return _bad("writes outside the workspace (git config --global)")
    return MODERATE


def _hg(c: _Call) -> Verdict:
    sub = _opts(c.args, "R", ("--repository", "--cwd"), posix=True).texts()[:1]
    if sub == ["push"]:
        return _bad("pushes to a remote (hg push)")
    if sub and sub[0] in ("strip", "rollback", "histedit", "prune"):
        return _bad(f"rewrites history (hg {sub[0]})")
    return MODERATE


def _svn(c: _Call) -> Verdict:
    words = _opts(c.args, "mF", ("--message", "--file", "--username", "--password")).texts()
    if words and words[0] in ("commit", "ci", "import"):
        return _bad(f"commits to a remote (svn {words[0]})")
    remote_edit = ("delete", "del", "remove", "rm", "mkdir", "move", "mv", "copy", "cp", "lock", "propset")
    if words and words[0] in remote_edit and any("://" in w for w in words[1:]):
        return _bad(f"changes a remote repository (svn {words[0]})")
    return MODERATE


# ---- infrastructure ---------------------------------------------------------------------------


def _infra(c: _Call, verb: str) -> Verdict:
    return _bad(f"changes infrastructure ({c.name} {verb})".replace(" )", ")"))


_KUBECTL_READS = frozenset(
    """get describe logs top explain version api-resources api-versions cluster-info events wait diff completion
    help options kustomize port-forward proxy""".split()
)
_KUBECTL_READ_PAIRS = frozenset(
    {("config", "view"), ("config", "get-contexts"), ("config", "current-context"), ("config", "get-clusters"),
     ("config", "get-users"), ("auth", "can-i"), ("auth", "whoami"), ("rollout", "status"), ("rollout", "history")}
)


def _kubectl(c: _Call) -> Verdict:
    o = _opts(c.args, "nslofcL", ("--namespace", "--context", "--cluster", "--kubeconfig", "--server", "--user",
                                  "--token", "--selector", "--output", "--filename", "--container", "--as",
                                  "--as-group", "--request-timeout"))
    words = o.texts()
    if not words:
        return SAFE
    if words[0] in _KUBECTL_READS or tuple(words[:2]) in _KUBECTL_READ_PAIRS:
        return MODERATE if words[0] in ("port-forward", "proxy") else SAFE
    if any(name == "--dry-run" and (value is None or value.text != "none") for name, value in o.flags):
        return MODERATE
    return _infra(c, " ".join(words[:2]) if words[0] in ("rollout", "config", "auth", "certificate") else words[0])


def _helm(c: _Call) -> Verdict:
    words = _opts(c.args, "nf", ("--namespace", "--kube-context", "--kubeconfig", "--values", "--set",
                                 "--version", "--repo")).texts()
    verb = words[0] if words else ""
    if verb in ("install", "upgrade", "uninstall", "delete", "del", "un", "rollback", "push", "test"):
        return _infra(c, verb)
    reads = ("", "list", "ls", "status", "get", "history", "hist", "show", "inspect", "search", "version", "env",
             "template", "lint", "verify")
    if verb in reads or words[1:2] == ["list"]:
        return SAFE
    return MODERATE


def _terraform(c: _Call) -> Verdict:
    words = [w for w in _opts(c.args).texts() if w]
    raw = [w.text or "" for w in c.args]
    verb = " ".join(words[:2]) if words[:1] in (["state"], ["workspace"], ["run-all"]) else (words or [""])[0]
    dangerous = ("apply", "destroy", "import", "taint", "untaint", "refresh", "force-unlock", "state rm",
                 "state mv", "state push", "state replace-provider", "workspace delete", "run-all apply",
                 "run-all destroy")
    if verb in dangerous:
        return _infra(c, verb)
    if any(a.lstrip("-").split("=")[0] == "auto-approve" for a in raw):
        return _infra(c, f"{verb} -auto-approve")
    return SAFE if verb == "version" else MODERATE


def _pulumi(c: _Call) -> Verdict:
    words = _opts(c.args, "sC", ("--stack", "--cwd")).texts()
    pair = tuple(words[:2])
    if words[:1] in (["up"], ["update"], ["destroy"], ["import"], ["refresh"], ["cancel"]) or pair in (
        ("stack", "rm"), ("state", "delete"), ("state", "unprotect"), ("state", "edit")):
        return _infra(c, " ".join(words[:2] if words[0] in ("stack", "state") else words[:1]))
    return MODERATE


def _verbs(*bad: str) -> Callable[[_Call], Verdict]:
    """A deploy tool: DANGEROUS for these verbs (in the first two words, or after ``:``), else MODERATE."""

    def rule(c: _Call) -> Verdict:
        words = _opts(c.args).texts()
        for i, verb in enumerate(words[:2]):
            if verb in bad or verb.rsplit(":", 1)[-1] in bad:
                return _infra(c, " ".join(words[: i + 1]))
        return MODERATE

    return rule


def _vercel(c: _Call) -> Verdict:
    o = _opts(c.args, "tA", ("--token", "--scope", "--local-config"))
    if o.has("--prod", "--production"):
        return _infra(c, "--prod")
    words = o.texts()
    return _infra(c, words[0]) if words[:1] in (["rm"], ["remove"], ["promote"], ["rollback"]) else MODERATE


def _netlify(c: _Call) -> Verdict:
    o = _opts(c.args, "sad", ("--site", "--auth", "--dir"))
    words = o.texts()
    if (words[:1] == ["deploy"] and o.has("--prod", "-p")) or (words and words[0].endswith(":delete")):
        return _infra(c, " ".join(words[:1]) + (" --prod" if o.has("--prod", "-p") else ""))
    return MODERATE


_READ_VERBS = frozenset({"list", "ls", "show", "describe", "get", "info", "status", "logs", "version", "help",
                         "whoami", "read", "lookup", "print", "view", "history", "releases", "search", "doctor"})


def _read_or_infra(extra_reads: Iterable[str] = ()) -> Callable[[_Call], Verdict]:
    """flyctl, heroku, vault: DANGEROUS unless the verb (or its last ``:``/word part) reads."""
    reads = _READ_VERBS | frozenset(extra_reads)

    def rule(c: _Call) -> Verdict:
        words = [w for w in _opts(c.args, "ac", ("--app", "--config", "--address", "--namespace")).texts() if w]
        if not words:
            return SAFE
        verb = words[0]
        last = verb.rsplit(":", 1)[-1] if ":" in verb else (words[1] if len(words) > 1 and verb in (
            "apps", "kv", "token", "policy", "secrets", "auth", "audit", "config", "machine", "machines",
            "volumes", "ips", "certs", "regions") else verb)
        if last in reads or verb in reads:
            return SAFE
        return _infra(c, verb if ":" in verb or last == verb else f"{verb} {last}")

    return rule


_CLOUD_WRITES = frozenset(
    """delete create deploy update set patch remove add reset resize stop start restart import ssh scp submit
    apply attach detach enable disable purge rollback move upgrade scale cancel invoke execute destroy replace
    recreate suspend resume swap terminate""".split()
)


def _cloud(c: _Call) -> Verdict:
    """gcloud, az, doctl, eksctl: the first word that is a verb decides."""
    words = _opts(c.args).texts()
    for i, word in enumerate(words):
        if word in _CLOUD_WRITES or re.match(r"(add|remove|set|delete|create|update)-", word):
            return _infra(c, " ".join(words[: i + 1]))
        if word in ("list", "describe", "show", "get", "info", "version", "help") or word.startswith("list-"):
            return SAFE
    return MODERATE


def _aws(c: _Call) -> Verdict:
    words = _opts(c.args, long=("--profile", "--region", "--output", "--endpoint-url", "--query", "--color",
                                "--ca-bundle", "--cli-read-timeout", "--cli-connect-timeout",
                                "--cli-binary-format")).texts()
    if len(words) < 2 or words[0] == "help" or words[1] in ("help", "wait"):
        return SAFE
    service, op = words[0], words[1]
    if op.startswith(("describe-", "list-", "get-")) or (service, op) in (("s3", "ls"), ("configure", "list")):
        return SAFE
    return _infra(c, f"{service} {op}")


def _ansible(c: _Call) -> Verdict:
    o = _opts(c.args, "iemutl", ("--inventory", "--extra-vars", "--module-name", "--user", "--tags", "--limit"))
    if o.has("--syntax-check", "--list-hosts", "--list-tasks", "--list-tags"):
        return MODERATE
    return _bad(f"runs commands on remote hosts ({c.name})")


_DOCKER_GROUPS = frozenset(
    """container image volume network system builder buildx context plugin secret service stack swarm node config
    trust manifest compose""".split()
)
_DOCKER_READS = frozenset(
    """ps images inspect logs version info history top port stats search diff events ls list df show config
    services""".split()
)
_DOCKER_BREAKS = frozenset({"rm", "rmi", "kill", "stop", "prune", "leave", "down", "remove"})
_DOCKER_PRIVILEGE = re.compile(
    r"^--(privileged|pid=host|userns=host|ipc=host|cap-add|device|security-opt=\S*unconfined)", re.I
)


def _docker(c: _Call) -> Verdict:
    top = _opts(c.args, "Hcl", ("--host", "--context", "--config", "--log-level"), posix=True)
    words = [w.text or "" for w in top.pos]
    if c.name == "docker-compose":
        words = ["compose", *words]
    if not words:
        return SAFE
    group = words[0] if words[0] in _DOCKER_GROUPS else ""
    rest = words[1:] if group else words
    args = top.pos[1:]
    verb = next((w for w in rest if not w.startswith("-")), "")
    named = " ".join(filter(None, [c.name, "" if c.name == "docker-compose" else group, verb]))
    if verb == "push" or "--push" in rest:
        return _bad(f"publishes an image ({named})")
    if group == "compose" and verb == "down" and any(w in ("-v", "--volumes", "--rmi") for w in rest):
        return _bad(f"deletes volumes or images ({named} -v)")
    if verb in _DOCKER_BREAKS and not (group == "compose" and verb == "down"):
        return _bad(f"changes containers or images ({named})")
    if group in ("service", "stack", "swarm", "node", "secret") and verb not in _DOCKER_READS:
        return _bad(f"changes containers or images ({named})")
    if verb in ("run", "create") or (group == "compose" and verb == "run"):
        return _container_run(c, args, named)
    if verb in ("ps", "logs", "ls") or (verb in _DOCKER_READS and group != "compose"):
        return SAFE
    return MODERATE


def _container_run(c: _Call, args: Sequence[_Word], named: str) -> Verdict:
    for i, w in enumerate(args):
        text = w.text or ""
        if _DOCKER_PRIVILEGE.match(text) or (text in ("--pid", "--userns", "--ipc") and i + 1 < len(args)
                                             and args[i + 1].text == "host"):
            return _bad(f"runs a privileged container ({named} {_show(text)})")
        mount = None
        if text in ("-v", "--volume", "--mount") and i + 1 < len(args):
            mount = args[i + 1]
        elif text.startswith(("--volume=", "--mount=")) or (text.startswith("-v") and len(text) > 2):
            mount = _Word(text.split("=", 1)[1] if "=" in text[:9] else text[2:], w.raw)
        if mount is None:
            continue
        spec = mount.text if mount.text is not None else mount.raw
        source = re.search(r"(?:^|,)(?:source|src)=([^,]+)", spec) if "=" in spec else None
        host = source.group(1) if source else spec.split(":", 1)[0] if ":" in spec else ""
        if host and (host.startswith(("/", "~", ".", "$", '"$', "`")) or mount.text is None):
            probe = _Word(None if mount.text is None else host, host)
            if c.outside(probe):
                return _bad(f"mounts a host path outside the workspace ({named} -v {_show(host)})")
    return MODERATE


# ---- the network ------------------------------------------------------------------------------

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _curl(c: _Call) -> Verdict:
    o = _opts(
        c.args, "AbcCdDeEFHKmoQrTtuUwxXyYzP",
        ("--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii", "--json", "--form",
         "--form-string", "--upload-file", "--request", "--output", "--output-dir", "--header", "--user",
         "--user-agent", "--referer", "--cookie", "--cookie-jar", "--dump-header", "--config", "--max-time",
         "--connect-timeout", "--retry", "--proxy", "--write-out", "--url", "--cacert", "--cert", "--key",
         "--resolve", "--mail-rcpt", "--mail-from", "--trace", "--trace-ascii", "--stderr", "--range"),
    )
    for method in o.values("-X", "--request"):
        if method.text is None or method.text.upper() not in _SAFE_METHODS:
            return _bad(f"sends data over the network (curl -X {method.show})")
    senders = ["-F", "-T", "--json", "--form", "--form-string", "--upload-file", "--mail-rcpt"]
    if not o.has("-G", "--get"):
        senders += ["-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii"]
    for name, _ in o.flags:
        if name in senders:
            return _bad(f"sends data over the network (curl {name})")
    if o.has("-K", "--config"):
        return _bad("reads its options from a file it can't see (curl -K)")
    targets = o.values("-o", "--output", "--output-dir", "-D", "--dump-header", "-c", "--cookie-jar", "--trace",
                       "--trace-ascii", "--stderr")
    return c.targets_outside(targets, "curl -o")


def _wget(c: _Call) -> Verdict:
    o = _opts(
        c.args, "OPoaeUitTwQlADR",
        ("--output-document", "--directory-prefix", "--output-file", "--append-output", "--post-data",
         "--post-file", "--method", "--body-data", "--body-file", "--header", "--user-agent", "--execute",
         "--input-file", "--tries", "--timeout", "--user", "--password", "--level"),
    )
    for name, value in o.flags:
        if name in ("--post-data", "--post-file", "--body-data", "--body-file"):
            return _bad(f"sends data over the network (wget {name})")
        if name == "--method" and (value is None or (value.text or "").upper() not in _SAFE_METHODS):
            return _bad(f"sends data over the network (wget --method {value.show if value else ''})")
        if name in ("-e", "--execute") and (value is None or re.search(r"post|method|body", value.text or "?", re.I)):
            return _bad("sends data over the network (wget -e)")
    targets = o.values("-O", "--output-document", "-P", "--directory-prefix", "-o", "--output-file", "-a",
                       "--append-output")
    return c.targets_outside(targets, "wget -O")


def _httpie(c: _Call) -> Verdict:
    o = _opts(c.args, "aApo", ("--auth", "--auth-type", "--print", "--output", "--session", "--verify", "--cert",
                                "--proxy", "--cert-key"))
    if o.has("--form", "-f", "--raw", "--multipart"):
        return _bad(f"sends data over the network ({c.name} --form)")
    words = o.texts()
    if words and re.fullmatch(r"[A-Z]+", words[0]):
        if words[0] not in _SAFE_METHODS:
            return _bad(f"sends data over the network ({c.name} {words[0]})")
        words = words[1:]
    for item in words[1:]:
        match = re.search(r"==|:=|=|:|@", item)
        if match and match.group(0) in (":=", "=", "@"):
            return _bad(f"sends data over the network ({c.name} {_show(item)})")
    return c.targets_outside(o.values("-o", "--output"), f"{c.name} -o")


def _remote(phrase: str) -> Callable[[_Call], Verdict]:
    def rule(c: _Call) -> Verdict:
        return _bad(f"{phrase} ({c.name})")

    return rule


def _is_remote(path: str) -> bool:
    return path.startswith("rsync://") or bool(re.match(r"[^/]*[^/\\]:", path))


def _rsync(c: _Call) -> Verdict:
    o = _opts(c.args, "efTB", ("--rsh", "--exclude", "--include", "--filter", "--files-from", "--exclude-from",
                                "--include-from", "--backup-dir", "--suffix", "--partial-dir", "--temp-dir",
                                "--log-file", "--password-file", "--port", "--bwlimit", "--chmod", "--chown",
                                "--timeout", "--link-dest", "--compare-dest", "--copy-dest"))
    for name, _ in o.flags:
        if name.startswith("--delete") or name in ("--remove-source-files", "--del"):
            return _bad(f"deletes files ({c.name} {name})")
    if any(_is_remote(w.text or "") for w in o.pos):
        return _bad(f"transfers files to or from a remote host ({c.name})")
    return c.targets_outside(o.pos[-1:] if len(o.pos) > 1 else [], c.name)


def _rclone(c: _Call) -> Verdict:
    words = _opts(c.args, long=("--config", "--transfers", "--checkers", "--include", "--exclude")).texts()
    verb = words[0] if words else ""
    if verb in ("delete", "purge", "deletefile", "sync", "move", "moveto", "rmdir", "rmdirs", "cleanup", "dedupe"):
        return _bad(f"deletes files (rclone {verb})")
    if verb in ("copy", "copyto", "copyurl", "rcat", "mkdir", "touch", "bisync", "serve", "mount"):
        return _bad(f"transfers files over the network (rclone {verb})")
    return MODERATE


_GH_WRITES = frozenset(
    """create delete merge close reopen comment edit review ready transfer archive unarchive rename sync set
    upload run rerun cancel enable disable lock unlock pin unpin fork""".split()
)


def _gh(c: _Call) -> Verdict:
    o = _opts(c.args, "RXfFHqt", ("--repo", "--method", "--field", "--raw-field", "--header", "--input", "--jq"))
    words = o.texts()
    if words[:1] == ["api"]:
        methods = [(m.text or "").upper() for m in o.values("-X", "--method")]
        if any(m not in _SAFE_METHODS for m in methods) or o.has("-f", "-F", "--field", "--raw-field", "--input"):
            return _bad("sends data over the network (gh api)")
        return MODERATE
    if words[:2] in (["release", "create"], ["release", "upload"]):
        return _bad(f"publishes a release (gh {' '.join(words[:2])})")
    if len(words) >= 2 and words[1] in _GH_WRITES:
        return _bad(f"acts on GitHub for everyone to see (gh {' '.join(words[:2])})")
    return MODERATE


# ---- writes -----------------------------------------------------------------------------------


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


def _perl_in_place(c: _Call) -> Verdict:
    verdict = _interpreter(c)
    in_place = any(re.match(r"-\w*i", w.text or "") and not (w.text or "").startswith("--") for w in c.args)
    if verdict[0] is Danger.DANGEROUS or not in_place:
        return verdict
    files = _opts(c.args, "eE").pos
    return _worse(verdict, c.targets_outside(files, f"{c.name} -i"))


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


def _date(c: _Call) -> Verdict:
    return MODERATE if _opts(c.args, "dfr").has("-s", "--set") else SAFE


def _hostname(c: _Call) -> Verdict:
    return SAFE if not _opts(c.args).pos else MODERATE


def _history(c: _Call) -> Verdict:
    return _bad("clears the shell history (history -c)") if _opts(c.args).has("-c") else SAFE


def _exec(c: _Call) -> Verdict:
    rest = _opts(c.args, "a", posix=True).pos
    return c.run(rest, stdin=c.stdin) if rest else SAFE


# ---- the machine ------------------------------------------------------------------------------


def _disk(c: _Call) -> Verdict:
    if c.name == "mount" and not c.args:
        return SAFE
    return _bad(f"changes disks or filesystems ({c.name})")


_OCTAL_MODE = re.compile(r"[0-7]{3,4}")


def _chmod(c: _Call) -> Verdict:
    o = _opts(c.args, long=("--reference",))
    if o.has("-R", "--recursive"):
        return _bad("changes permissions recursively (chmod -R)")
    operands = list(o.pos)
    # `chmod -w f`, `chmod -x f`: the mode looks like an option
    symbolic = [f"-{name[1:]}" for name, _ in o.flags if re.fullmatch(r"-[rwxXst]", name)]
    mode = symbolic[0] if symbolic else (operands.pop(0).text or "" if operands and not o.has("--reference") else "")
    if _OCTAL_MODE.fullmatch(mode):
        if int(mode[-1]) & 2:
            return _bad(f"makes files world-writable (chmod {mode})")
        if len(mode) == 4 and int(mode[0]) & 6:
            return _bad(f"sets setuid or setgid bits (chmod {mode})")
    for clause in mode.split(","):
        match = re.fullmatch(r"([ugoa]*)([-+=])([rwxXstugo]*)", clause)
        if not match:
            continue
        who, op, perms = match.groups()
        if op != "-" and "s" in perms:
            return _bad(f"sets setuid or setgid bits (chmod {clause})")
        if op != "-" and "w" in perms and ("o" in who or "a" in who):
            return _bad(f"makes files world-writable (chmod {clause})")
    for target in operands:
        if c.outside(target):
            return _bad(f"changes permissions outside the workspace (chmod {target.show})")
    return MODERATE


def _owner(c: _Call) -> Verdict:
    return _bad(f"changes owners or permissions ({c.name})")


def _machine(c: _Call) -> Verdict:
    return _bad(f"controls the machine or its services ({c.name})")


_SERVICE_READS = frozenset(
    {"status", "show", "list-units", "list-unit-files", "list-timers", "list-sockets", "list-dependencies",
     "is-active", "is-enabled", "is-failed", "cat", "--status-all", "help"}
)


def _services(c: _Call) -> Verdict:
    words = [w.text or "" for w in c.args if not (w.text or "").startswith("-") or w.text == "--status-all"]
    verb = words[1] if c.name == "service" and len(words) > 1 else (words or ["status"])[0]
    return SAFE if verb in _SERVICE_READS else _machine(c)


def _sysctl(c: _Call) -> Verdict:
    o = _opts(c.args)
    return _machine(c) if o.has("-w", "--write", "-p", "--load") or any("=" in t for t in o.texts()) else SAFE


def _kill(c: _Call) -> Verdict:
    """``kill -9 -1`` and ``kill -1`` signal every process; in ``kill -1 123``, -1 is SIGHUP."""
    texts = [w.text for w in c.args]
    return _bad("kills every process (kill -1)") if "-1" in texts[1:] or texts == ["-1"] else MODERATE


def _crontab(c: _Call) -> Verdict:
    o = _opts(c.args, "u")
    if o.has("-l") and not o.has("-r"):
        return SAFE
    return _bad(f"changes scheduled jobs (crontab {o.flags[0][0] if o.flags else ' '.join(o.texts())})".strip())


_PACKAGE_VERBS = frozenset(
    """install remove purge erase uninstall upgrade dist-upgrade full-upgrade autoremove reinstall add del
    refresh downgrade""".split()
)


def _packages(c: _Call) -> Verdict:
    o = _opts(c.args, "o", ("--option",))
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
        return _bad(f"installs or removes system packages ({c.name} {sorted(verbs)[0]})")
    return MODERATE


def _pip(c: _Call) -> Verdict:
    o = _opts(c.args, "tircefp", ("--target", "--prefix", "--root", "--index-url", "--extra-index-url", "--proxy",
                                   "--requirement", "--constraint", "--editable", "--python", "--cache-dir", "--log",
                                   "--src", "--find-links"))
    words = o.texts()
    sub = words[0] if words else ""
    if sub in ("install", "uninstall", "download", "sync"):
        if o.has("--user", "--break-system-packages", "--root", "--system"):
            flag = next(n for n, _ in o.flags if n in ("--user", "--break-system-packages", "--root", "--system"))
            return _bad(f"installs packages outside the workspace ({c.name} {sub} {flag})")
        for target in o.values("-t", "--target", "--prefix"):
            if c.outside(target):
                return _bad(f"installs packages outside the workspace ({c.name} {sub} --target {target.show})")
        return MODERATE
    return SAFE if sub in ("list", "show", "freeze", "check", "help", "inspect") else MODERATE


def _uv(c: _Call) -> Verdict:
    words = _opts(c.args, long=("--python", "--project", "--directory")).texts()
    if words[:1] == ["publish"]:
        return _bad("publishes a package (uv publish)")
    if words[:1] == ["pip"]:
        pip_args = c.args[[w.text for w in c.args].index("pip") + 1 :]
        return _pip(_Call("uv pip", pip_args, c.stdin, c.scan))
    return MODERATE


# ---- publishing -------------------------------------------------------------------------------

_PUBLISH = {
    "yarn": (("publish",), ("npm", "publish")), "pnpm": (("publish",),), "twine": (("upload",),),
    "cargo": (("publish",),), "gem": (("push",),), "poetry": (("publish",),), "flit": (("publish",),),
    "hatch": (("publish",),), "lerna": (("publish",),), "dotnet": (("nuget", "push"),), "nuget": (("push",),),
    "vsce": (("publish",),), "ovsx": (("publish",),), "changeset": (("publish",),),
}


def _publisher(c: _Call) -> Verdict:
    o = _opts(c.args)
    words = o.texts()
    for verb in _PUBLISH.get(c.name, ()):
        if tuple(words[: len(verb)]) == verb:
            return _bad(f"publishes a package ({c.name} {' '.join(verb)})")
    globally = o.has("-g", "--global") or any(n == "--location" and v and v.text == "global" for n, v in o.flags)
    if c.name == "yarn" and words[:1] == ["global"] or globally and words[:1] and words[0] in (
            "install", "i", "add", "uninstall", "remove", "rm", "update", "link"):
        verb = " ".join(words[:2]) if words[:1] == ["global"] else f"{' '.join(words[:1])} -g"
        return _bad(f"installs packages globally ({c.name} {verb})")
    return MODERATE


def _npm(c: _Call) -> Verdict:
    words = _opts(c.args).texts()
    if words[:1] in (["publish"], ["unpublish"]):
        return _bad(f"publishes a package (npm {words[0]})")
    if words[:1] in (["deprecate"], ["owner"], ["dist-tag"], ["access"]) and len(words) > 1:
        return _bad(f"changes a published package (npm {words[0]})")
    verdict = _publisher(c)
    if verdict[0] is Danger.DANGEROUS:
        return verdict
    return SAFE if words[:1] in (["ls"], ["list"], ["view"], ["info"], ["outdated"], ["explain"], ["why"]) else verdict


def _mvn(c: _Call) -> Verdict:
    goals = _opts(c.args, "fPDslbTe", ("--file", "--activate-profiles", "--settings", "--threads")).texts()
    if any(g == "deploy" or g.startswith("deploy:") or g.endswith(":deploy") for g in goals):
        return _bad(f"publishes a package ({c.name} deploy)")
    return MODERATE


def _gradle(c: _Call) -> Verdict:
    tasks = _opts(c.args, "pPDxb", ("--project-dir", "--exclude-task", "--build-file", "--settings-file")).texts()
    for task in tasks:
        name = task.rsplit(":", 1)[-1]
        if name.startswith("publish") and name != "publishToMavenLocal":
            return _bad(f"publishes a package ({c.name} {name})")
    return MODERATE


# ---- the table --------------------------------------------------------------------------------

_RULES: dict[str, Callable[[_Call], Verdict]] = {
    **dict.fromkeys(("sudo", "su", "doas", "pkexec", "run0"), _as_user),
    "env": _env, "nohup": _wrapper(), "nice": _wrapper("n", ("--adjustment",)), "ionice": _ionice,
    "timeout": _timeout, "stdbuf": _wrapper("ioe", ("--input", "--output", "--error")),
    "command": _command_builtin, "builtin": _wrapper(), "exec": _exec, "time": _wrapper("of", ("--output", "--format")),
    "setsid": _wrapper(), "chronic": _wrapper(), "unbuffer": _wrapper(), "coproc": _wrapper(), "busybox": _busybox,
    "xargs": _xargs, "find": _find, "fd": _fd, "watch": _watch, "flock": _flock, "parallel": _parallel,
    **dict.fromkeys(("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash"), _shell),
    "eval": _eval, "trap": _trap, "source": _source, ".": _source, "cd": _cd, "pushd": _cd,
    **dict.fromkeys(("python", "ruby", "node", "php", "Rscript", "osascript", "lua"), _interpreter),
    "perl": _perl_in_place, "deno": _deno, "awk": _awk,
    "psql": _psql, "mysql": _mysql, "sqlite3": _sqlite, "sqlcmd": _sqlcmd, "cqlsh": _cqlsh,
    "clickhouse-client": _clickhouse, "mongosh": _mongosh, "redis-cli": _redis,
    **dict.fromkeys(("dropdb", "dropuser", "mysqladmin", "pg_restore"), _drop_database),
    "rm": _rm, **dict.fromkeys(("rmdir", "unlink", "trash"), _delete_inside), "shred": _shred,
    **dict.fromkeys(("trash-empty", "trash-rm"), _trash_empty), "gio": _gio,
    "git": _git, "hg": _hg, "svn": _svn,
    "kubectl": _kubectl, "helm": _helm, "terraform": _terraform, "pulumi": _pulumi, "aws": _aws,
    **dict.fromkeys(("gcloud", "az", "doctl", "eksctl"), _cloud),
    "cdk": _verbs("deploy", "destroy", "bootstrap"), "sam": _verbs("deploy", "delete", "sync"),
    "serverless": _verbs("deploy", "remove", "rollback"),
    "eb": _verbs("deploy", "terminate", "create", "scale", "setenv", "restore", "swap"),
    "firebase": _verbs("deploy", "delete", "disable"), "vercel": _vercel, "netlify": _netlify,
    "argocd": _verbs("sync", "delete", "create", "set", "rollback", "terminate-op"),
    "flyctl": _read_or_infra(), "heroku": _read_or_infra({"apps", "ps", "config", "addons", "domains", "login"}),
    "vault": _read_or_infra({"login", "path-help"}),
    **dict.fromkeys(("ansible", "ansible-playbook"), _ansible),
    **dict.fromkeys(("docker", "docker-compose"), _docker),
    "curl": _curl, "wget": _wget, **dict.fromkeys(("http", "https", "xh", "xhs"), _httpie),
    "nc": _remote("opens a raw network connection"), "ssh": _remote("runs commands on a remote host"),
    "scp": _remote("copies files to or from a remote host"),
    **dict.fromkeys(("sftp", "ftp", "lftp", "tftp"), _remote("transfers files over the network")),
    "mail": _remote("sends email"), "rsync": _rsync, "rclone": _rclone, "gh": _gh,
    **dict.fromkeys(("cp", "mv", "ln"), _copy_like()), "install": _copy_like("mog"),
    "touch": _all_operands("dtr"), "mkdir": _all_operands("m", ("--mode",)),
    "truncate": _all_operands("sr", ("--size", "--reference")),
    "gzip": _all_operands("S", ("--suffix",), ("-c", "--stdout", "-l", "--list", "-t", "--test")),
    "tee": _tee, "dd": _dd, "sed": _sed, "tar": _tar, "unzip": _unzip, "7z": _seven_zip, "zip": _zip,
    "sort": _sort, "uniq": _second_operand_written("fsw"), "xxd": _second_operand_written("cglosn"),
    "tree": _output_option("-o", short="LPIo", otherwise=SAFE),
    "patch": _output_option("-o", "-d", short="pdioBrDFVYz"),
    "yq": _yq, "rg": _rg, "date": _date, "hostname": _hostname, "history": _history,
    **dict.fromkeys(
        """mkfs fsck fdisk sfdisk gdisk cfdisk parted partprobe mount umount swapon swapoff wipefs losetup mkswap
        blkdiscard cryptsetup tune2fs resize2fs e2fsck lvremove vgremove pvremove lvcreate mdadm zpool""".split(),
        _disk),
    **dict.fromkeys(("chown", "chgrp", "setfacl", "chattr"), _owner), "chmod": _chmod,
    **dict.fromkeys(
        """shutdown reboot halt poweroff init telinit killall pkill systemd-run launchctl modprobe insmod rmmod
        iptables ip6tables nft ufw firewall-cmd""".split(), _machine),
    **dict.fromkeys(("systemctl", "service"), _services), "sysctl": _sysctl, "kill": _kill, "crontab": _crontab,
    **dict.fromkeys(
        """apt apt-get aptitude yum dnf pacman yay paru brew zypper apk snap flatpak port emerge pkg dpkg rpm
        nix-env""".split(), _packages),
    "pip": _pip, "uv": _uv, "npm": _npm, **dict.fromkeys(("yarn", "pnpm"), _publisher),
    **dict.fromkeys(tuple(_PUBLISH), _publisher), "mvn": _mvn, "gradle": _gradle,
}


# ---- the API ----------------------------------------------------------------------------------


def classify_command(command: str) -> Verdict:
    """The danger of a command line and the reason a person reads when asked to approve it.

    The reason is empty for SAFE and MODERATE. Never raises: what can't be inspected is DANGEROUS.
    """
    try:
        return _classify(command, 0)
    except RecursionError:
        return _bad("nested too deeply to see through")
    except Exception:  # a classifier bug must ask, not crash the activity deciding on approval
        return _bad("could not be inspected")


def is_read_only(command: str) -> bool:
    """Whether the command only reads (classified SAFE), so it may be rerun after a crash."""
    return classify_command(command)[0] is Danger.SAFE
