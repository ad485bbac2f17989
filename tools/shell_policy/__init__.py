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

from tools.base import Danger
from tools.shell_policy.table import _TABLE
from tools.shell_policy.verdict import Verdict, _bad
from tools.shell_policy.walk import MAX_CHARS, _classify

__all__ = ["MAX_CHARS", "Verdict", "classify_command", "is_read_only"]


def classify_command(command: str) -> Verdict:
    """The danger of a command line and the reason a person reads when asked to approve it.

    The reason is empty for SAFE and MODERATE. Never raises: what can't be inspected is DANGEROUS.
    """
    try:
        return _classify(command, _TABLE, 0)
    except RecursionError:
        return _bad("nested too deeply to see through")
    except Exception:  # a classifier bug must ask, not crash the activity deciding on approval
        return _bad("could not be inspected")


def is_read_only(command: str) -> bool:
    """Whether the command only reads (classified SAFE), so it may be rerun after a crash."""
    return classify_command(command)[0] is Danger.SAFE
