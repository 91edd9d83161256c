"""Read Markdown, plain text, HTML and PDF into a `Document` split at headings."""

from __future__ import annotations

import io
import re
import warnings
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath

from retrieval.errors import DocumentUnreadable, UnsupportedDocument
from retrieval.models import Document, Section

KINDS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}
_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_FRONT_TITLE = re.compile(r"^title:\s*['\"]?(.*?)['\"]?\s*$", re.IGNORECASE)


class SectionBuilder:
    """Collects text under a heading stack; a new heading closes the current section."""

    def __init__(self) -> None:
        self.title = ""
        self.sections: list[Section] = []
        self._stack: list[tuple[int, str]] = []
        self._lines: list[str] = []

    def heading(self, level: int, text: str) -> None:
        """Start a section under heading ``text`` of ``level`` (1-6)."""
        self._flush()
        text = " ".join(text.split())
        if level == 1 and not self.title and not self.sections:
            self.title = text  # the first top-level heading names the document
            return
        self._stack = [(lv, t) for lv, t in self._stack if lv < level] + [(level, text)]

    def line(self, text: str) -> None:
        """Add a line of body text."""
        self._lines.append(text)

    def _flush(self) -> None:
        body = "\n".join(self._lines).strip()
        self._lines = []
        if body:
            path = " > ".join(t for _, t in self._stack)
            self.sections.append(Section(path, body))

    def finish(self) -> tuple[Section, ...]:
        """The sections collected."""
        self._flush()
        return tuple(self.sections)


def _markdown(text: str) -> tuple[str, tuple[Section, ...]]:
    lines = text.splitlines()
    builder, front_title = SectionBuilder(), ""
    if lines and lines[0].strip() == "---":  # YAML front matter
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                for meta in lines[1:i]:
                    if m := _FRONT_TITLE.match(meta):
                        front_title = m.group(1)
                lines = lines[i + 1 :]
                break
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _ATX.match(line)
        if heading:
            builder.heading(len(heading.group(1)), heading.group(2))
        else:
            builder.line(line)
    sections = builder.finish()
    return front_title or builder.title, sections


_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption",
        "footer", "form", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
        "section", "table", "td", "th", "tr", "ul",
    }
)  # fmt: skip


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = SectionBuilder()
        self.page_title: list[str] = []
        self._skip = 0
        self._in_title = False
        self._heading: int | None = None
        self._buf: list[str] = []

    def end_line(self) -> None:
        text = " ".join("".join(self._buf).split())
        self._buf = []
        if text and self._heading is not None:
            self.builder.heading(self._heading, text)
        elif text:
            self.builder.line(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP:
            self._skip += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self.end_line()
            self._heading = int(tag[1])
        elif tag in _BLOCK:
            self.end_line()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif re.fullmatch(r"h[1-6]", tag):
            self.end_line()
            self._heading = None
        elif tag in _BLOCK:
            self.end_line()
            if tag == "p":
                self.builder.line("")  # a paragraph break the chunker can see

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.page_title.append(data)
        elif not self._skip:
            self._buf.append(data)


def _html(text: str) -> tuple[str, tuple[Section, ...]]:
    parser = _Html()
    parser.feed(text)
    parser.close()
    parser.end_line()
    sections = parser.builder.finish()
    title = " ".join("".join(parser.page_title).split()) or parser.builder.title
    return title, sections


def _pdf(data: bytes) -> tuple[str, tuple[Section, ...]]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as e:
        raise DocumentUnreadable(
            "reading PDF needs the pypdf package", hint="pip install 'agentbus[retrieval]'"
        ) from e
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pypdf warns about every small spec deviation
            reader = PdfReader(io.BytesIO(data))
            meta_title = (reader.metadata.title if reader.metadata else None) or ""
            pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as e:
        raise DocumentUnreadable(f"the PDF could not be parsed: {e}") from e
    sections = tuple(
        Section(f"page {n}", text.strip()) for n, text in enumerate(pages, 1) if text.strip()
    )
    first_line = next((ln.strip() for s in sections[:1] for ln in s.text.splitlines()), "")
    return str(meta_title).strip() or first_line[:120], sections


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def kind_of(name: str) -> str:
    """The document kind for a file name.

    Raises:
        UnsupportedDocument: not a supported extension.
    """
    kind = KINDS.get(PurePosixPath(name.lower()).suffix)
    if kind is None:
        raise UnsupportedDocument(f"cannot ingest {name!r}: unsupported file type")
    return kind


def parse(data: bytes, *, source: str, kind: str | None = None) -> Document:
    """Parse a document's bytes (``kind`` defaults to the one ``source``'s suffix says).

    Raises:
        UnsupportedDocument: the kind is not supported.
        DocumentUnreadable: the bytes could not be parsed.
    """
    kind = kind or kind_of(source)
    if kind == "pdf":
        title, sections = _pdf(data)
    elif kind == "html":
        title, sections = _html(_decode(data))
    elif kind == "markdown":
        title, sections = _markdown(_decode(data))
    elif kind == "text":
        text = _decode(data).strip()
        title, sections = "", (Section("", text),) if text else ()
    else:
        raise UnsupportedDocument(f"unknown document kind {kind!r}")
    return Document(source, title or PurePosixPath(source).stem, kind, sections)


def load_path(path: Path, *, source: str | None = None) -> Document:
    """Read and parse one file; ``source`` defaults to the path as given (POSIX form).

    Raises:
        UnsupportedDocument: not a supported file type.
        DocumentUnreadable: the file could not be read or parsed.
    """
    kind = kind_of(path.name)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DocumentUnreadable(f"cannot read {path}: {e}") from e
    return parse(data, source=source or path.as_posix(), kind=kind)


def discover(paths: list[Path]) -> list[Path]:
    """The supported files under ``paths`` (folders walked recursively), sorted, unique.

    Raises:
        UnsupportedDocument: a path named directly is not a supported file.
        DocumentUnreadable: a path does not exist.
    """
    found: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found.update(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in KINDS)
        elif path.is_file():
            kind_of(path.name)
            found.add(path)
        else:
            raise DocumentUnreadable(f"no such file or folder: {path}")
    return sorted(found)
