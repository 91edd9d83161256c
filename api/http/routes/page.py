"""The web chat page: ``/`` and its static files, under a strict Content-Security-Policy.

The page is plain ES modules and CSS in ``api/web`` (no build step). Every file is served
under ``/static/<build>/``, where ``<build>`` is a hash of all of them: a changed file
changes every URL, so the files are cached for a year and never go stale, and relative
imports between modules keep working. Only ``/`` itself is revalidated on each visit.
"""

from __future__ import annotations

import functools
import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from api.app.errors import NotFound

router = APIRouter(include_in_schema=False)

WEB_DIR = Path(__file__).resolve().parents[2] / "web"  # api/web
_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}

#: No inline script or style, nothing from another origin, no plugins, no framing, and
#: Trusted Types on: assigning a string to an HTML sink (innerHTML...) throws.
CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
IMMUTABLE = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class Bundle:
    """The page's files in memory, and the build hash their URLs carry."""

    build: str
    index: bytes
    files: dict[str, tuple[bytes, str]]


@functools.cache
def bundle(root: Path = WEB_DIR) -> Bundle:
    """Read the page's files once per process and hash them."""
    files: dict[str, tuple[bytes, str]] = {}
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        digest.update(rel.encode() + b"\0" + data + b"\0")
        kind = _TYPES.get(path.suffix) or mimetypes.guess_type(rel)[0]
        files[rel] = (data, kind or "application/octet-stream")
    build = digest.hexdigest()[:16]
    index = files.pop("index.html")[0].replace(b"{{build}}", build.encode())
    return Bundle(build, index, files)


@router.get("/", response_class=HTMLResponse)
async def index() -> Response:
    """The page (revalidated each visit; it names the current build's files)."""
    headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache"}
    return Response(bundle().index, media_type="text/html; charset=utf-8", headers=headers)


@router.get("/static/{build}/{path:path}")
async def static_file(build: str, path: str) -> Response:
    """A file of the current build, cached for a year (other builds: 404)."""
    current = bundle()
    found = current.files.get(path) if build == current.build else None
    if found is None:
        raise NotFound(f"no file {path[:80]!r} in build {build[:20]!r}", hint="reload the page")
    data, kind = found
    headers = {**SECURITY_HEADERS, "Cache-Control": IMMUTABLE}
    return Response(data, media_type=kind, headers=headers)
