"""The gate's rules as rows with examples (issue 39): verified when the package is imported, a
broken row fails that verification, docs/safety.md's table is generated from them, and the package
stays rows plus the code that needs code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from benchmarks import docs
from tools.base import Danger
from tools.shell_policy import classify_command, runs_no_code
from tools.shell_policy.rows import VALUE_OPTIONS, Table, by_program, readme_table, row, verify
from tools.shell_policy.table import ROWS
from tools.shell_policy.walk import classify

PACKAGE = Path(__file__).resolve().parents[2] / "tools" / "shell_policy"


def test_every_row_has_two_examples_that_match_and_one_that_does_not():
    assert ROWS and all(len(r.match) >= 2 and len(r.not_match) >= 1 for r in ROWS)
    verify(ROWS, classify_command)  # what the import does


def test_a_row_whose_example_the_gate_decides_otherwise_fails_verification():
    broken = row("deletes", "rm", "deletes recursively or by force ({name})", ["rm -rf build", "rm notes.txt"],
                 ["rm -i x"], flags=("-r", "-f"))
    with pytest.raises(ValueError, match="'rm notes.txt' should match, but is moderate"):
        verify([broken], classify_command)
    wrong_way = row("deletes", "rm", "deletes recursively or by force ({name})", ["rm -rf a", "rm -f b"],
                    ["rm -r c"], flags=("-r", "-f"))
    with pytest.raises(ValueError, match="'rm -r c' should not match"):
        verify([wrong_way], classify_command)
    with pytest.raises(ValueError, match="needs two examples that match and one that does not"):
        verify([row("deletes", "rm", "x", ["rm -rf a"], [])], classify_command)


def test_a_broken_row_fails_the_import(monkeypatch):
    """The package verifies its rows as its last statement: run that statement with a broken row."""
    import tools.shell_policy as package

    source = Path(package.__file__).read_text()
    assert source.rstrip().splitlines()[-1].startswith("verify(ROWS, classify_command)")
    broken = row("deletes", "unlink", "deletes a file ({name})", ["unlink a", "ls"], ["unlink --help"])
    with pytest.raises(ValueError, match="'ls' should match"):
        exec(source.rstrip().splitlines()[-1], {**vars(package), "ROWS": [*ROWS, broken]})


def test_the_safety_page_lists_the_rows_by_kind():
    table = docs.written(docs.named("gate rows"), PACKAGE.parents[1])
    assert table is not None, "docs/safety.md has no generated table of the gate's rows"
    assert table == readme_table(ROWS), f"docs/safety.md's table of the gate's rows is stale: run {docs.REGENERATE}"
def test_no_underscore_name_is_imported_across_the_package():
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tools.shell_policy"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{path.name} imports {private} from {node.module}"


def test_the_package_is_at_most_twelve_modules():
    assert len(list(PACKAGE.glob("*.py"))) <= 12


def test_a_writes_row_asks_for_a_write_outside_and_else_lets_the_next_rows_decide():
    """``sort -o`` is a ``writes`` row, tried before the row that asks for any ``sort -o``; a path it
    writes is remembered, so running it is judged."""
    assert classify_command("sort -o /etc/x f") == (Danger.DANGEROUS, "writes outside the workspace (sort -o /etc/x)")
    assert classify_command("sort -o out.txt f") == (Danger.DANGEROUS, "writes over a file (sort -o)")
    assert classify_command("tree -o ../t.txt") == (Danger.DANGEROUS, "writes outside the workspace (tree -o ../t.txt)")
    assert classify_command("tree -o t.txt") == (Danger.MODERATE, "")
    assert "(tree -o run.sh)" in classify_command("tree -o run.sh && sh run.sh")[1]
    assert classify_command("truncate -s 0 app.log") == (Danger.DANGEROUS, "cuts or empties files (truncate app.log)")
    for reads in ("tree", "sort f", "uniq a.txt", "xxd a.bin", "yq . a.yml"):  # read-only, and no code
        assert classify_command(reads) == (Danger.SAFE, "") and runs_no_code(reads), reads
    for writes in ("tree -o t.txt", "uniq a.txt b.txt", "xxd -r a.hex a.bin", "yq -i . a.yml"):
        assert not runs_no_code(writes), writes


def test_a_writes_row_reads_options_as_getopt_does():
    """An option's value is not an option (``gzip -S -c``: ``-c`` is the suffix), nor is a cluster
    holding a value (``yq -oi``: output format ``i``)."""
    assert classify_command("gzip -S -c ~/a.gz")[0] is Danger.DANGEROUS
    assert classify_command("gzip -dc ../a.gz") == (Danger.MODERATE, "")
    assert classify_command("yq -oi . /etc/x.yml") == (Danger.SAFE, "")
    assert classify_command("yq -i . /etc/x.yml") == (Danger.DANGEROUS, "writes outside the workspace (yq -i /etc/x.yml)")
    assert classify_command("curl -H x -so ~/x u") == (Danger.DANGEROUS, "writes outside the workspace (curl -o ~/x)")


def test_writes_names_operands_by_slice_and_values_attached_and_none_after_a_bang_option(monkeypatch):
    monkeypatch.setitem(VALUE_OPTIONS, "frob", ("k", ()))
    rows = [row("writes outside the workspace", "frob", "", [], [], writes="-1:"),
            row("writes outside the workspace", "frob", "", [], [], writes="-O* !-n")]
    table = Table({}, frozenset({"frob"}), (), by_program(rows))
    assert classify("frob -k /etc/k in.txt", table, 0) == (Danger.MODERATE, "")  # -k's value is not written
    assert classify("frob a /etc/x", table, 0) == (Danger.DANGEROUS, "writes outside the workspace (frob /etc/x)")
    assert classify("frob -O/etc/x", table, 0) == (Danger.DANGEROUS, "writes outside the workspace (frob -O /etc/x)")
    assert classify("frob -n -O/etc/x", table, 0) == (Danger.SAFE, "")
    assert classify("frob", table, 0) == (Danger.SAFE, "")


# Wrapper rows read their own options as the program does: what they leave is judged, and the
# option parsing stops where theirs does (``watch 'rm -rf x' -x`` is shell, not ``-x``).
WRAPPER_EDGES = {
    "watch 'rm -rf x' -x": "in watch: deletes recursively",
    "command rm -rfv x": "deletes recursively or by force (rm)",
    "xargs -iX sh -c 'X'": "runs what it reads as shell code (xargs sh -c 'X')",
    "flock -c 'git push' x.lock": "in flock -c: pushes to a remote",
    "flock /etc/x.lock ls": "writes outside the workspace (flock /etc/x.lock)",
    "env -S 'rm -rf' x": "in env -S: deletes recursively",
    "env PATH=. ls": "changes what a command name runs (PATH=.)",
    "parallel -a cmds.txt ::: x": "runs commands read from its input (parallel)",
    "cat cmds.txt | parallel": "runs commands read from its input (parallel)",
    "parallel -j 4 -S host ls ::: a": "runs commands on remote hosts (parallel -S)",
    "trap -- 'rm -rf x' EXIT": "in trap: deletes recursively",
}


@pytest.mark.parametrize("command", list(WRAPPER_EDGES))
def test_a_wrapper_row_reads_its_options_as_the_program_does(command):
    danger, reason = classify_command(command)
    assert danger is Danger.DANGEROUS and WRAPPER_EDGES[command] in reason


@pytest.mark.parametrize("command", ["env", "env FOO=1", "command -v git", "trap -p", "trap '' INT", "man -P cat ls"])
def test_a_wrapper_that_runs_nothing_dangerous_does_not_ask(command):
    assert classify_command(command)[0] is not Danger.DANGEROUS
