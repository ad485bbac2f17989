"""Git, cloud CLIs, kubectl and containers: their subcommands as rows (reads run unasked, changes of
history, a cluster, an account or images ask), and code for what rows can't say: git's config and
clone settings, the pager ``git grep -O`` runs, a container's host mounts.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tools.base import Danger
from tools.shell_policy.rows import VALUE_OPTIONS, Row, row
from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad, lit, opts, shorten, worse

# git settings whose value is a command git runs (or a file of settings): ``alias.x=!cmd``, ``core.pager``...
GIT_COMMAND_KEYS = (
    r"(?:alias|submodule\.[^=\s]*\.update)[^=\s]*=\s*!|[^=\s]*(?:sshcommand|pager|editor|fsmonitor|hookspath|askpass"
    r"|credential\.(?:[^=\s]*\.)?helper|diff\.external|textconv|\.process|\.clean|\.smudge|gpg\.(?:[^=\s]*\.)?program"
    r"|core\.gitproxy|\.driver|\.cmd|diff\.[^=\s]*\.command|templatedir|include(?:if\.[^=\s]*)?\.path"
    r"|alternaterefscommand|packobjectshook|remote\.[^=\s]*\.(?:uploadpack|receivepack)|protocol\.ext\.allow|smtpserver)"
)
GIT_COMMAND_CONFIG = re.compile(f"^(?:{GIT_COMMAND_KEYS})", re.I)
_GIT_CONFIG_VERBS = frozenset({"set", "unset", "get", "list", "edit", "rename-section", "remove-section"})


def _git(c: Call) -> Verdict | None:
    """What rows (``GIT``) can't say: ``git config``, ``git clone``, ``git grep -O``."""
    top = opts(c.args, *VALUE_OPTIONS["git"], posix=True)
    sub, args = (top.pos[0].text or "", top.pos[1:]) if top.pos else ("", [])
    raw = [w.text or "" for w in args]
    if sub == "config":
        return _git_config(args)
    if sub == "clone" and not any(a.startswith("--template") for a in raw):
        o = opts(args, "cobju", ("--config", "--origin", "--branch", "--depth", "--jobs", "--upload-pack",
                                 "--reference", "--separate-git-dir"))
        runs = [*o.values("-u", "--upload-pack"), *(v for v in o.values("-c", "--config")  # what it is told to run
                                                   if v.text is None or GIT_COMMAND_CONFIG.match(v.text))]
        if runs:
            return bad(f"sets a command git will run (git clone {runs[0].show})")
        return c.targets_outside(o.pos[1:2], "git clone")  # its directory, when named
    pager = next((a for a in raw if sub == "grep" and a.startswith(("-O", "--open-files-in-pager"))), None)
    if pager is not None:
        value = pager[2:] if pager.startswith("-O") else pager.partition("=")[2]
        return worse(MODERATE, c.nested(value, "git grep -O")) if value else MODERATE
    return None


_G = "git"
_READS = """status log diff show rev-parse ls-files ls-tree ls-remote blame annotate describe shortlog cat-file
    grep rev-list name-rev merge-base show-ref for-each-ref whatchanged count-objects help version var check-ignore
    check-attr verify-commit verify-tag show-branch cherry range-diff fsck""".split()
_FORCE_LETTER = """checkout switch branch tag rm mv add worktree submodule fetch pull update-ref symbolic-ref remote
    stash filter-branch notes replace clone""".split()
