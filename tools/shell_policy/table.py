"""The table: the rows (each with its examples, verified when the package is imported), the code
for the programs rows can't describe, the checks every command passes, and the programs that
only read. Code whose verdict asks stands; else the first row that matches decides; else the
code's verdict; else SAFE for a program that only reads, MODERATE for the rest.

Names are matched after ``canonical`` (``words.py``) maps aliases (``python3.12`` is ``python``,
``podman`` is ``docker``). The stricter table for running without a sandbox is ``NO_CODE``
(``__init__.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from tools.base import Danger
from tools.shell_policy import infrastructure, paths, scripts, services, wrappers, writes
from tools.shell_policy.paths import reads_secret
from tools.shell_policy.rows import Row, by_program, row
from tools.shell_policy.scripts import by_path
from tools.shell_policy.services import sends_runtime, venv_install
from tools.shell_policy.walk import Call, Table
from tools.shell_policy.words import Verdict
from tools.shell_policy.wrappers import command_variables

READ_ONLY = frozenset(
    """ls ll dir vdir cat tac head tail wc grep ag ack pwd echo printf stat file du df which whereis type
    whoami id groups uname printenv diff cmp comm cut tr jq less more most bat sha1sum sha224sum sha256sum
    sha384sum sha512sum md5sum b2sum cksum sum basename dirname realpath readlink true false test [ seq column
    nl od hexdump hd strings rev fold fmt expand unexpand paste join look zcat bzcat xzcat zgrep zless ps
    pgrep lsof free uptime w who users locale nproc lscpu lsblk lsmod getconf arch tty sleep wait : pushd popd
    dirs set shopt read help apropos whatis cal jobs hash export declare typeset readonly local date hostname
    history sysctl""".split()
)

RULES: dict[str, Callable[[Call], Verdict | None]] = {
    **wrappers.RULES, **scripts.RULES, **writes.RULES, **services.RULES, **infrastructure.RULES,
}

# Every command, whatever its program: secret files named, scripts run by path, run-time values in a
# network lookup or request, variables naming a command to run, installs into the workspace's venv.
CHECKS = (reads_secret, by_path, sends_runtime, command_variables, venv_install)

RUNS_BY_OPTION = "runs another program"
_M, _S = Danger.MODERATE, Danger.SAFE
DISKS = """mkfs fsck fdisk sfdisk gdisk cfdisk parted partprobe mount umount swapon swapoff wipefs losetup mkswap
    blkdiscard cryptsetup tune2fs resize2fs e2fsck lvremove vgremove pvremove lvcreate mdadm zpool"""
MACHINE = """shutdown reboot halt poweroff init telinit killall killall5 pkill skill snice systemd-run launchctl modprobe
    insmod rmmod iptables ip6tables nft ufw firewall-cmd systemctl service"""

ROWS: list[Row] = [
    # Programs that run other programs by an option: one row each.
    row("runs another program by option", "tar", RUNS_BY_OPTION + " ({name} {word})",
        ["tar --checkpoint=1 --checkpoint-action=exec='rm -f x' -cf /dev/null x", "tar -I 'sh -c x' -cf a.tar src",
         "tar --to-command='rm x' -xf a.tar", "tar --use-compress-program=./z -cf a.tar src", "tar -F ./next -cf a.tar x",
         "tar --checkpoint=1 --checkpoint-a=exec=id -cf /dev/null x", "tar --use-comp=./z -cf a.tar src"],
        ["tar -czf a.tgz src", "tar -xf a.tar", "tar --checkpoint=10 -cf a.tar src"], flags=("-I", "-F"),
        # getopt takes any unambiguous abbreviation of a long option: --checkpoint-a is --checkpoint-action
        pattern=r"(?:^| )--(?:checkpoint-a|to-c|use-c|info-s|new-v|rsh-c|rmt-c)[\w-]*"),
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
        ["make -f - all", "echo 'all:;rm -rf x' | make -f -", "make --eval='x:=$(shell id)'", "make --fil=- all"],
        ["make -f Makefile.ci test", "make -j4 test"],
        pattern=r"(?:^| )(?:-f ?|--f[\w-]*[= ]|--mak[\w-]*[= ])(?:-|/dev/stdin)(?= |$)|(?:^| )(?:--ev[\w-]*|-E)(?:=| |$)"),
    row("runs in the sandbox", "make gmake", "", ["make", "make -j4 test"], ["make -f - all", "make --version"],
        verdict=_M),
    row("runs another program by option", "awk", "runs commands from awk code ({name} {word})",
        ["awk 'BEGIN{system(\"rm -rf x\")}'", "awk '{print | \"sh\"}' cmds.txt", "awk 'BEGIN{\"id\" | getline x}'"],
        ["awk '{print $1}' notes.txt", "awk -F: '{print $2}' /etc/passwd"],
        pattern=r"system\s*\(|\|\s*getline|\|&|print[^;}]*\|\s*\""),
    row("writes outside the workspace", "awk", "writes outside the workspace ({name} > {word})",
        ["awk '{print > \"/etc/x\"}' f", "gawk '{print >> \"~/.x\"}' f"], ["awk '{print > \"out.txt\"}' f"],
        pattern=r"(?:(?<=>\")|(?<=> \"))(?:/(?!tmp/|dev/)|~|\.\./)[^\"]*"),
    row("runs another program by option", "sort", RUNS_BY_OPTION + " ({name} {word})",
        ["sort --compress-program=./z big.txt", "sort --compress-program gzip big.txt", "sort --compress=./z big.txt"],
        ["sort big.txt", "sort --check big.txt"], pattern=r"(?:^| )--com[\w-]*"),
    *wrappers.RENAMING,
    *paths.ACCOUNT_ROWS,
    *wrappers.WRAPPERS,
    # Disks, owners, the machine and its services, scheduled jobs.
    row("reads", "mount", "", ["mount", "mount | grep sda"], ["mount /dev/sdb1 /mnt"], pattern="^$", verdict=_S),
    row("changes disks or filesystems", DISKS, "changes disks or filesystems ({name})",
        ["mkfs.ext4 /dev/sdb1", "umount /mnt", "fdisk /dev/sda", "mount /dev/sdb1 /mnt"], ["mount", "lsblk"]),
    row("changes permissions or owners", "chown chgrp setfacl chattr", "changes owners or permissions ({name})",
        ["chown user file", "chattr +i notes.txt", "setfacl -m u:bob:rw x"], ["chmod 644 notes.txt"]),
    row("reads", "systemctl service", "", ["systemctl status nginx", "service nginx status", "systemctl"],
        ["systemctl restart nginx"], verdict=_S,
        pattern=r"^(?:-\S* )*(?:status|show|list-units|list-unit-files|list-timers|list-sockets|list-dependencies"
                r"|is-active|is-enabled|is-failed|cat|help)(?: |$)|^\S+ status$|--status-all|^$"),
    row("controls the machine", MACHINE, "controls the machine or its services ({name})",
        ["shutdown -h now", "systemctl restart nginx", "service nginx stop", "pkill -f worker", "iptables -F"],
        ["systemctl status nginx", "pgrep worker"]),
    row("controls the machine", "sysctl", "controls the machine or its services ({name})",
        ["sysctl -w vm.swappiness=10", "sysctl vm.swappiness=10", "sysctl -p"], ["sysctl -a", "sysctl vm.swappiness"],
        flags=("-w", "--write", "-p", "--load"), pattern="="),
    row("controls the machine", "history", "clears the shell history ({name} {word})", ["history -c", "history -cw"],
        ["history 10"], flags=("-c",)),
    row("runs in the sandbox", "hostname", "", ["hostname box", "hostname -b box"], ["hostname -f"], verdict=_M,
        pattern=r"(?:^| )[^-\s]"),
    row("runs in the sandbox", "date", "", ["date -s 2020-01-01", "date --set=tomorrow"], ["date +%s"], verdict=_M,
        flags=("-s", "--set")),
    row("signals processes it did not start", "fuser", "kills the processes using a file ({name} -k)",
        ["fuser -k 8080/tcp", "fuser -km /mnt"], ["fuser 8080/tcp"], flags=("-k",)),
    row("runs in the sandbox", "at", "", ["at -l", "at -c 3"], ["at now + 1 minute"], verdict=_M,
        flags=("-l", "-c", "-d", "-r")),
    row("writes where code runs later", "at batch", "schedules a job to run later ({name})",
        ["at now + 1 minute", "batch < job.txt", "at -f job.sh noon"], ["at -l"]),
    row("runs as another user", "sudo su doas pkexec run0 runuser sg", "runs as another user ({name})",
        ["sudo apt update", "su -c id bob", "doas ls"], ["sudo --version"]),
    row("reads a secret file", "getent", "reads a secret file ({name} {sub})", ["getent shadow", "getent gshadow root"],
        ["getent hosts x.example"], sub=("shadow", "gshadow")),
    row("deletes", "shred", "destroys files ({name})", ["shred -u key.pem", "srm old.txt"], ["shred --help"]),
    row("deletes", "trash-empty trash-rm", "empties the trash ({name})", ["trash-empty", "trash-rm '*.log'"],
        ["trash-list"]),
    row("rewrites or pushes history", "hg", "pushes to a remote ({name} {sub})", ["hg push", "hg -R repo push"],
        ["hg pull"], sub=("push",)),
    row("rewrites or pushes history", "hg", "rewrites history ({name} {sub})", ["hg strip 3", "hg histedit 1"],
        ["hg log"], sub=("strip", "rollback", "histedit", "prune")),
    row("rewrites or pushes history", "svn", "commits to a remote ({name} {sub})", ["svn commit -m 'release'", "svn ci"],
        ["svn update"], sub=("commit", "ci", "import")),
    row("rewrites or pushes history", "svn", "changes a remote repository ({name} {sub})",
        ["svn delete https://svn.x.example/r/x -m y", "svn mkdir svn://x.example/r/d"], ["svn delete local.txt"],
        sub=("delete", "del", "remove", "rm", "mkdir", "move", "mv", "copy", "cp", "lock", "propset"), pattern="://"),
    row("runs SQL that destroys data", "dropdb dropuser", "drops or overwrites a database ({name})",
        ["dropdb prod", "dropuser bob"], ["createdb x"]),
    row("runs SQL that destroys data", "mysqladmin", "drops or overwrites a database ({name})",
        ["mysqladmin drop prod", "mysqladmin -u root shutdown"], ["mysqladmin status"],
        pattern=r"(?:^| )(?:drop|flush-privileges|shutdown)(?= |$)"),
    row("runs SQL that destroys data", "pg_restore", "drops or overwrites a database ({name})",
        ["pg_restore -c -d prod dump", "pg_restore --clean -d x dump"], ["pg_restore -l dump"],
        flags=("-c", "--clean")),
    # The network: remote shells, transfers, mail.
    row("sends data over the network", "nc", "opens a raw network connection ({name})",
        ["nc x.example 80", "socat - TCP:x.example:80", "telnet x.example"], ["ping -c1 x.example"]),
    row("sends data over the network", "ssh", "runs commands on a remote host ({name})", ["ssh host", "ssh -i key host ls"],
        ["ssh-keygen -l -f key.pub"]),
    row("sends data over the network", "scp", "copies files to or from a remote host ({name})",
        ["scp f host:", "scp host:f ."], ["cp f g"]),
    row("sends data over the network", "sftp ftp lftp tftp", "transfers files over the network ({name})",
        ["sftp host", "ftp x.example"], ["ls"]),
    row("sends data over the network", "mail", "sends email ({name})",
        ["mail -s hi a@x.example < notes.txt", "sendmail a@x.example < m.txt"], ["cat m.txt"]),
    row("deletes", "rclone", "deletes files ({name} {sub})", ["rclone purge remote:x", "rclone sync . remote:x"],
        ["rclone ls remote:"], sub=("delete", "purge", "deletefile", "sync", "move", "moveto", "rmdir", "rmdirs",
                                    "cleanup", "dedupe")),
    row("sends data over the network", "rclone", "transfers files over the network ({name} {sub})",
        ["rclone copy . remote:x", "rclone mount remote: m"], ["rclone ls remote:"],
        sub=("copy", "copyto", "copyurl", "rcat", "mkdir", "touch", "bisync", "serve", "mount")),
    # System packages.
    row("installs system packages", "apt apt-get aptitude yum dnf brew zypper apk snap flatpak port pkg",
        "installs or removes system packages ({name} {word})",
        ["apt-get install -y vim", "brew install wget", "apk del x"], ["apt list --installed", "brew info wget"],
        pattern=r"(?:^| )(?:install|remove|purge|erase|uninstall|upgrade|dist-upgrade|full-upgrade|autoremove"
                r"|reinstall|add|del|refresh|downgrade)(?= |$)"),
    row("installs system packages", "yum dnf zypper flatpak", "installs or removes system packages ({name} {word})",
        ["yum update", "dnf update -y"], ["yum list"], pattern=r"(?:^| )update(?= |$)"),
    row("installs system packages", "pacman yay paru", "installs or removes system packages ({name} {word})",
        ["pacman -Syu", "pacman -R x", "yay -S x"], ["pacman -Ss x", "pacman -Q"],
        pattern=r"(?:^| )-(?:[RU]\S*|S(?![^ ]*[silgp])\S*)"),
    row("installs system packages", "dpkg rpm nix-env", "installs or removes system packages ({name} {word})",
        ["dpkg -i app.deb", "rpm -e x", "nix-env --install x"], ["dpkg -l", "rpm -qa"],
        flags=("-i", "-r", "-P", "-U", "-e", "-F", "--install", "--remove", "--purge", "--erase", "--upgrade",
               "--uninstall", "--set")),
    row("installs system packages", "emerge", "installs or removes system packages ({name} {word})",
        ["emerge vim", "emerge -av x"], ["emerge --info"], pattern=r"(?:^| )[^-\s]\S*"),
    # Publishing, and installs outside the workspace.
    row("publishes a package", "npm yarn pnpm cargo poetry flit hatch lerna vsce ovsx changeset",
        "publishes a package ({name} {sub})", ["npm publish --access public", "cargo publish", "yarn publish"],
        ["npm pack", "cargo build"], sub=("publish", "unpublish")),
    row("publishes a package", "twine gem nuget", "publishes a package ({name} {sub})",
        ["twine upload dist/*", "gem push app-1.0.gem", "nuget push x.nupkg"], ["gem build x.gemspec"],
        sub=("upload", "push")),
    row("publishes a package", "dotnet yarn", "publishes a package ({name} {word})",
        ["dotnet nuget push app.nupkg", "yarn npm publish"], ["dotnet build"], pattern=r"^(?:nuget push|npm publish)"),
    row("publishes a package", "npm", "changes a published package ({name} {sub})",
        ["npm deprecate x@1 'no'", "npm owner add bob x"], ["npm owner"],
        sub=("deprecate", "owner", "dist-tag", "access"), pattern=r"^\S+ \S"),
    row("publishes a package", "mvn", "publishes a package ({name} deploy)",
        ["mvn clean deploy", "mvn deploy:deploy-file -Dfile=x"], ["mvn package"],
        pattern=r"(?:^| )(?:deploy|\S+:deploy|deploy:\S+)(?= |$)"),
    row("publishes a package", "gradle", "publishes a package ({name} {word})",
        ["./gradlew publish", "gradle :lib:publishToSonatype"], ["gradle build", "gradle publishToMavenLocal"],
        pattern=r"(?:^| |:)publish(?!ToMavenLocal\b)\w*"),
    row("installs packages", "npm yarn pnpm", "installs packages globally ({name} {sub} {word})",
        ["npm install -g typescript", "pnpm add --global x", "npm i --location=global x"], ["npm install"],
        sub=("install", "i", "add", "uninstall", "remove", "rm", "update", "link"),
        flags=("-g", "--global", "--location=global"), pattern=r"--location global"),
    row("installs packages", "yarn", "installs packages globally ({name} global)", ["yarn global add x",
                                                                                 "yarn global remove x"],
        ["yarn add x"], sub=("global",)),
    row("reads", "npm", "", ["npm ls", "npm view x"], ["npm test"], verdict=_S,
        sub=("ls", "list", "view", "info", "outdated", "explain", "why")),
    # Infrastructure: deploys and changes of shared state ask; reads do not.
    row("changes infrastructure", "helm", "changes infrastructure ({name} {sub})",
        ["helm upgrade --install app ./chart", "helm uninstall app", "helm -n prod rollback app 1"], ["helm list -A"],
        sub=("install", "upgrade", "uninstall", "delete", "del", "un", "rollback", "push", "test")),
    row("reads", "helm", "", ["helm list -A", "helm template ./chart", "helm status app"], ["helm repo add x u"],
        verdict=_S, sub=("list", "ls", "status", "get", "history", "hist", "show", "inspect", "search", "version", "env",
                         "template", "lint", "verify")),
    row("changes infrastructure", "terraform", "changes infrastructure ({name} {sub})",
        ["terraform apply", "terraform destroy -auto-approve", "tofu import x y"], ["terraform plan"],
        sub=("apply", "destroy", "import", "taint", "untaint", "refresh", "force-unlock")),
    row("changes infrastructure", "terraform", "changes infrastructure ({name} {word})",
        ["terraform state rm x", "terragrunt run-all apply", "terraform workspace delete dev"], ["terraform state list"],
        pattern=r"(?:^| )(?:state (?:rm|mv|push|replace-provider)|workspace delete|run-all (?:apply|destroy))(?= |$)"),
    row("changes infrastructure", "terraform", "changes infrastructure ({name} {sub} {word})",
        ["terraform plan -auto-approve", "terraform plan --auto-approve=true"], ["terraform plan"],
        flags=("-auto-approve", "--auto-approve")),
    row("reads", "terraform", "", ["terraform version", "tofu version"], ["terraform init"], verdict=_S,
        sub=("version",)),
    row("changes infrastructure", "pulumi", "changes infrastructure ({name} {sub})", ["pulumi up --yes", "pulumi destroy"],
        ["pulumi preview"], sub=("up", "update", "destroy", "import", "refresh", "cancel")),
    row("changes infrastructure", "pulumi", "changes infrastructure ({name} {word})",
        ["pulumi stack rm dev", "pulumi state delete urn"], ["pulumi stack ls"],
        pattern=r"(?:^| )(?:stack rm|state (?:delete|unprotect|edit))(?= |$)"),
    *(row("changes infrastructure", name, "changes infrastructure ({name} {word})",
          [f"{name} {verbs.split()[0]}", f"{name} x {verbs.split()[-1]}"], [f"{name} --help x", f"{name} ls"],
          pattern=rf"(?:^| )(?:\S*:)?(?:{verbs.replace(' ', '|')})(?= |$)") for name, verbs in (
        ("cdk", "deploy destroy bootstrap"), ("sam", "deploy delete sync"), ("serverless", "deploy remove rollback"),
        ("eb", "deploy terminate create scale setenv restore swap"), ("firebase", "deploy delete disable"),
        ("argocd", "sync delete create set rollback terminate-op"))),
    row("changes infrastructure", "vercel", "changes infrastructure ({name} {word})", ["vercel --prod", "vercel -A x --prod"],
        ["vercel dev"], flags=("--prod", "--production")),
    row("changes infrastructure", "vercel", "changes infrastructure ({name} {sub})", ["vercel rm app", "vercel promote u"],
        ["vercel ls"], sub=("rm", "remove", "promote", "rollback")),
    row("changes infrastructure", "netlify", "changes infrastructure ({name} deploy --prod)",
        ["netlify deploy --prod", "netlify deploy -p"], ["netlify deploy"], sub=("deploy",), flags=("--prod", "-p")),
    row("changes infrastructure", "netlify", "changes infrastructure ({name} {word})", ["netlify sites:delete x",
                                                                                      "netlify env:delete X"],
        ["netlify status"], pattern=r"^\S*:delete(?= |$)"),
    row("runs in the sandbox", "ansible ansible-playbook", "", ["ansible-playbook --syntax-check site.yml",
                                                                "ansible all --list-hosts"],
        ["ansible-playbook -i hosts site.yml"], verdict=_M,
        flags=("--syntax-check", "--list-hosts", "--list-tasks", "--list-tags")),
    row("sends data over the network", "ansible ansible-playbook", "runs commands on remote hosts ({name})",
        ["ansible-playbook -i hosts site.yml", "ansible all -m ping"], ["ansible-playbook --syntax-check site.yml"]),
    row("sends data over the network", "gh", "sends data over the network ({name} api)",
        ["gh api -X POST /repos/o/r/issues", "gh api repos/o/r/issues -f title=x"], ["gh api repos/o/r", "gh api -X GET x"],
        sub=("api",), flags=("-f", "-F", "--field", "--raw-field", "--input"),
        pattern=r"(?:^| )(?:-X ?|--method[= ])(?!(?:GET|HEAD|OPTIONS|get|head|options)(?: |$))\S+"),
    row("publishes a package", "gh", "publishes a release ({name} {word})",
        ["gh release create v1.0", "gh release upload v1 a.tgz"], ["gh release list"], sub=("release",),
        pattern=r"release (?:create|upload)(?= |$)"),
    row("sends data over the network", "gh", "acts on GitHub for everyone to see ({name} {word})",
        ["gh pr merge 12", "gh -R o/r issue close 3", "gh repo fork"], ["gh pr view 12", "gh pr list"],
        pattern=r"(?:^| )[a-z-]+ (?:create|delete|merge|close|reopen|comment|edit|review|ready|transfer|archive"
                r"|unarchive|rename|sync|set|upload|run|rerun|cancel|enable|disable|lock|unlock|pin|unpin|fork)(?= |$)"),
    # Package installs run the packages' install scripts and put code where it runs later.
    *services.PACKAGES,
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
        ["rm -rf build", "rm -f notes.txt", "rm --recursive build", "rm -r -i build", "rm --rec build"], ["rm notes.txt", "rm -i notes.txt"],
        flags=("-r", "-R", "-f"), pattern=r"(?:^| )--(?:rec|for|no-p)[\w-]*", worse=True),
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
    *infrastructure.GIT,
    *services.REQUESTS,
    *infrastructure.CLOUD,
    *infrastructure.KUBECTL,
]

TABLE = Table(RULES, READ_ONLY, CHECKS, by_program(ROWS))
