"""How ``fetch_url`` downloads a page: the URL checked, the egress policy, redirects, caps
and content types, down to a ``Page`` of bytes and what they are; what the tool makes of
them (Markdown, limits, a headless browser for scripted pages) is ``tools.fetch``.

``http``/``https`` only, no credentials in the URL. Every request goes through the egress
policy (``tools.egress``): the host, and every address a name resolves to, checked against
the deny list before anything is sent, and the connection made to the address checked.
Redirects are followed by hand, at most ``MAX_REDIRECTS``, each hop checked the same way,
and a URL seen twice is reported as a redirect loop. The whole download has
``FETCH_TIMEOUT_S`` (connecting ``CONNECT_TIMEOUT_S``); the body is streamed and reading
stops at ``MAX_BODY_BYTES``. Binary types are refused before their body is read, and a body
whose first bytes are not text (a gzip served as text/plain, a compressed body of NULs) is
refused naming what it holds and its size, once ``SNIFF_BYTES`` are read. Status
400 and above is a ``FetchFailed``, as is every other failure; nothing else raises but
cancellation. Bytes that do not decode in the declared charset (UTF-8 if none) become U+FFFD.
"""

from __future__ import annotations

import asyncio
import codecs
import re
from dataclasses import dataclass
from typing import Literal

import httpx

from core.binary import SNIFF_BYTES, binary_kind, size_text
from tools.egress import Egress, Refused, Unreachable
from tools.web import new_client

FETCH_TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 10.0
MAX_REDIRECTS = 5
MAX_BODY_BYTES = 5 * 1024 * 1024

_TEXT_TYPES = frozenset(
    {"application/xml", "application/javascript", "application/x-javascript",
     "application/yaml", "application/x-yaml", "application/toml", "application/x-ndjson"}
)  # fmt: skip
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)

Kind = Literal["html", "json", "text"]


class FetchFailed(Exception):
    """A fetch that cannot give text; the message goes to the model as an error."""


@dataclass
class Page:
    url: httpx.URL  # after redirects
    kind: Kind
    charset: str | None
    body: bytes
    cut: bool  # reading stopped at MAX_BODY_BYTES


def check_url(url: httpx.URL | str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise FetchFailed(f"invalid URL {str(url)!r}: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise FetchFailed(f"only http and https URLs can be fetched, not {str(url)!r}")
    if not parsed.host:
        raise FetchFailed(f"the URL {str(url)!r} has no host")
    if parsed.userinfo:
        raise FetchFailed("URLs with a user name or password are refused; remove the credentials")
    return parsed


async def download(url: httpx.URL, egress: Egress) -> Page:
    timeout_s = FETCH_TIMEOUT_S
    try:
        async with asyncio.timeout(timeout_s):
            async with new_client(
                timeout_s=timeout_s, connect_timeout_s=CONNECT_TIMEOUT_S, egress=egress
            ) as client:
                return await _follow(client, url)
    except (TimeoutError, httpx.TimeoutException):
        raise FetchFailed(f"fetching {url} timed out after {timeout_s:g} s") from None
    except (Refused, Unreachable) as exc:
        raise FetchFailed(f"{exc} (fetching {url} was refused before anything was sent)"
                      if isinstance(exc, Refused) else f"fetching {url} failed: {exc}") from None
    except httpx.HTTPError as exc:
        raise FetchFailed(f"fetching {url} failed: {type(exc).__name__}: {exc}") from None


async def _follow(client: httpx.AsyncClient, url: httpx.URL) -> Page:
    visited = [url]
    request = client.build_request("GET", url)
    for _ in range(MAX_REDIRECTS + 1):
        response = await client.send(request, stream=True)
        try:
            if response.next_request is None:
                return await _read(response)
            request = response.next_request
        finally:
            await response.aclose()
        target = check_url(request.url)
        if target in visited:
            raise FetchFailed(f"redirect loop: {_chain([*visited, target])}")
        visited.append(target)
    raise FetchFailed(f"more than {MAX_REDIRECTS} redirects: {_chain(visited)}")


def _chain(urls: list[httpx.URL]) -> str:
    return " -> ".join(str(u) for u in urls)


async def _read(response: httpx.Response) -> Page:
    if response.status_code >= 400:
        code = response.status_code
        status = f"{code} {response.reason_phrase or httpx.codes.get_reason_phrase(code)}"
        raise FetchFailed(f"HTTP {status.strip()} for {response.url}")
    media, charset = _content_type(response.headers.get("content-type", ""))
    kind = _kind(media)
    if kind is None and media:
        raise FetchFailed(
            f"{response.url} is {media}, not a web page or text; "
            "fetch_url reads only HTML, text and JSON"
        )
    body, cut, looked = bytearray(), False, False
    async for chunk in response.aiter_bytes():
        room = MAX_BODY_BYTES - len(body)
        if len(chunk) > room:
            body += chunk[:room]
            cut = True
            break
        body += chunk
        if not looked and len(body) >= SNIFF_BYTES:  # binary: stop before decompressing the rest
            looked = True
            _refuse_binary(response, media, charset, body, done=False)
    _refuse_binary(response, media, charset, body, done=not cut)
    return Page(response.url, kind or _sniff(bytes(body[:1024])), charset, bytes(body), cut)


def _refuse_binary(response: httpx.Response, media: str, charset: str | None, body: bytearray, *, done: bool) -> None:
    """A FetchFailed naming what the body is and its size when its bytes are not text,
    whatever its Content-Type says (a gzip served as text/plain, a compressed body of NULs)."""
    what = binary_kind(bytes(body[:SNIFF_BYTES]), charset)
    if what is None:
        return
    encoded = response.headers.get("content-encoding")
    declared = response.headers.get("content-length")
    size = size_text(len(body)) if done else f"{size_text(len(body))} read"
    if declared and declared.isdigit() and (encoded or not done):
        size += f" of {size_text(int(declared))}{' compressed' if encoded else ''}"
    label = f"labelled {media}" if media else "without a content type"
    raise FetchFailed(f"{response.url} is {label} but holds {what} ({size}{f', {encoded}-encoded' if encoded else ''}); "
                      "fetch_url reads only HTML, text and JSON, so it was not read")


def _content_type(header: str) -> tuple[str, str | None]:
    media, *params = header.split(";")
    charset = None
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return media.strip().lower(), charset


def _kind(media: str) -> Kind | None:
    if media in ("text/html", "application/xhtml+xml"):
        return "html"
    if media == "application/json" or media.endswith("+json"):
        return "json"
    if media.startswith("text/") or media in _TEXT_TYPES or media.endswith("+xml"):
        return "text"
    return None


def _sniff(head: bytes) -> Kind:
    """What text without a Content-Type is (its bytes were found to be text)."""
    lowered = head.lstrip().lower()
    return "html" if lowered.startswith((b"<!doctype html", b"<html")) else "text"


def decode(page: Page) -> str:
    charset = page.charset
    if charset is None and page.kind == "html":
        found = _META_CHARSET.search(page.body[:4096])
        charset = found.group(1).decode("ascii", "replace") if found else None
    try:
        codec = codecs.lookup(charset or "utf-8").name
    except LookupError:
        codec = "utf-8"
    return page.body.decode(codec, errors="replace").removeprefix("\ufeff")