_LISTS = r"(?: (?!--(?:unset|edit|set))-\S+)*$|(?:^| )%s (?:-\S+ )*(?:-l|--list)(?= |$)"
# git's subcommands, in order: the first row that matches decides; what none matches runs in the sandbox.
GIT: list[Row] = [
    row("runs another program by option", _G, "runs a command set through git config ({name} {word})",
        ["git -c core.sshCommand='ssh -i key' fetch", "git -c 'alias.x=!rm -rf y' x", "git -c \"$SETTING\" status",
         "git --config-env=core.pager=P log"], ["git -c color.ui=auto log", "git -c user.name=x commit --no-pager"],
        pattern=rf"(?:^| )(?:-c ?|--config-env[= ])(?:[\"'$`]\S*|(?i:{GIT_COMMAND_KEYS}))"),
    row("runs another program by option", _G, "runs another program ({name} {word})",
        ["git fetch --upload-pack='rm -rf x' origin", "git push --receive-pack='rm x' origin main",
         "git -c core.quotepath=off status", "git archive --remote=r --exec=x HEAD", "git fetch --upload-pa=./x origin"],
        ["git fetch origin", "git status", "git -c color.ui=auto log"],
        pattern=r"(?:^| )--(?:upload-p|receive-p|exec)[\w-]*(?:=| )\S*|(?:^| )-c ?core\.\S*"),
    row("runs another program by option", _G, "runs another program on each file ({name} {sub} {word})",
        ["git difftool -x 'rm -rf x' HEAD", "git difftool --extcmd=x HEAD~1", "git mergetool --extcmd=./m"],
        ["git difftool HEAD", "git diff -x"], sub=("difftool", "mergetool"), flags=("-x",), pattern=r"(?:^| )--extc[\w-]*"),
    # Pushing: the flags that make a push worse are part of what a rule must name to allow it.
    row("rewrites or pushes history", _G, "pushes to a remote, forcing, deleting or pushing all ({name} {sub} {word})",
        ["git push --force", "git push -f origin main", "git push origin +HEAD:main", "git push --delete origin x",
         "git push origin :old", "git push --mirror", "git push --all origin", "git push --tags",
         "git push --force-with-lease origin main", "git push --del origin x", "git push --for",
         "git push --force-with-lease"],
        ["git push origin HEAD:main", "git push upstream feature", "git push --follow-tags origin main"],
        sub=("push",), worse=True, flags=("-f", "-d"),  # and --force..., --delete, --mirror, --tags, --all, --prune
        pattern=r"(?:^| )(?:[+:]\S+|--(?:for|de|mi|ta|al|pru)[\w-]*)"),
    row("rewrites or pushes history", _G, "pushes to a remote ({name} {sub})",
        ["git push origin main", "git push", "git -C repo -c color.ui=auto push", "git -C repo push"],
        ["git status", "git pull"], sub=("push",)),
    row("discards work", _G, "forces a git operation ({name} {sub} {word})",
        ["git checkout --force main", "git reset --force", "git checkout -fb x",
         "git branch -f main HEAD~3"], ["git checkout main", "git clean -n", "git commit -m 'x -f'"],
        pattern=r"(?:^| )--force[\w-]*"),
    row("discards work", _G, "forces a git operation ({name} {sub} {word})",
        ["git rm -rf src", "git fetch -f origin", "git add -f secrets.env"], ["git rm src", "git clean -fd"],
        sub=tuple(_FORCE_LETTER), flags=("-f",)),
    row("discards work", _G, "discards work ({name} {sub} --hard)", ["git reset --hard HEAD~3", "git reset --hard"],
        ["git reset HEAD~1", "git reset --soft HEAD~1"], sub=("reset",), flags=("--hard",)),
    row("runs in the sandbox", _G, "", ["git rebase --abort", "git rebase --quit"], ["git rebase -i HEAD~3"],
        verdict=Danger.MODERATE, sub=("rebase",), flags=("--abort", "--quit")),
    row("rewrites or pushes history", _G, "rewrites history ({name} {sub})",
        ["git rebase -i HEAD~3", "git filter-branch --tree-filter 'rm x' HEAD",
         "git filter-repo --path secrets --invert-paths"], ["git rebase --abort"],
        sub=("rebase", "filter-branch", "filter-repo")),
    row("discards work", _G, "deletes untracked files ({name} {sub} -f)", ["git clean -fdx", "git clean -f -d"],
        ["git clean -n", "git clean -d -n"], sub=("clean",), flags=("-f", "--force")),
    row("reads", _G, "", ["git clean -n", "git clean --dry-run -d"], ["git clean -f"], verdict=Danger.SAFE,
        sub=("clean",), flags=("-n", "--dry-run")),
    row("discards work", _G, "deletes a branch ({name} {sub} -D)", ["git branch -D feature", "git branch -vD x"],
        ["git branch -d feature"], sub=("branch",), flags=("-D",)),
    row("discards work", _G, "deletes a tag ({name} {sub} -d)", ["git tag -d v1.0", "git tag --delete v1"],
        ["git tag v1.0"], sub=("tag",), flags=("-d", "--delete")),
    row("reads", _G, "", ["git branch -a", "git branch", "git branch --list 'f*'", "git tag", "git tag -l 'v*'"],
        ["git branch new", "git branch --unset-upstream", "git tag -a v1 -m x"], verdict=Danger.SAFE,
        sub=("branch", "tag"), pattern=rf"(?:^| )branch{_LISTS % 'branch'}|(?:^| )tag{_LISTS % 'tag'}"),
    row("discards work", _G, "drops stashed work ({name} {sub})", ["git stash drop", "git stash clear"],
        ["git stash list", "git stash"], sub=("stash drop", "stash clear")),
    row("discards work", _G, "discards uncommitted changes ({name} {sub} {word})",
        ["git checkout -- .", "git checkout .", "git checkout HEAD -- src/app.py"], ["git checkout -b feature"],
        sub=("checkout",), pattern=r"(?:^| )(?:--|\.)(?= |$)"),
    row("discards work", _G, "discards uncommitted changes ({name} {sub})",
        ["git restore src/app.py", "git restore --staged --worktree x"], ["git restore --staged x"],
        sub=("restore",), flags=("-W", "--worktree")),
    row("runs in the sandbox", _G, "", ["git restore --staged x", "git restore -S x"], ["git restore x"],
        verdict=Danger.MODERATE, sub=("restore",), flags=("-S", "--staged")),
    row("discards work", _G, "discards uncommitted changes ({name} {sub})", ["git restore src/app.py", "git restore ."],
        ["git restore --staged x"], sub=("restore",)),
    row("discards work", _G, "deletes a ref ({name} {sub} -d)", ["git update-ref -d refs/heads/x", "git update-ref -d x y"],
        ["git update-ref refs/heads/x HEAD"], sub=("update-ref",), flags=("-d",)),
    row("rewrites or pushes history", _G, "expires history ({name} {sub})",
        ["git reflog expire --expire=now --all", "git reflog delete HEAD@{1}"], ["git reflog"],
        sub=("reflog expire", "reflog delete")),
    row("rewrites or pushes history", _G, "prunes unreachable commits ({name} {sub} {word})",
        ["git gc --prune=now", "git gc --prune=all", "git gc --prune now"], ["git gc"], sub=("gc",),
        pattern=r"--prune(?:=| )(?:now|all)"),
    row("rewrites or pushes history", _G, "prunes unreachable commits ({name} {sub})", ["git prune", "git prune -n"],
        ["git gc"], sub=("prune",)),
    row("sends data over the network", _G, "sends email ({name} {sub})", ["git send-email x.patch", "git send-email -1"],
        ["git format-patch -1"], sub=("send-email",)),
    row("writes where code runs later", _G, "installs hooks from a template ({name} {sub} --template)",
        ["git clone --template=t https://x.example/r", "git init --template t"], ["git clone https://x.example/r"],
        sub=("clone", "init", "submodule"), pattern=r"(?:^| )--template"),
    row("writes where code runs later", _G, "creates .git, whose hooks and config git runs on the host ({name} {sub})",
        ["git init", "git init -q repo"], ["git status"], sub=("init",)),
    row("writes where code runs later", _G, "writes .git/config, which names commands git runs on the host ({name} {sub})",
        ["git remote add o https://x.example/r", "git remote set-url origin x"], ["git remote -v"],
        sub=tuple(f"remote {verb}" for verb in ("add", "set-url", "rename", "remove", "rm", "set-branches"))),
    row("writes where code runs later", _G,
        "writes .gitmodules and .git/config, which choose what git fetches and runs ({name} {sub})",
        ["git submodule add https://x.example/r", "git submodule init"], ["git submodule status"],
        sub=tuple(f"submodule {verb}" for verb in ("add", "init", "deinit", "set-url", "set-branch", "sync"))),
    row("runs in the sandbox", _G, "", ["git log --output=x.txt", "git diff --output=p.diff", "git grep -Ols foo"],
        ["git log"], verdict=Danger.MODERATE, sub=tuple(_READS), pattern=r"(?:^| )(?:--output|--open-files-in-pager|-O)"),
    row("reads", _G, "", ["git status", "git -C repo log", "git log --oneline -n 20", "git log --oneline -n 5",
                          "git show HEAD --stat", "git rev-parse HEAD", "git blame app.py", "git stash list",
                          "git worktree list", "git grep x"],
        ["git commit -m x", "git remote prune origin", "git stash"], verdict=Danger.SAFE,
        sub=(*_READS, "remote show", "remote get-url", "stash list", "stash show", "reflog show", "worktree list",
             "submodule status", "notes list", "notes show")),
    row("reads", _G, "", ["git", "git remote -v", "git -C repo remote", "git reflog"], ["git remote prune origin"],
        verdict=Danger.SAFE, pattern=r"^(?:-\S+ \S+ |-\S+ )*(?:(?:remote|reflog)(?: -v)?)?$"),
]


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
    return bad(f"writes .git/config, which names commands git runs on the host (git config{key})")


