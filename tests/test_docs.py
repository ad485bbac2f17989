"""docs/'s generated blocks (``benchmarks/docs.py``): every one is what the code generates, a stale
one is found and rewritten in place, and each page's relative links reach a file and a heading."""

from __future__ import annotations

import shutil
from pathlib import Path

from benchmarks import docs
from tests.links import broken_links

ROOT = Path(__file__).resolve().parents[1]


def test_every_generated_block_is_current():
    assert docs.ROOT == ROOT, f"benchmarks.docs was imported from {docs.ROOT}: run with PYTHONPATH={ROOT}"
    assert docs.stale(ROOT) == [], f"run {docs.REGENERATE}"


def test_a_stale_block_is_found_and_rewritten(tmp_path):
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "safety.md"
    page.write_text(page.read_text().replace("- `.envrc`: direnv runs it", "- `.envrc`: something else"))
    assert docs.stale(tmp_path) == ["docs/safety.md: control paths"]
    assert docs.main(["--check"]) == 0  # the repository's own pages are current
    assert docs.regenerate(tmp_path) == ["docs/safety.md: control paths"]
    assert docs.stale(tmp_path) == [] and page.read_text() == (ROOT / "docs" / "safety.md").read_text()


def test_every_relative_link_in_docs_reaches_a_file_and_a_heading():
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert broken_links(pages, ROOT) == []
