"""What the web tools share: the HTTP client, heartbeats, untrusted wrapping, HTML to Markdown.

Everything that comes back from the web (search summaries, fetched pages) is
data written by strangers. ``wrap_untrusted`` puts it between
``<untrusted_content>`` tags with a one-line reminder, and escapes anything
inside that could pose as the closing tag, so a page cannot end the wrapper
early and speak as the system.

``with_heartbeats`` runs a slow request while calling ``ctx.heartbeat`` every
``HEARTBEAT_EVERY_S`` seconds; a cancellation cancels the request and passes
through.

The clients never retry and never follow redirects on their own: the search
tool reports what may be retried, and the fetch tool follows redirects itself
so it can check every hop and recognise a loop. A client given an ``Egress``
sends every request through ``tools.egress.EgressTransport`` (checked, and sent
to the address checked; the environment's proxy variables are not used, as the
browser's own proxy does not use them either).

``html_to_markdown`` turns a page into what a model should read: the
``<title>`` first as ``# Title``, then the body with scripts, styles,
navigation, the page's header and footer, sidebars, forms (cookie banners,
search boxes), dialogs, buttons, SVG and iframes removed; headings, links
(made absolute), lists, code blocks (with their language) and tables kept.
Library: ``markdownify`` on ``beautifulsoup4``. BeautifulSoup (pure Python
with ``html.parser``, nothing compiled, tolerant of broken markup) gives a
tree to prune by tag, ARIA role and attribute and to rewrite links in before
converting; markdownify is a small, maintained converter that works on that
same tree, with options for ATX headings, fenced code and tables.
``html2text`` takes only a string, so pruning would need a second parser and
a second pass.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

import httpx
from bs4 import BeautifulSoup, Tag
from markdownify import ATX, MarkdownConverter

from tools.egress import Egress, EgressTransport

USER_AGENT = "durable-agent/0.1 (a local AI agent; web tools)"
HEARTBEAT_EVERY_S = 2.0


def new_client(*, timeout_s: float, connect_timeout_s: float, egress: Egress | None = None) -> httpx.AsyncClient:
    """An HTTP client with the project's User-Agent that follows no redirects; with ``egress``,
    one that connects only where it allows."""
    return httpx.AsyncClient(
        headers={"User-Agent": USER_AGENT},
        timeout=httpx.Timeout(timeout_s, connect=min(connect_timeout_s, timeout_s)),
        follow_redirects=False,
        transport=EgressTransport(egress) if egress is not None else None,
        trust_env=egress is None,
    )


# --- HTML to Markdown ----------------------------------------------------------

_BOILERPLATE_TAGS = [
    "head", "title", "script", "style", "noscript", "template", "nav", "header", "footer",
    "aside", "form", "svg", "iframe", "dialog", "button",
]  # fmt: skip
_BOILERPLATE_SELECTOR = (
    '[hidden], [aria-hidden="true"], [role="navigation"], [role="banner"], '
    '[role="contentinfo"], [role="complementary"], [role="dialog"], [role="search"]'
)
_LANGUAGE_CLASS = re.compile(r"^(?:language|lang)-(\S+)$")


def html_to_markdown(markup: str, base_url: str = "") -> str:
    """Readable Markdown of an HTML page: the title as ``# Title``, boilerplate removed."""
    soup = BeautifulSoup(markup, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    base = soup.find("base", href=True)
    base_url = urljoin(base_url, str(base["href"])) if isinstance(base, Tag) else base_url
    _prune(soup)
    _absolute_links(soup, base_url)
    root = soup.body or soup
    converter = MarkdownConverter(
        heading_style=ATX,
        bullets="-",
        escape_asterisks=False,
        escape_underscores=False,
        code_language_callback=_code_language,
    )
    try:
        text = converter.convert_soup(root)
    except RecursionError:  # absurdly deep nesting: plain text is still worth having
        text = root.get_text("\n")
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if title and not text.startswith(f"# {title}"):
        text = f"# {title}\n\n{text}"
    return text


def _prune(soup: BeautifulSoup) -> None:
    for tag in soup.find_all(_BOILERPLATE_TAGS):
        if tag.decomposed:  # inside one already removed
            continue
        # An article's own header and footer hold its title and byline: keep them.
        if tag.name in ("header", "footer") and tag.find_parent("article"):
            continue
        tag.decompose()
    for tag in soup.select(_BOILERPLATE_SELECTOR):
        if not tag.decomposed:
            tag.decompose()


def _absolute_links(soup: BeautifulSoup, base_url: str) -> None:
    for link in soup.find_all("a", href=True):
        href = urljoin(base_url, str(link["href"]).strip())
        if href.startswith(("http://", "https://", "mailto:")):
            link["href"] = href
        else:  # javascript:, data: and the like: keep only the text
            del link["href"]
    for image in soup.find_all("img"):
        src = urljoin(base_url, str(image.get("src") or "").strip())
        if src.startswith(("http://", "https://")):
            image["src"] = src
        else:  # data: URIs can be megabytes of base64
            image.replace_with(str(image.get("alt") or ""))


def _code_language(pre: Tag) -> str:
    for tag in [pre, *pre.find_all("code", limit=1)]:
        for cls in tag.get("class") or []:
            if found := _LANGUAGE_CLASS.match(cls):
                return found.group(1)
    return ""