_INFRA = "changes infrastructure ({name} {sub})"
_CLOUD_WRITES = """delete create deploy update set patch remove add reset resize stop start restart import ssh scp submit
    apply attach detach enable disable purge rollback move upgrade scale cancel invoke execute destroy replace
    recreate suspend resume swap terminate""".split()
_CLOUD_READS = "list describe show get info version help".split()
_READ_VERBS = """list ls show describe get info status logs version help whoami read lookup print view history releases
    search doctor""".split()
_GROUPS = "apps kv token policy secrets auth audit config machine machines volumes ips certs regions".split()
_DOCKER_GROUPS = """container image volume network system builder buildx context plugin secret service stack swarm node
    config trust manifest compose""".split()
_DOCKER_READS = "ps images inspect logs version info history top port stats search diff events ls list df show".split()
_BREAKS = "rm rmi kill stop prune leave remove".split()
_D = "docker docker-compose"
# Cloud CLIs and containers: reads run unasked, changes ask.
CLOUD: list[Row] = [
    row("changes infrastructure", "gcloud az doctl eksctl", "changes infrastructure ({name} {word})",
        ["gcloud compute instances delete vm-1 --zone z", "gcloud run deploy api --source .",
         "az group delete -n rg --yes", "doctl compute droplet create x", "az vm add-user x"], ["gcloud compute instances list", "az group show -n rg"],
        pattern=rf"^(?:(?!(?:{'|'.join(_CLOUD_READS)}|list-\S*)(?: |$))\S+ )*?(?:{'|'.join(_CLOUD_WRITES)}"
                r"|(?:add|remove|set|delete|create|update)-\S*)(?= |$)"),
    row("reads", "gcloud az doctl eksctl", "", ["gcloud compute instances list", "az account show", "gcloud version"],
        ["gcloud auth login"], verdict=Danger.SAFE, pattern=rf"(?:^| )(?:{'|'.join(_CLOUD_READS)}|list-\S*)(?= |$)"),
    row("reads", "aws", "", ["aws ec2 describe-instances", "aws s3 ls s3://b", "aws --profile p sts get-caller-identity",
                             "aws ec2 wait instance-running"], ["aws s3 rm s3://b/k"], verdict=Danger.SAFE,
        sub=("* describe-*", "* list-*", "* get-*", "s3 ls", "configure list", "help", "* help", "* wait")),
    row("reads", "aws", "", ["aws", "aws s3"], ["aws s3 rm s3://b/k"], verdict=Danger.SAFE,
        pattern=r"^(?:--\S+ \S+ )*(?:[^-\s]\S*)?$"),
    row("changes infrastructure", "aws", _INFRA,
        ["aws s3 rm s3://bucket/key --recursive", "aws s3 sync . s3://bucket --delete",
         "aws ec2 terminate-instances --instance-ids i-1", "aws --profile prod s3 cp x s3://bucket/"],
        ["aws ec2 describe-instances"], sub=("* *",)),
    row("reads", "flyctl heroku vault", "", ["heroku apps", "vault kv get secret/x", "flyctl status",
                                             "heroku config:get X", "vault login"],
        ["heroku apps:destroy myapp", "vault kv put secret/app token=x"], verdict=Danger.SAFE,
        sub=(*_READ_VERBS, *(f"*:{r}" for r in _READ_VERBS), *(f"{g} {r}" for g in _GROUPS for r in _READ_VERBS))),
    row("reads", "flyctl heroku vault", "", ["heroku", "vault -address=x"], ["flyctl deploy"], verdict=Danger.SAFE,
        pattern=r"^(?:-\S+(?: |$))*$"),
    row("reads", "heroku vault", "", ["heroku ps", "heroku config", "vault path-help x"], ["heroku ps:scale web=2"],
        verdict=Danger.SAFE, sub=("apps", "ps", "config", "addons", "domains", "login", "path-help")),
    row("changes infrastructure", "flyctl heroku vault", _INFRA,
        ["vault kv put secret/app token=x", "flyctl machines destroy x", "vault policy write p f.hcl"], ["vault kv get x"],
        sub=tuple(f"{g} *" for g in _GROUPS)),
    row("changes infrastructure", "flyctl heroku vault", _INFRA, ["heroku apps:destroy myapp", "flyctl deploy"],
        ["flyctl status"]),
    row("publishes a package", _D, "publishes an image ({name} {sub})",
        ["docker push registry.example/app:1", "docker image push x", "docker-compose push"], ["docker pull x"],
        sub=("push", "* push")),
    row("publishes a package", _D, "publishes an image ({name} {sub} --push)",
        ["docker buildx build --push -t x .", "docker build --push ."], ["docker build -t app ."], flags=("--push",)),
    row("deletes", _D, "deletes volumes or images ({name} {sub} {word})",
        ["docker compose down -v", "docker-compose down --rmi all", "docker compose -f c.yml down --volumes"],
        ["docker compose down"], sub=("compose down", "down"), flags=("-v", "--volumes", "--rmi")),
    row("reads", _D, "", ["docker ps -a", "docker images", "docker inspect web", "docker compose logs"],
        ["docker build -t app ."], verdict=Danger.SAFE,
        sub=(*_DOCKER_READS, *(f"{g} {r}" for g in _DOCKER_GROUPS for r in _DOCKER_READS))),
    row("changes containers or images", _D, "changes containers or images ({name} {sub})",
        ["docker rm -f web", "docker system prune -af", "docker volume rm data", "docker stop web", "podman kill web",
         "docker service update web", "docker swarm init", "docker stack deploy -c s.yml x"],
        ["docker ps -a", "docker compose down", "docker service ls", "docker logs stop"],
        sub=(*_BREAKS, *(f"* {b}" for b in _BREAKS), *(f"{g} *" for g in ("service", "stack", "swarm", "node", "secret")))),
    row("changes containers or images", _D, "runs a privileged container ({name} {sub} {word})",
        ["docker run --privileged ubuntu", "docker run --pid host ubuntu", "podman run --cap-add=ALL x"],
        ["docker run --rm app pytest"], sub=("run", "create", "container run", "container create", "compose run", "exec"),
        pattern=r"(?:^| )--(?:privileged|(?:pid|userns|ipc)[= ]host|cap-add|device|security-opt[= ]\S*unconfined)\S*"),
]

