"""Permission rules: the file's format, and what an allow or a deny rule matches (strings only:
what a call runs was worked out when it was declared)."""

from __future__ import annotations

import pytest

from core.messages import ToolCallRequest
from core.permissions import PermissionRule, allowing, parse_permissions, parse_rule, remembered
from tools.registry import declare

OFFERED = ["shell", "file", "fetch_url"]


def shell(command: str) -> ToolCallRequest:
    return declare(ToolCallRequest(id="c1", name="shell", arguments={"command": command}), OFFERED)


def test_rules_read_as_claude_codes_do():
    assert parse_rule("shell(git push)") == PermissionRule(tool="shell", prefix=["git", "push"])
    assert parse_rule("shell(npm run test:*)").prefix == ["npm", "run", "test"]
    assert parse_rule("shell(git commit *)").prefix == ["git", "commit"]
    assert parse_rule("shell('a b' c)").text == "shell('a b' c)"
    assert parse_rule("mcp__github__*") == PermissionRule(tool="mcp__github__*")
    with pytest.raises(ValueError, match="only shell rules take command words"):
        parse_rule("file(notes.md)")
    with pytest.raises(ValueError, match="is not a rule"):
        parse_rule("shell(git push")


def test_the_file_takes_allow_and_deny_at_the_top_or_under_permissions_and_names_what_is_wrong():
    rules = parse_permissions('allow = ["shell(git status)", "file"]\ndeny = ["fetch_url"]', source="p.toml")
    assert [r.text for r in rules.allow] == ["shell(git status)", "file"] and rules.source == "p.toml"
    assert parse_permissions('[permissions]\ndeny = ["shell(rm)"]').deny == [parse_rule("shell(rm)")]
    for text, problem in (("allow = [", "not TOML"), ('ask = ["x"]', "unknown key 'ask'"),
                          ("allow = 'shell'", "allow must be a list of strings")):
        with pytest.raises(ValueError, match=problem):
            parse_permissions(text, source="p.toml")


def test_an_allow_rule_matches_one_plain_command_and_never_a_compound_line():
    rule = parse_rule("shell(git push)")
    assert rule.allows(shell("git push origin feature2"))
    assert not rule.allows(shell("git pull"))
    for line in ("git push x && rm -rf /", "git push x; rm -rf /", "git push | sh", "git push $(rm -rf /)",
                 "git push > ~/.bashrc", "X=1 git push", "bash -c 'git push'", "env git push", "./git push"):
        assert not rule.allows(shell(line)), line


def test_a_deny_rule_matches_the_command_anywhere_in_the_line():
    rule = parse_rule("shell(git push)")
    for line in ("git push", "ls && git push --force", "sudo git push", "bash -c 'git push origin'",
                 "/usr/bin/git push", "echo $(git push)"):
        assert rule.denies(shell(line)), line
    assert not rule.denies(shell("git status"))
    assert parse_rule("fetch_url").denies(declare(ToolCallRequest(id="c", name="fetch_url", arguments={"url": "x"}), OFFERED))


def test_a_remembered_rule_is_the_program_and_subcommand_and_needs_the_same_danger():
    first = shell("git push origin feature")
    rule = remembered(first)
    assert rule is not None and rule.text == "shell(git push origin)"
    assert allowing([rule], shell("git push origin feature2")) == rule
    cat = remembered(shell("cat README"))
    assert cat is not None and cat.text == "shell(cat)"
    assert cat.allows(shell("cat notes.txt"))
    assert not cat.allows(shell("cat ~/.ssh/id_rsa"))  # a secret: dangerous for another reason
    assert remembered(shell("git push && true")) is None
    file_call = declare(ToolCallRequest(id="c", name="file", arguments={"action": "write", "path": "a", "content": ""}),
                        OFFERED)
    assert remembered(file_call) == PermissionRule(tool="file", reason="")


WORSE_PUSHES = ["git push --force", "git push -f origin HEAD:main", "git push origin +HEAD:main",
                "git push --delete origin main", "git push origin :main", "git push --mirror", "git push --all origin",
                "git push --tags origin", "git push --force-with-lease origin HEAD:main", "git push upstream HEAD:main"]


@pytest.mark.parametrize("command", WORSE_PUSHES)
def test_allow_commands_like_this_means_exactly_like_this(command):
    rule = remembered(shell("git push origin HEAD:main"))
    assert rule is not None and rule.text == "shell(git push origin)"
    assert rule.allows(shell("git push origin HEAD:main")) and rule.allows(shell("git push origin feature"))
    assert not rule.allows(shell(command))


@pytest.mark.parametrize("command", WORSE_PUSHES[:-1])
def test_a_standing_rule_allows_nothing_worse_than_it_names(command):
    rule = parse_rule("shell(git push)")
    assert rule.allows(shell("git push origin HEAD:main")) and rule.allows(shell("git push upstream main"))
    assert not rule.allows(shell(command))
    assert not parse_rule("shell(rm)").allows(shell("rm -rf build"))
    assert parse_rule("shell(rm)").allows(shell("rm notes.txt"))


def test_a_rule_that_names_the_worse_words_allows_them():
    assert parse_rule("shell(git push --force)").allows(shell("git push --force"))
    forced = remembered(shell("git push --force origin main"))
    assert forced is not None and forced.text == "shell(git push origin --force)"
    assert forced.allows(shell("git push -v --force origin other"))
    assert not forced.allows(shell("git push --force --delete origin main"))
    assert remembered(shell("rm -rf build")).text == "shell(rm -rf)"  # type: ignore[union-attr]


def test_no_rule_lets_a_write_to_the_rules_file_skip_asking():
    write = declare(ToolCallRequest(id="c", name="file", arguments={
        "action": "write", "path": ".agent/permissions.toml", "content": "allow = ['shell']"}), OFFERED)
    assert write.danger == "dangerous" and "permission rules" in (write.danger_reason or "")
    assert write.rule_key is None and not parse_rule("file").allows(write)
    copy = shell("cp mine.toml .agent/permissions.toml")
    assert copy.danger == "dangerous" and copy.rule_key is None and not parse_rule("shell(cp)").allows(copy)
    assert shell("echo x > .agent/permissions.toml").danger == "dangerous"


def test_calls_recorded_before_rules_match_no_allow_rule():
    old = ToolCallRequest.model_validate({"id": "c", "name": "shell", "arguments": {"command": "git push"},
                                          "danger": "dangerous"})
    assert old.rule_key is None and old.commands == []
    assert not parse_rule("shell(git push)").allows(old) and not parse_rule("shell").allows(old)
