"""Program names: the aliases that share a rule (``python3.12`` is ``python``, ``podman`` is ``docker``)."""

from __future__ import annotations

import re

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