# kubectl: reads run unasked, a dry run and port-forward in the sandbox, the rest changes the cluster.
KUBECTL: list[Row] = [
    row("reads", "kubectl", "", ["kubectl get pods -n prod", "kubectl -n prod logs deploy/web",
                                 "kubectl describe pod web", "kubectl logs deploy/web"],
        ["kubectl delete pod x"], verdict=Danger.SAFE, sub=tuple("""get describe logs top explain version api-resources
        api-versions cluster-info events wait diff completion help options kustomize""".split())),
    row("reads", "kubectl", "", ["kubectl", "kubectl config view", "kubectl auth can-i get pods"],
        ["kubectl config set-context x"], verdict=Danger.SAFE,
        pattern=r"^$|(?:^| )(?:config (?:view|get-contexts|current-context|get-clusters|get-users)|auth (?:can-i"
                r"|whoami)|rollout (?:status|history))(?= |$)"),
    row("runs in the sandbox", "kubectl", "", ["kubectl port-forward svc/web 8080:80", "kubectl apply -f x --dry-run=client"],
        ["kubectl apply -f x --dry-run=none"], verdict=Danger.MODERATE, sub=("port-forward", "proxy")),
    row("runs in the sandbox", "kubectl", "", ["kubectl apply -f x --dry-run=client", "kubectl delete pod x --dry-run"],
        ["kubectl apply -f x --dry-run=none"], verdict=Danger.MODERATE, pattern=r"(?:^| )--dry-run(?!=none)(?==| |$)"),
    row("changes infrastructure", "kubectl", "changes infrastructure ({name} {word})",
        ["kubectl rollout restart deploy/web", "kubectl config set-context x"], ["kubectl rollout status deploy/web"],
        sub=("rollout", "config", "auth", "certificate"), pattern=r"(?:rollout|config|auth|certificate) \S+"),
    row("changes infrastructure", "kubectl", "changes infrastructure ({name} {sub})",
        ["kubectl delete namespace prod", "kubectl -n prod apply -f deploy.yaml", "kubectl exec -it web -- sh",
         "kubectl scale deploy web --replicas=0"],
        ["kubectl get pods"]),
]


