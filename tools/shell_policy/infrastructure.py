"""Git, cloud CLIs and containers: programs whose subcommands change shared state (history, a
cluster, an account, images), judged by code where the reason must name more than one word
(``git reset --hard``, ``kubectl rollout restart``, ``aws s3 rm``, ``docker run -v /:/host``);
reads are fine, changes ask. What rows can say about them (pushes, deploys) is in ``table.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad, opts, shorten, worse

_GIT_SAFE = frozenset(
    """status log diff show rev-parse ls-files ls-tree ls-remote blame annotate describe shortlog cat-file grep
    rev-list name-rev merge-base show-ref for-each-ref whatchanged count-objects help version var check-ignore
    check-attr verify-commit verify-tag show-branch cherry range-diff fsck""".split()
)
_GIT_FORCE_LETTER = frozenset(
    {"checkout", "switch", "branch", "tag", "rm", "mv", "add", "worktree", "submodule", "fetch", "pull", "clean",
     "update-ref", "symbolic-ref", "remote", "stash", "filter-branch", "notes", "replace", "clone"}
)
# Keys whose value git runs as a command or reads more config from (include.path can set any of them).
GIT_COMMAND_CONFIG = re.compile(
    r"^((alias|submodule\.[^=]*\.update)[^=]*=\s*!|[^=]*(sshcommand|pager|editor|fsmonitor|hookspath|askpass"
    r"|credential\.([^=]*\.)?helper|diff\.external|textconv|\.process|\.clean|\.smudge|gpg\.([^=]*\.)?program"
    r"|core\.gitproxy|\.driver|\.cmd|diff\.[^=]*\.command|templatedir|include(if\.[^=]*)?\.path"
    r"|alternaterefscommand|packobjectshook|remote\.[^=]*\.(uploadpack|receivepack)|protocol\.ext\.allow|smtpserver))",
    re.I,
)
_WRITES_CONFIG = "writes .git/config, which names commands git runs on the host"
_GIT_CONFIG_VERBS = frozenset({"set", "unset", "get", "list", "edit", "rename-section", "remove-section"})


def _git(c: Call) -> Verdict:
    top = opts(c.args, "Cc", ("--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"),
                posix=True)
    for setting in top.values("-c", "--config-env"):
        if setting.text is None or GIT_COMMAND_CONFIG.match(setting.text):
            return bad(f"runs a command set through git config (git -c {setting.show})")
    if not top.pos:
        return SAFE
    sub, args = top.pos[0].text or "", top.pos[1:]
    raw = [w.text or "" for w in args]
    o = opts(args, "mFCcSOoeb", ("--message", "--file", "--author", "--date", "--format", "--pretty"))
    words = o.texts()
    force = any(a.startswith("--force") for a in raw)
    if (force and sub != "push") or (sub in _GIT_FORCE_LETTER and o.has("-f") and sub != "clean"):  # push: its rows
        return bad(f"forces a git operation (git {sub} {'--force' if force else '-f'})")
    match sub:
        case "reset" if o.has("--hard"):
            return bad("discards work (git reset --hard)")
        case "rebase":
            return MODERATE if o.has("--abort", "--quit") else bad("rewrites history (git rebase)")
        case "filter-branch" | "filter-repo":
            return bad(f"rewrites history (git {sub})")
        case "clean":
            if o.has("-f"):
                return bad("deletes untracked files (git clean -f)")
            return SAFE if o.has("-n", "--dry-run") else MODERATE
        case "branch":
            if o.has("-D"):
                return bad("deletes a branch (git branch -D)")
            writes = o.has("-d", "--delete", "-m", "-M", "-c", "-C", "--move", "--copy", "-u", "--set-upstream-to",
                           "--unset-upstream", "--edit-description")
            return MODERATE if writes or (words and not o.has("--list", "-l")) else SAFE
        case "tag":
            if o.has("-d", "--delete"):
                return bad("deletes a tag (git tag -d)")
            return SAFE if not words or o.has("-l", "--list") else MODERATE
        case "stash":
            if words[:1] in (["drop"], ["clear"]):
                return bad(f"drops stashed work (git stash {words[0]})")
            return SAFE if words[:1] in (["list"], ["show"]) else MODERATE
        case "checkout" if "--" in raw or "." in words:
            return bad("discards uncommitted changes (git checkout -- ...)")
        case "restore" if not o.has("--staged", "-S") or o.has("--worktree", "-W"):
            return bad("discards uncommitted changes (git restore)")
        case "update-ref" if o.has("-d"):
            return bad("deletes a ref (git update-ref -d)")
        case "reflog":
            if words[:1] in (["expire"], ["delete"]):
                return bad(f"expires history (git reflog {words[0]})")
            return SAFE
        case "gc" if any(a in ("--prune=now", "--prune=all") for a in raw) or "--prune" in raw and "now" in raw:
            return bad("prunes unreachable commits (git gc --prune=now)")
        case "prune":
            return bad("prunes unreachable commits (git prune)")
        case "send-email":
            return bad("sends email (git send-email)")
        case "config":
            return _git_config(args)
        case "remote" if words[:1] and words[0] in ("add", "set-url", "rename", "remove", "rm", "set-branches"):
            return bad(f"{_WRITES_CONFIG} (git remote {words[0]})")
        case "remote":
            return SAFE if not words or words[0] in ("show", "get-url", "-v") else MODERATE
        case "clone" | "init" | "submodule" if any(a.startswith("--template") for a in raw):
            return bad(f"installs hooks from a template (git {sub} --template)")
        case "init":
            return bad("creates .git, whose hooks and config git runs on the host (git init)")
        case "submodule" if words[:1] and words[0] in ("add", "init", "deinit", "set-url", "set-branch", "sync"):
            return bad(f"writes .gitmodules and .git/config, which choose what git fetches and runs "
                        f"(git submodule {words[0]})")
        case "clone":
            setting = _clone_setting(args)
            if setting is not None:
                return bad(f"sets a command git will run (git clone {shorten(setting)})")
            return c.targets_outside(o.pos[1:2], "git clone") if len(o.pos) >= 2 else MODERATE
        case "grep" if any(a.startswith(("-O", "--open-files-in-pager")) for a in raw):
            pager = next(a for a in raw if a.startswith(("-O", "--open-files-in-pager")))
            value = pager[2:] if pager.startswith("-O") else pager.partition("=")[2]
            return worse(MODERATE, c.nested(value, "git grep -O")) if value else MODERATE
        case "worktree" | "submodule" | "notes" if words[:1] in (["list"], ["status"], ["show"]):
            return SAFE
    if sub in _GIT_SAFE:
        outputs = [a for a in raw if a.startswith("--output")]
        return MODERATE if outputs else SAFE
    return MODERATE


def _clone_setting(args: list[Word]) -> str | None:
    """What ``git clone`` is told to run: ``-u``/``--upload-pack``, or a ``-c`` setting a command."""
    o = opts(args, "cobju", ("--config", "--origin", "--branch", "--depth", "--jobs", "--upload-pack",
                              "--reference", "--separate-git-dir"))
    for value in o.values("-u", "--upload-pack"):
        return value.raw
    for value in o.values("-c", "--config"):
        if value.text is None or GIT_COMMAND_CONFIG.match(value.text):
            return value.raw
    return None


def _git_config(args: list[Word]) -> Verdict:
    o = opts(args, "f", ("--file", "--blob", "--type", "--default", "--comment", "--value"))
    reads = o.has("--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch", "--show-origin")
    words = o.texts()
    verb = words.pop(0) if words and words[0] in _GIT_CONFIG_VERBS else ""  # git config set KEY VALUE
    if verb in ("get", "list") or reads or (not verb and len(words) == 1 and not o.has(
            "--unset", "--unset-all", "--add", "-e", "--edit")):
        return SAFE
    if words and GIT_COMMAND_CONFIG.match("=".join(words[:2]) if len(words) > 1 else words[0] + "="):
        return bad(f"sets a command git will run (git config {shorten(words[0])})")
    if o.has("--global", "--system"):
        return bad("writes outside the workspace (git config --global)")
    if o.has("-f", "--file", "--blob"):
        return MODERATE
    key = f" {shorten(words[0])}" if words else ""
    return bad(f"{_WRITES_CONFIG} (git config{key})")


def _infra(c: Call, verb: str) -> Verdict:
    return bad(f"changes infrastructure ({c.name} {verb})".replace(" )", ")"))






_READ_VERBS = frozenset({"list", "ls", "show", "describe", "get", "info", "status", "logs", "version", "help",
                         "whoami", "read", "lookup", "print", "view", "history", "releases", "search", "doctor"})


def _read_or_infra(extra_reads: Iterable[str] = ()) -> Callable[[Call], Verdict]:
    """flyctl, heroku, vault: DANGEROUS unless the verb (or its last ``:``/word part) reads."""
    reads = _READ_VERBS | frozenset(extra_reads)

    def rule(c: Call) -> Verdict:
        words = [w for w in opts(c.args, "ac", ("--app", "--config", "--address", "--namespace")).texts() if w]
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


def _cloud(c: Call) -> Verdict:
    """gcloud, az, doctl, eksctl: the first word that is a verb decides."""
    words = opts(c.args).texts()
    for i, word in enumerate(words):
        if word in _CLOUD_WRITES or re.match(r"(add|remove|set|delete|create|update)-", word):
            return _infra(c, " ".join(words[: i + 1]))
        if word in ("list", "describe", "show", "get", "info", "version", "help") or word.startswith("list-"):
            return SAFE
    return MODERATE


def _aws(c: Call) -> Verdict:
    words = opts(c.args, long=("--profile", "--region", "--output", "--endpoint-url", "--query", "--color",
                                "--ca-bundle", "--cli-read-timeout", "--cli-connect-timeout",
                                "--cli-binary-format")).texts()
    if len(words) < 2 or words[0] == "help" or words[1] in ("help", "wait"):
        return SAFE
    service, op = words[0], words[1]
    if op.startswith(("describe-", "list-", "get-")) or (service, op) in (("s3", "ls"), ("configure", "list")):
        return SAFE
    return _infra(c, f"{service} {op}")


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


def _docker(c: Call) -> Verdict:
    top = opts(c.args, "Hcl", ("--host", "--context", "--config", "--log-level"), posix=True)
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
        return bad(f"publishes an image ({named})")
    if group == "compose" and verb == "down" and any(w in ("-v", "--volumes", "--rmi") for w in rest):
        return bad(f"deletes volumes or images ({named} -v)")
    if verb in _DOCKER_BREAKS and not (group == "compose" and verb == "down"):
        return bad(f"changes containers or images ({named})")
    if group in ("service", "stack", "swarm", "node", "secret") and verb not in _DOCKER_READS:
        return bad(f"changes containers or images ({named})")
    if verb in ("run", "create") or (group == "compose" and verb == "run"):
        return _container_run(c, args, named)
    if verb in ("ps", "logs", "ls") or (verb in _DOCKER_READS and group != "compose"):
        return SAFE
    return MODERATE


def _container_run(c: Call, args: Sequence[Word], named: str) -> Verdict:
    for i, w in enumerate(args):
        text = w.text or ""
        if _DOCKER_PRIVILEGE.match(text) or (text in ("--pid", "--userns", "--ipc") and i + 1 < len(args)
                                             and args[i + 1].text == "host"):
            return bad(f"runs a privileged container ({named} {shorten(text)})")
        mount = None
        if text in ("-v", "--volume", "--mount") and i + 1 < len(args):
            mount = args[i + 1]
        elif text.startswith(("--volume=", "--mount=")) or (text.startswith("-v") and len(text) > 2):
            mount = Word(text.split("=", 1)[1] if "=" in text[:9] else text[2:], w.raw)
        if mount is None:
            continue
        spec = mount.text if mount.text is not None else mount.raw
        source = re.search(r"(?:^|,)(?:source|src)=([^,]+)", spec) if "=" in spec else None
        host = source.group(1) if source else spec.split(":", 1)[0] if ":" in spec else ""
        if host and (host.startswith(("/", "~", ".", "$", '"$', "`")) or mount.text is None):
            probe = Word(None if mount.text is None else host, host)
            if c.outside(probe):
                return bad(f"mounts a host path outside the workspace ({named} -v {shorten(host)})")
    return MODERATE


# The programs this module judges, by name (``table.py`` gathers them).
RULES: dict[str, Callable[[Call], Verdict]] = {
    "git": _git, "aws": _aws, **dict.fromkeys(("gcloud", "az", "doctl", "eksctl"), _cloud),
    "flyctl": _read_or_infra(), "heroku": _read_or_infra({"apps", "ps", "config", "addons", "domains", "login"}),
    "vault": _read_or_infra({"login", "path-help"}), **dict.fromkeys(("docker", "docker-compose"), _docker),
}
