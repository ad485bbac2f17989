"""Deletion: ``rm`` by force, recursively, by glob or outside the workspace; shredding; the trash."""

from __future__ import annotations

from tools.shell_policy.verdict import MODERATE, Verdict, _bad
from tools.shell_policy.walk import _HERE, _Call
from tools.shell_policy.words import _opts


def _rm(c: _Call) -> Verdict:
    o = _opts(c.args)
    if o.has("-r", "-R", "-f", "--recursive", "--force", "--no-preserve-root"):
        return _bad("deletes recursively or by force (rm)")
    for target in o.pos:
        if target.text is None and not target.procsub and not _HERE.match(target.raw):
            return _bad(f"deletes a path it can't see (rm {target.show})")
        if c.outside(target):
            return _bad(f"deletes outside the workspace (rm {target.show})")
        if target.glob:
            return _bad(f"deletes by a glob pattern (rm {target.show})")
    return MODERATE


def _delete_inside(c: _Call) -> Verdict:
    """rmdir, unlink, trash: fine in the workspace."""
    for target in _opts(c.args).pos:
        if c.outside(target):
            return _bad(f"deletes outside the workspace ({c.name} {target.show})")
    return MODERATE


def _shred(c: _Call) -> Verdict:
    return _bad(f"destroys files ({c.name})")


def _trash_empty(c: _Call) -> Verdict:
    return _bad(f"empties the trash ({c.name})")


def _gio(c: _Call) -> Verdict:
    o = _opts(c.args)
    sub = o.texts()[:1]
    if sub == ["trash"] and o.has("--empty"):
        return _bad("empties the trash (gio trash --empty)")
    if sub in (["trash"], ["remove"], ["rm"]):
        return _delete_inside(_Call(f"gio {sub[0]}", o.pos[1:], c.stdin, c.scan))
    return MODERATE
