"""The page's source files: within budget, and no way in them to turn text into markup."""

from __future__ import annotations

import re
from pathlib import Path

from api.http.routes.page import WEB_DIR, bundle

#: Every DOM API that parses a string as HTML or code; the page must never use one.
SINKS = re.compile(
    r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\s*\(|new\s+Function"
    r"|setHTMLUnsafe|createContextualFragment|\.srcdoc\s*=|\.setAttribute\(\s*['\"]on"
)


SVG_NAMESPACE = "http://www.w3.org/2000/svg"  # a name, never fetched


def test_the_pages_code_and_styles_stay_under_150_kb() -> None:
    size = sum(p.stat().st_size for p in WEB_DIR.rglob("*") if p.suffix in (".js", ".css", ".html"))
    assert size < 150 * 1024, f"{size} bytes"


def test_no_source_file_parses_strings_as_html_or_code() -> None:
    for path in WEB_DIR.rglob("*.js"):
        found = SINKS.search(path.read_text())
        assert found is None, f"{path.name} uses {found.group(0) if found else ''}"


def test_no_third_party_origin_is_named() -> None:
    for path in WEB_DIR.rglob("*"):
        if path.suffix in (".js", ".css", ".html"):
            urls = set(re.findall(r"https?://[^\s'\"`)]+", path.read_text()))
            assert urls <= {SVG_NAMESPACE}, f"{path.name} names {urls}"


def test_the_build_hash_changes_with_any_file(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text('<script src="/static/{{build}}/a.js"></script>')
    (tmp_path / "a.js").write_text("export const a = 1;\n")
    first = bundle.__wrapped__(tmp_path)
    assert f"/static/{first.build}/a.js".encode() in first.index
    (tmp_path / "a.js").write_text("export const a = 2;\n")
    assert bundle.__wrapped__(tmp_path).build != first.build
