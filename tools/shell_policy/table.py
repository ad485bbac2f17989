"""The table: the checks every command passes, the rule for each program, and the programs that
only read (SAFE with any arguments).

A program in neither is MODERATE. Names are matched after ``canonical`` (``names.py``) maps aliases
(``python3.12`` is ``python``, ``podman`` is ``docker``). ``_NO_CODE`` is the stricter table for
running without a sandbox: SAFE there only for commands that cannot run other code.
"""

from __future__ import annotations

from collections.abc import Callable

from tools.shell_policy.databases import (
    _clickhouse,
    _cqlsh,
    _drop_database,
    _mongosh,
    _mysql,
    _psql,
    _redis,
    _sqlcmd,
    _sqlite,
)
from tools.shell_policy.infrastructure import (
    _ansible,
    _aws,
    _cloud,
    _docker,
    _helm,
    _kubectl,
    _netlify,
    _pulumi,
    _read_or_infra,
    _terraform,
    _verbs,
    _vercel,
)
from tools.shell_policy.machine import (
    _at,
    _chmod,
    _crontab,
    _date,
    _disk,
    _fuser,
    _history,
    _hostname,
    _kill,
    _machine,
    _owner,
    _services,
    _sysctl,
)
from tools.shell_policy.network import _curl, _gh, _httpie, _rclone, _remote, _rsync, _wget, sends_runtime
from tools.shell_policy.packages import (
    _PUBLISH,
    _gradle,
    _mvn,
    _npm,
    _packages,
    _publisher,
    _uv,
    judge_pip,
    venv_install,
)
from tools.shell_policy.paths import _getent, reads_secret
from tools.shell_policy.scripts import SHELLS, _awk, _deno, _interpreter, _perl_in_place, _shell, _source, by_path
from tools.shell_policy.version_control import _git, _hg, _svn
from tools.shell_policy.walk import Call, Table
from tools.shell_policy.words import MODERATE, SAFE, Verdict
from tools.shell_policy.wrappers import (
    _as_user,
    _busybox,
    _cd,
    _command_builtin,
    _env,
    _eval,
    _exec,
    _fd,
    _find,
    _flock,
    _ionice,
    _parallel,
    _runs_rest,
    _script,
    _timeout,
    _trap,
    _watch,
    _wrapper,
    _xargs,
    command_variables,
)
from tools.shell_policy.writes import (
    ACCOUNT_PROGRAMS,
    _accounts,
    _all_operands,
    _copy_like,
    _dd,
    _delete_inside,
    _gio,
    _man,
    _mkdir,
    _output_option,
    _rg,
    _rm,
    _second_operand_written,
    _sed,
    _seven_zip,
    _shred,
    _sort,
    _tar,
    _tee,
    _trash_empty,
    _truncate,
    _unzip,
    _yq,
    _zip,
)

_READ_ONLY = frozenset(
    """
    ls ll dir vdir cat tac head tail wc grep ag ack pwd echo printf stat file du df which whereis type
    whoami id groups uname printenv diff cmp comm cut tr jq less more most bat sha1sum sha224sum sha256sum
    sha384sum sha512sum md5sum b2sum cksum sum basename dirname realpath readlink true false test [ seq column
    nl od hexdump hd strings rev fold fmt expand unexpand paste join look zcat bzcat xzcat zgrep zless ps
    pgrep lsof free uptime w who users locale nproc lscpu lsblk lsmod getconf arch tty sleep wait : pushd popd
    dirs set shopt read help apropos whatis cal jobs hash
    """.split()
)


