"""The table: the checks every command passes, the rule for each program, and the programs that
only read (SAFE with any arguments).

A program in neither is MODERATE. Names are matched after ``canonical`` (``names.py``) maps aliases
(``python3.12`` is ``python``, ``podman`` is ``docker``). ``_NO_CODE`` is the stricter table for
running without a sandbox: SAFE there only for commands that cannot run other code.
"""

from __future__ import annotations

from collections.abc import Callable

from tools.base import Danger
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
from tools.shell_policy.paths import RELATIVE_PATH, _getent, reads_secret
from tools.shell_policy.rows import Row, Wraps, by_program, row
from tools.shell_policy.scripts import SHELLS, _awk, _deno, _interpreter, _perl_in_place, _shell, _source, by_path
from tools.shell_policy.version_control import _git, _hg, _svn
from tools.shell_policy.walk import Call, Table
from tools.shell_policy.words import MODERATE, SAFE, Verdict
from tools.shell_policy.wrappers import (
    _as_user,
    _cd,
    _command_builtin,
    _env,
    _eval,
    _fd,
    _find,
    _flock,
    _parallel,
    _script,
    _trap,
    _watch,
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
    dirs set shopt read help apropos whatis cal jobs hash export declare typeset readonly local
    """.split()
)


_RULES: dict[str, Callable[[Call], Verdict]] = {
    **dict.fromkeys(("sudo", "su", "doas", "pkexec", "run0", "runuser", "sg"), _as_user),
    "script": _script, "env": _env, "command": _command_builtin,
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

RUNS_BY_OPTION = "runs another program"
RENAMES = "changes what a command name runs"
_W = Wraps
_M = Danger.MODERATE

ROWS: list[Row] = [
    # Programs that run other programs by an option: one row each.
    row("runs another program by option", "tar", RUNS_BY_OPTION + " ({name} {word})",
        ["tar --checkpoint=1 --checkpoint-action=exec='rm -f x' -cf /dev/null x", "tar -I 'sh -c x' -cf a.tar src",
         "tar --to-command='rm x' -xf a.tar", "tar --use-compress-program=./z -cf a.tar src", "tar -F ./next -cf a.tar x"],
        ["tar -czf a.tgz src", "tar -xf a.tar"],
        flags=("--checkpoint-action", "-I", "--use-compress-program", "--to-command", "-F", "--info-script",
               "--new-volume-script", "--rsh-command", "--rmt-command")),
    row("runs another program by option", "sed", RUNS_BY_OPTION + " from its script ({name} {word})",
        ["sed -n '1e rm -f x' notes.txt", "sed 's/a/b/e' notes.txt", "sed -e '$e id' notes.txt"],
        ["sed -n '1,5p' notes.txt", "sed -i 's/a/b/' notes.txt", "sed 's/e/E/g' notes.txt"],
        pattern=r"(?:^|[;{}\n/!\d$])\s*e(?=\s|$|;)|\bs(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1[gpIiMm\d]*e"),
    row("runs another program by option", "vim vi ex nvim view gvim rvim vimdiff evim",
        RUNS_BY_OPTION + " through editor commands ({name} {word})",
        ["vim -es -c '!rm -rf x' notes.txt", "ex -sc '!rm -rf x' notes.txt", "vi +'!id' notes.txt",
         "nvim --cmd 'lua os.execute(\"id\")'", "vim -S session.vim"],
        ["vim notes.txt", "vim -R notes.txt"],
        flags=("-c", "--cmd", "-S", "-s", "-e", "-E", "-u", "-U"), pattern=r"(?:^| )\+\S"),
    row("runs another program by option", "gdb", RUNS_BY_OPTION + " through debugger commands ({name} {word})",
        ["gdb -batch -ex 'shell rm -rf x'", "gdb -ex 'shell id' ./a.out", "gdb -x cmds.gdb ./a.out"],
        ["gdb ./a.out", "gdb -p 1234"],
        flags=("-ex", "-iex", "-x", "-ix", "-batch", "--batch", "--eval-command", "--command", "--init-command",
               "--init-eval-command")),
    row("runs another program by option", "make gmake", RUNS_BY_OPTION + " from rules it reads unseen ({name} {word})",
        ["make -f - all", "echo 'all:;rm -rf x' | make -f -", "make --eval='x:=$(shell id)'"],
        ["make -f Makefile.ci test", "make -j4 test"],
        pattern=r"(?:^| )(?:-f ?|--file[= ]|--makefile[= ])(?:-|/dev/stdin)(?= |$)|(?:^| )(?:--eval|-E)(?:=| |$)"),
    row("runs in the sandbox", "make gmake", "", ["make", "make -j4 test"], ["make -f - all", "make --version"],
        verdict=_M),
    row("runs another program by option", "git", RUNS_BY_OPTION + " ({name} {word})",
        ["git fetch --upload-pack='rm -rf x' origin", "git push --receive-pack='rm x' origin main",
         "git -c core.quotepath=off status", "git archive --remote=r --exec=x HEAD"],
        ["git fetch origin", "git status", "git -c color.ui=auto log"],
        pattern=r"(?:^| )(?:--upload-pack|--receive-pack|--exec)(?:=| )\S*|(?:^| )-c ?core\.\S*"),
    row("runs another program by option", "git", RUNS_BY_OPTION + " on each file ({name} {sub} {word})",
        ["git difftool -x 'rm -rf x' HEAD", "git difftool --extcmd=x HEAD~1", "git mergetool --extcmd=./m"],
        ["git difftool HEAD", "git diff -x"], sub=("difftool", "mergetool"), flags=("-x", "--extcmd")),
    row("runs another program by option", "awk", "runs commands from awk code ({name} {word})",
        ["awk 'BEGIN{system(\"rm -rf x\")}'", "awk '{print | \"sh\"}' cmds.txt", "awk 'BEGIN{\"id\" | getline x}'"],
        ["awk '{print $1}' notes.txt", "awk -F: '{print $2}' /etc/passwd"],
        pattern=r"system\s*\(|\|\s*getline|\|&|print[^;}]*\|\s*\""),
    row("runs another program by option", "sort", RUNS_BY_OPTION + " ({name} {word})",
        ["sort --compress-program=./z big.txt", "sort --compress-program gzip big.txt"], ["sort big.txt"],
        flags=("--compress-program",)),
    # What a command name runs: a hashed path, an alias, a disabled builtin, a relative PATH.
    row("changes what a name runs", "hash", RENAMES + " ({name} {word})",
        ["hash -p /bin/rm ls", "hash -p ./x ls"], ["hash -r", "hash"], flags=("-p",)),
    row("changes what a name runs", "alias", RENAMES + " ({name})",
        ["alias ls='rm -rf x'", "alias g=git ll='ls -l'"], ["alias", "alias ll"], pattern="="),
    row("changes what a name runs", "enable", RENAMES + " ({name} {word})",
        ["enable -n echo", "enable -f ./x.so x"], ["enable -p", "enable"], flags=("-n", "-f", "-d")),
    row("changes what a name runs", "export declare typeset readonly local", RENAMES + " ({name} {word})",
        ["export PATH=.:$PATH", "declare -x PATH=bin", "export PATH=/usr/bin:"],
        ["export PATH=/usr/local/bin:$PATH", "export FOO=1"], pattern=RELATIVE_PATH),
    # Wrappers: the command after their options is judged as if it ran alone.
    *(row("wrapper", name, "", [f"{name} {pre}rm -rf x", f"{name} {pre}git push"], [f"{name} {pre}ls"],
          wraps=wraps) for name, pre, wraps in (
        ("nohup", "", _W(via=False)), ("nice", "-n 10 ", _W("n", ("--adjustment",), via=False)),
        ("stdbuf", "-oL ", _W("ioe", ("--input", "--output", "--error"), via=False)),
        ("builtin", "", _W(via=False)), ("time", "-o t.txt ", _W("of", ("--output", "--format"), via=False)),
        ("setsid", "", _W(via=False)), ("chronic", "", _W(via=False)), ("unbuffer", "", _W(via=False)),
        ("coproc", "", _W(via=False)), ("busybox", "", _W(via=False)), ("exec", "", _W("a", via=False)),
        ("ionice", "-c3 ", _W("cnp", ("--class", "--classdata", "--pid"), via=False)),
        ("timeout", "-s KILL 10 ", _W("sk", ("--signal", "--kill-after"), skip=1, via=False)),
        ("taskset", "-c 0 ", _W(skip=1, floor=_M)), ("chrt", "10 ", _W(skip=1, floor=_M)),
        ("numactl", "--cpunodebind=0 ", _W(floor=_M)), ("unshare", "-r ", _W(floor=_M)), ("fakeroot", "", _W(floor=_M)),
        ("firejail", "", _W(floor=_M)), ("catchsegv", "", _W(floor=_M)), ("dbus-run-session", "", _W(floor=_M)),
        ("strace", "-o t.txt ", _W("oeEpsuabIOSXP", floor=_M)), ("ltrace", "-o t.txt ", _W("oeEpsuaAnS", floor=_M)),
        ("valgrind", "", _W(floor=_M)),
        ("xvfb-run", "-a ", _W("snfepw", ("--server-args", "--server-num", "--auth-file", "--error-file"), floor=_M)),
        ("prlimit", "--nproc=64 ", _W("p", ("--pid", "--output"), floor=_M)),
        ("setarch", "x86_64 -R ", _W(skip=1, floor=_M)), ("linux32", "", _W(floor=_M)), ("linux64", "", _W(floor=_M)),
        ("setpriv", "--no-new-privs ", _W(long=("--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid",
                                                 "--groups", "--inh-caps", "--ambient-caps", "--bounding-set",
                                                 "--securebits", "--pdeathsig", "--selinux-label",
                                                 "--apparmor-profile"), floor=_M)),
        ("choom", "-n 100 -- ", _W("np", ("--adjust", "--pid"), floor=_M)),
    )),
    # Package installs run the packages' install scripts and put code where it runs later.
    row("installs packages", "pip", "installs packages, whose code runs at install and at every import ({name} {sub})",
        ["pip install requests", "pip install -r requirements.txt", "python3 -m pip install x", "pip3 install -e ."],
        ["pip list", "pip show requests", "pip download x"], sub=("install",)),
    row("installs packages", "npm yarn pnpm", "installs packages, whose install scripts run ({name} {sub})",
        ["npm install left-pad", "npm ci", "yarn add x", "pnpm install", "npm i"],
        ["npm test", "npm run build", "npm ls"],
        sub=("install", "i", "in", "ci", "add", "update", "upgrade", "up", "isntall", "install-test", "it")),
    row("installs packages", "cargo gem go pipx bundle composer poetry",
        "installs packages, whose install scripts run ({name} {sub})",
        ["cargo install ripgrep", "gem install rails", "go install x.example/cmd@latest", "pipx install black",
         "bundle install", "composer require x/y", "poetry add x"],
        ["cargo build", "gem list", "go test ./...", "poetry run pytest"],
        sub=("install", "require", "add", "get", "inject")),
    # Must ask: deletes, empties or moves out what rewind cannot be asked about.
    row("deletes", "rm", "deletes recursively or by force ({name})",
        ["rm -rf build", "rm -f notes.txt", "rm --recursive build", "rm -r -i build"], ["rm notes.txt", "rm -i notes.txt"],
        flags=("-r", "-R", "-f", "--recursive", "--force", "--no-preserve-root"), worse=True),
    row("deletes", "unlink", "deletes a file ({name})", ["unlink notes.txt", "unlink a/b.txt"], ["unlink --help"]),
    row("empties or destroys files", "sort", "writes over a file ({name} {word})",
        ["sort -o notes.txt /dev/null", "sort --output=notes.txt notes.txt", "sort -ro out.txt in.txt"],
        ["sort notes.txt", "sort -rn notes.txt"], flags=("-o", "--output")),
    row("empties or destroys files", "fallocate", "destroys part of a file in place ({name} {word})",
        ["fallocate --punch-hole -o 0 -l 4096 data.bin", "fallocate -c -o 0 -l 4096 data.bin",
         "fallocate --zero-range -l 1 data.bin"],
        ["fallocate -l 1M disk.img"],
        flags=("--punch-hole", "-p", "--collapse-range", "-c", "--zero-range", "-z", "--insert-range", "-i",
               "--dig-holes", "-d")),
    row("empties or destroys files", "mv", "moves files out of the workspace ({name} {word})",
        ["mv notes.txt /tmp/", "mv -t /tmp notes.txt", "mv a b /tmp/x"], ["mv /tmp/x .", "mv old.py new.py"],
        pattern=r"(?:^| )/tmp(?:/\S*)?$|(?:^| )(?:-t ?|--target-directory=)/tmp(?:/\S*)?"),
    # Pushing: the flags that make a push worse are part of what a rule must name to allow it.
    row("rewrites or pushes history", "git", "pushes to a remote, forcing, deleting or pushing all ({name} {sub} {word})",
        ["git push --force", "git push -f origin main", "git push origin +HEAD:main", "git push --delete origin x",
         "git push origin :old", "git push --mirror", "git push --all origin", "git push --tags",
         "git push --force-with-lease origin main"],
        ["git push origin HEAD:main", "git push upstream feature"], sub=("push",), worse=True,
        flags=("--force", "-f", "--force-with-lease", "--force-if-includes", "--delete", "-d", "--mirror", "--all",
               "--tags", "--prune"), pattern=r"(?:^| )[+:]\S+"),
    row("rewrites or pushes history", "git", "pushes to a remote ({name} {sub})",
        ["git push origin main", "git push", "git -C repo -c color.ui=auto push"], ["git status", "git pull"],
        sub=("push",)),
]

_TABLE = Table(_RULES, _READ_ONLY, _CHECKS, by_program(ROWS))


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
    by_program(r for r in ROWS if r.wraps is None and r.verdict is not Danger.SAFE),
)
