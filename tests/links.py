"""Relative links in Markdown pages: each must name a file that exists and, after ``#``, a heading
of that page (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens)."""

from __future__ import annotations

import re
from pathlib import Path

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``page`` (repeated ones numbered)."""
    found: set[str] = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if m := re.match(r"#{1,6} +(.*?) *#*$", line):
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            base, n = slug, 1
            while slug in found:
                slug, n = f"{base}-{n}", n + 1
            found.add(slug)
    return found


def broken_links(pages: list[Path], root: Path) -> list[str]:
    """``page: target`` for every relative link whose file or heading is missing."""
    broken = []
    for page in pages:
        for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, fragment = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists() or root.resolve() not in (file, *file.parents):
                broken.append(f"{page.relative_to(root)}: {target}")
            elif fragment and file.suffix == ".md" and fragment not in anchors(file):
                broken.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return broken