def _docker(c: Call) -> Verdict | None:
    """``docker run -v /:/host``: a mount of a host path outside the workspace (the rest is rows)."""
    top = opts(c.args, *VALUE_OPTIONS["docker"], posix=True)
    words = [w.text or "" for w in top.pos]
    at = 1 if c.name != "docker-compose" and words[:1] in (["container"], ["compose"]) else 0
    if words[at : at + 1] not in (["run"], ["create"]):
        return None
    args = top.pos[at + 1 :]
    for i, w in enumerate(args):
        text = w.raw if w.text is None else w.text
        if text in ("-v", "--volume", "--mount"):
            mount = args[i + 1] if i + 1 < len(args) else lit("")
        elif text.startswith(("--volume=", "--mount=", "-v")):
            value = text.split("=", 1)[1] if "=" in text[:9] else text[2:]
            mount = Word(None if w.text is None else value, value)
        else:
            continue
        spec = mount.raw if mount.text is None else mount.text
        source = re.search(r"(?:^|,)(?:source|src)=([^,]+)", spec)
        host = source.group(1) if source else spec.split(":", 1)[0] if ":" in spec else ""
        if host and (host.startswith(("/", "~", ".", "$", '"$', "`")) or mount.text is None):
            if c.outside(Word(None if mount.text is None else host, host)):
                return bad(f"mounts a host path outside the workspace ({c.name} {words[at]} -v {shorten(host)})")
    return MODERATE


# The programs this module judges, by name (``table.py`` gathers them).
RULES: dict[str, Callable[[Call], Verdict | None]] = {"git": _git, "docker": _docker, "docker-compose": _docker}
