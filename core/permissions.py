"""Permission rules: which tool calls run without asking, and which never run.

A rule names a tool (a name or glob) and, for the shell, the leading words of a command:
``shell(git push)``, ``file``, ``mcp__github__*``. They come from two places: a project file
of standing rules (``.agent/permissions.toml``, read by the CLI when a task starts, so fixed
for the task and recorded in its input) and "yes, and allow commands like this" answers,
kept in the task's state. The format is in docs/permissions.md.

The workflow only compares strings here: what a call runs was worked out when the model's
reply arrived (``ToolCallRequest.rule_key`` and ``commands``, set by ``tools.declare`` with
the shell parser), so a replay decides the same. An allow rule matches only a call that has
a rule key: a shell call that is one plain command (no list, pipe, substitution,
redirection, nothing it runs in turn), or another tool's call; never a write to the rules
file. "Allow commands like this" means exactly like this: the rule key names what makes a
call worse (``git push origin --force``), and a rule allows only calls whose key names nothing
the rule does not (``shell(git push)`` never allows ``git push --force``). A deny rule matches a shell call when any command in it, anywhere, starts with its
words (after ``sudo``, ``env``, inside ``bash -c`` too).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from fnmatch import fnmatchcase
from typing import Protocol

from pydantic import BaseModel, Field

SHELL_TOOL = "shell"
RULES_FILE = ".agent/permissions.toml"  # in the workspace: read at task start; writing it always asks
_RULE = re.compile(r"^\s*([A-Za-z0-9_.*?\-\[\]]+)\s*(?:\((.*)\))?\s*$", re.S)


class Call(Protocol):
    """What a rule looks at of a tool call (``core.messages.ToolCallRequest``)."""

    @property
    def name(self) -> str: ...
    @property
    def rule_key(self) -> str | None: ...
    @property
    def commands(self) -> list[list[str]]: ...
    @property
    def danger_reason(self) -> str | None: ...


class PermissionRule(BaseModel):
    tool: str  # a tool name or glob
    prefix: list[str] = Field(default_factory=list)  # the shell only: a command's leading words
    # A remembered answer: it matches only calls whose danger reason reads as the approved
    # one's did, "" for none (``cat README`` allowed is no licence for ``cat ~/.ssh/id_rsa``).
    # None (a standing rule): any.
    reason: str | None = None

    @property
    def text(self) -> str:
        return f"{self.tool}({shlex.join(self.prefix)})" if self.prefix else self.tool

    def allows(self, call: Call) -> bool:
        """A call whose key names nothing that makes it worse than the rule names (``--force``,
        ``+refspec``, ``-r``); a standing rule's words lead the command's, a remembered rule's
        are the call's key: its program, subcommand and target (``git push origin``)."""
        if call.rule_key is None or not fnmatchcase(call.name, self.tool):
            return False
        if self.reason is not None and (call.danger_reason or "") != self.reason:
            return False
        if not self.prefix:
            return True
        key = call.rule_key.split(" ")
        if not set(filter(worse, key)) <= set(self.prefix):
            return False
        if self.reason is not None:
            return [w for w in key if not worse(w)] == [w for w in self.prefix if not worse(w)]
        return len(call.commands) == 1 and call.commands[0][: len(self.prefix)] == self.prefix

    def denies(self, call: Call) -> bool:
        if not fnmatchcase(call.name, self.tool):
            return False
        if not self.prefix:
            return True
        return any(_contains(_tokens(words), self.prefix) for words in call.commands)


class Permissions(BaseModel):
    """The standing rules of a task (``TaskInput.permissions``)."""

    allow: list[PermissionRule] = Field(default_factory=list)
    deny: list[PermissionRule] = Field(default_factory=list)
    source: str = ""  # the file they were read from, for people

    def denying(self, call: Call) -> PermissionRule | None:
        return next((rule for rule in self.deny if rule.denies(call)), None)


def allowing(rules: list[PermissionRule], call: Call) -> PermissionRule | None:
    return next((rule for rule in rules if rule.allows(call)), None)


def worse(word: str) -> bool:
    """A word of a rule key that makes a call worse than one without it: an option (``--force``,
    ``-rf``) or a refspec that forces or deletes (``+main``, ``:main``). The key names only those
    of them the gate marks (``tools/shell_policy/rows.py``)."""
    return word[:1] in ("-", "+", ":")


def remembered(call: Call) -> PermissionRule | None:
    """The rule "yes, and allow commands like this for this task" adds for ``call``, or None
    when no rule can be made safe for it (a compound shell line, a write to the rules)."""
    if call.rule_key is None:
        return None
    if call.name == SHELL_TOOL:
        return PermissionRule(tool=SHELL_TOOL, prefix=call.rule_key.split(" "), reason=call.danger_reason or "")
    return PermissionRule(tool=call.name, reason=call.danger_reason or "")


def parse_rule(text: str) -> PermissionRule:
    """``shell(git push)``, ``shell(npm run test:*)`` (a trailing ``*`` or ``:*`` changes
    nothing: every rule is a prefix), ``file``, ``mcp__github__*``. ValueError when malformed."""
    match = _RULE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a rule: write TOOL or shell(COMMAND WORDS)")
    tool, inner = match.group(1), match.group(2)
    prefix = shlex.split(inner) if inner else []
    if prefix and prefix[-1] in ("*", ":*"):
        prefix.pop()
    elif prefix and prefix[-1].endswith(":*"):
        prefix[-1] = prefix[-1][:-2]
    if prefix and tool != SHELL_TOOL:
        raise ValueError(f"{text!r}: only shell rules take command words")
    return PermissionRule(tool=tool, prefix=prefix)


def parse_permissions(text: str, source: str = "") -> Permissions:
    """The rules of a permissions file (TOML: ``allow = [...]``, ``deny = [...]``, at the top
    or under ``[permissions]``). ValueError naming the problem when malformed."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{source or 'permissions'}: not TOML ({err})") from None
    data = data.get("permissions", data)
    unknown = sorted(set(data) - {"allow", "deny"})
    if unknown:
        raise ValueError(f"{source or 'permissions'}: unknown key {unknown[0]!r} (allow and deny are known)")
    rules: dict[str, list[PermissionRule]] = {}
    for kind in ("allow", "deny"):
        listed = data.get(kind, [])
        if not isinstance(listed, list) or not all(isinstance(r, str) for r in listed):
            raise ValueError(f"{source or 'permissions'}: {kind} must be a list of strings")
        try:
            rules[kind] = [parse_rule(r) for r in listed]
        except ValueError as err:
            raise ValueError(f"{source or 'permissions'}: {err}") from None
    return Permissions(allow=rules["allow"], deny=rules["deny"], source=source)


def _tokens(words: list[str]) -> list[str]:
    """A command's words split at whitespace (``bash -c 'git push'``), each also by its name
    without a directory (``/usr/bin/git``): what a deny rule looks for, so it errs on refusing."""
    found: list[str] = []
    for word in words:
        for token in word.split():
            found.append(token)
            if "/" in token and token.rsplit("/", 1)[-1]:
                found[-1:] = [token.rsplit("/", 1)[-1]]
    return found


def _contains(tokens: list[str], prefix: list[str]) -> bool:
    n = len(prefix)
    return any(tokens[i : i + n] == prefix for i in range(len(tokens) - n + 1))
