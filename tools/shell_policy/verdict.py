"""A verdict: the danger of a command, and the reason a person reads when asked to approve it."""

from __future__ import annotations

from tools.base import Danger

Verdict = tuple[Danger, str]
SAFE: Verdict = (Danger.SAFE, "")
MODERATE: Verdict = (Danger.MODERATE, "")

SHOW_CHARS = 40


def _bad(reason: str) -> Verdict:
    return Danger.DANGEROUS, reason


def _worse(a: Verdict, b: Verdict) -> Verdict:
    """The first dangerous verdict, else MODERATE if either is, else SAFE."""
    for verdict in (a, b):
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    return MODERATE if Danger.MODERATE in (a[0], b[0]) else SAFE


def _show(raw: str) -> str:
    raw = " ".join(raw.split())
    return raw if len(raw) <= SHOW_CHARS else raw[: SHOW_CHARS - 1] + "…"
