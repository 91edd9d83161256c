"""Readable text out of HTML with the standard library parser (scripts and styles dropped)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

# Elements whose content is never readable text.
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object"})
# Elements that end a line of text.
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt",
        "figcaption", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
        "li", "main", "nav", "ol", "p", "pre", "section", "table", "td", "th", "tr", "ul",
    }
)  # fmt: skip
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._skip_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP:
            self._skip_depth += 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/> and friends: a line break, and never the start of a skipped region.
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._skip_depth:
            self.parts.append(data)


def normalise_whitespace(text: str) -> str:
    """Collapse runs of spaces, trim lines and keep at most one blank line in a row."""
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def html_to_text(html: str) -> tuple[str | None, str]:
    """The page title (or None) and its readable text, one block per line."""
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    title = normalise_whitespace(" ".join(parser.title_parts)) or None
    return title, normalise_whitespace("".join(parser.parts))
