"""http_fetch: fetch one public web page and return its readable text (HIGH risk)."""

from __future__ import annotations

import json
from typing import Any

from gateway.errors import ToolError
from gateway.ports import EgressClient, EgressResponse
from gateway.spec import Risk, ToolSpec
from gateway.tools.html_text import html_to_text, normalise_whitespace

_HTML = frozenset({"text/html", "application/xhtml+xml"})
_ACCEPT = "text/html, application/xhtml+xml, text/plain;q=0.9, application/json;q=0.8, */*;q=0.1"


def readable(response: EgressResponse) -> tuple[str | None, str]:
    """The title (HTML only) and readable text of a response.

    Raises:
        ToolError: the content is not text (an image, a PDF, an archive...).
    """
    kind = response.content_type
    body = response.text()
    if kind in _HTML or (not kind and body.lstrip()[:1] == "<"):
        return html_to_text(body)
    if kind.startswith("text/") or kind.endswith(("json", "xml")) or not kind:
        if kind.endswith("json") and not response.truncated:
            # Re-indent so the model sees structure rather than one enormous line.
            try:
                return None, json.dumps(json.loads(body), indent=1, ensure_ascii=False)
            except ValueError:
                pass
        return None, normalise_whitespace(body)
    raise ToolError(f"the page is {kind}, which this tool cannot read as text")


class HttpFetch:
    """Fetches a URL through the egress client and extracts the text a person would read."""

    spec = ToolSpec(
        name="http_fetch",
        description=(
            "Fetch a public web page (http or https) and return its title and readable text, "
            "without scripts or styles. Use it to read a page you already know the URL of."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 2048,
                    "description": "Absolute http(s) URL of the page.",
                },
                "max_chars": {
                    "type": "integer",
                    "minimum": 100,
                    "maximum": 100_000,
                    "description": "Maximum characters of text to return (default 20000).",
                },
            },
            "required": ["url"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "status": {"type": "integer"},
                "content_type": {"type": "string"},
                "title": {"type": ["string", "null"]},
                "text": {"type": "string"},
                "truncated": {"type": "boolean"},
            },
            "required": ["url", "status", "content_type", "title", "text", "truncated"],
            "additionalProperties": False,
        },
        risk=Risk.HIGH,
        hosts=("*",),
        timeout_s=20.0,
        max_output_bytes=262_144,
    )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """Fetch ``args["url"]`` and return its readable text."""
        if net is None:
            raise ToolError("no network access is available to this tool")
        max_chars = args.get("max_chars", 20_000)
        response = await net.get(args["url"], headers={"Accept": _ACCEPT})
        title, text = readable(response)
        return {
            "url": response.url,
            "status": response.status_code,
            "content_type": response.content_type,
            "title": title,
            "text": text[:max_chars],
            "truncated": response.truncated or len(text) > max_chars,
        }
