"""SQL and data stores: database clients running statements that destroy data or change
permissions, or statements the classifier can't see (a file, a pipe); dropping databases."""

from __future__ import annotations

import re

from tools.base import Danger
from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, Verdict, Word, bad, opts, shorten

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

