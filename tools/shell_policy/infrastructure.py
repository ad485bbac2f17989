"""Infrastructure, cloud and containers: ``kubectl``, ``helm``, ``terraform``, ``pulumi``, the cloud
CLIs, deploy tools, ``ansible``, and ``docker``/``podman``: reads are fine, changes ask."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad, opts, shorten


def _infra(c: Call, verb: str) -> Verdict:
    return bad(f"changes infrastructure ({c.name} {verb})".replace(" )", ")"))


_KUBECTL_READS = frozenset(
    """get describe logs top explain version api-resources api-versions cluster-info events wait diff completion
    help options kustomize port-forward proxy""".split()
)
_KUBECTL_READ_PAIRS = frozenset(
    {("config", "view"), ("config", "get-contexts"), ("config", "current-context"), ("config", "get-clusters"),
     ("config", "get-users"), ("auth", "can-i"), ("auth", "whoami"), ("rollout", "status"), ("rollout", "history")}
)


def _kubectl(c: Call) -> Verdict:
    o = opts(c.args, "nslofcL", ("--namespace", "--context", "--cluster", "--kubeconfig", "--server", "--user",
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


def _helm(c: Call) -> Verdict:
    words = opts(c.args, "nf", ("--namespace", "--kube-context", "--kubeconfig", "--values", "--set",
                                 "--version", "--repo")).texts()
    verb = words[0] if words else ""
    if verb in ("install", "upgrade", "uninstall", "delete", "del", "un", "rollback", "push", "test"):
        return _infra(c, verb)
    reads = ("", "list", "ls", "status", "get", "history", "hist", "show", "inspect", "search", "version", "env",
             "template", "lint", "verify")
    if verb in reads or words[1:2] == ["list"]:
        return SAFE
    return MODERATE


def _terraform(c: Call) -> Verdict:
    words = [w for w in opts(c.args).texts() if w]
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


def _pulumi(c: Call) -> Verdict:
    words = opts(c.args, "sC", ("--stack", "--cwd")).texts()
    pair = tuple(words[:2])
    if words[:1] in (["up"], ["update"], ["destroy"], ["import"], ["refresh"], ["cancel"]) or pair in (
        ("stack", "rm"), ("state", "delete"), ("state", "unprotect"), ("state", "edit")):
        return _infra(c, " ".join(words[:2] if words[0] in ("stack", "state") else words[:1]))
    return MODERATE


def _verbs(*verbs: str) -> Callable[[Call], Verdict]:
    """A deploy tool: DANGEROUS for these verbs (in the first two words, or after ``:``), else MODERATE."""

    def rule(c: Call) -> Verdict:
        words = opts(c.args).texts()
        for i, verb in enumerate(words[:2]):
            if verb in verbs or verb.rsplit(":", 1)[-1] in verbs:
                return _infra(c, " ".join(words[: i + 1]))
        return MODERATE

    return rule


def _vercel(c: Call) -> Verdict:
    o = opts(c.args, "tA", ("--token", "--scope", "--local-config"))
    if o.has("--prod", "--production"):
        return _infra(c, "--prod")
    words = o.texts()
    return _infra(c, words[0]) if words[:1] in (["rm"], ["remove"], ["promote"], ["rollback"]) else MODERATE


def _netlify(c: Call) -> Verdict:
    o = opts(c.args, "sad", ("--site", "--auth", "--dir"))
    words = o.texts()
    if (words[:1] == ["deploy"] and o.has("--prod", "-p")) or (words and words[0].endswith(":delete")):
        return _infra(c, " ".join(words[:1]) + (" --prod" if o.has("--prod", "-p") else ""))
    return MODERATE


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


def _ansible(c: Call) -> Verdict:
    o = opts(c.args, "iemutl", ("--inventory", "--extra-vars", "--module-name", "--user", "--tags", "--limit"))
    if o.has("--syntax-check", "--list-hosts", "--list-tasks", "--list-tags"):
        return MODERATE
    return bad(f"runs commands on remote hosts ({c.name})")


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