_RULES: dict[str, Callable[[Call], Verdict]] = {
    **dict.fromkeys(("sudo", "su", "doas", "pkexec", "run0", "runuser", "sg"), _as_user),
    "taskset": _runs_rest(1, "", ()), "chrt": _runs_rest(1), "script": _script,
    **dict.fromkeys(("numactl", "unshare", "fakeroot", "firejail", "catchsegv", "dbus-run-session"), _runs_rest()),
    "strace": _runs_rest(0, "oeEpsuabIOSXP"), "ltrace": _runs_rest(0, "oeEpsuaAnS"), "valgrind": _runs_rest(),
    "xvfb-run": _runs_rest(0, "snfepw", ("--server-args", "--server-num", "--auth-file", "--error-file")),
    "env": _env, "nohup": _wrapper(), "nice": _wrapper("n", ("--adjustment",)), "ionice": _ionice,
    "timeout": _timeout, "stdbuf": _wrapper("ioe", ("--input", "--output", "--error")),
    "command": _command_builtin, "builtin": _wrapper(), "exec": _exec, "time": _wrapper("of", ("--output", "--format")),
    "setsid": _wrapper(), "chronic": _wrapper(), "unbuffer": _wrapper(), "coproc": _wrapper(), "busybox": _busybox,
    "xargs": _xargs, "find": _find, "fd": _fd, "watch": _watch, "flock": _flock, "parallel": _parallel,
    **dict.fromkeys(SHELLS, _shell),
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
    "touch": _all_operands("dtr"), "mkdir": _mkdir, "truncate": _truncate, "man": _man,
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
        """shutdown reboot halt poweroff init telinit killall killall5 pkill skill snice systemd-run launchctl modprobe
        insmod rmmod iptables ip6tables nft ufw firewall-cmd""".split(), _machine),
    **dict.fromkeys(("systemctl", "service"), _services), "sysctl": _sysctl, "kill": _kill, "crontab": _crontab,
    "fuser": _fuser, "at": _at, "batch": _at, **dict.fromkeys(ACCOUNT_PROGRAMS, _accounts), "getent": _getent,
    **dict.fromkeys(
        """apt apt-get aptitude yum dnf pacman yay paru brew zypper apk snap flatpak port emerge pkg dpkg rpm
        nix-env""".split(), _packages),
    "pip": judge_pip, "uv": _uv, "npm": _npm, **dict.fromkeys(("yarn", "pnpm"), _publisher),
    **dict.fromkeys(tuple(_PUBLISH), _publisher), "mvn": _mvn, "gradle": _gradle,
}

# Every command, whatever its program: secret files named, scripts run by path, run-time values in a
# network lookup or request, variables naming a command to run, installs into the workspace's venv.
_CHECKS = (reads_secret, by_path, sends_runtime, command_variables, venv_install)

_TABLE = Table(_RULES, _READ_ONLY, _CHECKS)


def _strict(rule: Callable[[Call], Verdict], *risky: str) -> Callable[[Call], Verdict]:
    """A rule that is MODERATE when any of these arguments is given (``find -exec``, ``env CMD``)."""

    def strict(c: Call) -> Verdict:
        return MODERATE if any((w.text or "").split("=")[0] in risky for w in c.args) else rule(c)

    return strict


def _no_operands(c: Call) -> Verdict:
    """``env``, ``command -v x``: SAFE only when they run nothing."""
    words = [w.text or "" for w in c.args]
    if c.name == "command":
        return SAFE if words[:1] in (["-v"], ["-V"]) else MODERATE
    return SAFE if not words else MODERATE


# Without a sandbox only what cannot run code counts as read-only: no git (hooks, fsmonitor,
# textconv and pagers set in a config the agent can write), no pager or man, no wrapper, xargs,
# find -exec, nested shell or cloud CLI (credential plugins), no program named by a path.
_NO_CODE = Table(
    {
        **{name: _RULES[name] for name in ("tee", "sed", "sort", "uniq", "xxd", "tree", "yq", "rg", "date",
                                            "hostname", "history", "cd", "pushd")},
        "find": _strict(_RULES["find"], "-exec", "-execdir", "-ok", "-okdir"),
        "fd": _strict(_RULES["fd"], "-x", "--exec", "-X", "--exec-batch"),
        "env": _no_operands, "command": _no_operands,
    },
    _READ_ONLY - {"less", "more", "most", "bat", "zless", "help", "man"},
    _CHECKS,
)
