"""web_search: DuckDuckGo's HTML results page, fetched through the egress client."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from gateway.errors import ToolError
from gateway.ports import EgressClient
from gateway.spec import Risk, ToolSpec

DEFAULT_ENDPOINT = "https://html.duckduckgo.com/html/"


def result_url(href: str) -> str | None:
    """The target of a result link: DuckDuckGo wraps it as ``//duckduckgo.com/l/?uddg=...``."""
    if href.startswith("//"):
        href = "https:" + href
    parts = urlsplit(href)
    if parts.path == "/l/" and parts.hostname and parts.hostname.endswith("duckduckgo.com"):
        target = parse_qs(parts.query).get("uddg", [""])[0]
        parts = urlsplit(target)
        href = target
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if parts.hostname.endswith("duckduckgo.com") and parts.path.startswith("/y.js"):
        return None  # an advert's click tracker
    return href


class _ResultParser(HTMLParser):
    """Collects title, url and snippet of each organic result, skipping adverts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.results: list[dict[str, str]] = []
        self._field: str | None = None  # "title" or "snippet" while inside that element
        self._field_tag = ""
        self._buffer: list[str] = []
        self._div_depth = 0
        self._ad_depth: int | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        classes = (attr.get("class") or "").split()
        if tag == "div":
            self._div_depth += 1
            if "result--ad" in classes and self._ad_depth is None:
                self._ad_depth = self._div_depth
        if self._ad_depth is not None or self._field is not None:
            return
        if tag == "a" and "result__a" in classes:
            url = result_url(attr.get("href") or "")
            if url is not None:
                self.results.append({"title": "", "url": url, "snippet": ""})
                self._start("title", tag)
        elif "result__snippet" in classes and self.results and not self.results[-1]["snippet"]:
            self._start("snippet", tag)

    def handle_endtag(self, tag: str) -> None:
        if self._field is not None and tag == self._field_tag:
            self.results[-1][self._field] = " ".join("".join(self._buffer).split())
            self._field = None
        if tag == "div":
            if self._ad_depth == self._div_depth:
                self._ad_depth = None
            self._div_depth = max(0, self._div_depth - 1)

    def handle_data(self, data: str) -> None:
        if self._field is not None:
            self._buffer.append(data)

    def _start(self, field: str, tag: str) -> None:
        self._field, self._field_tag, self._buffer = field, tag, []


def parse_results(html: str, limit: int) -> list[dict[str, str]]:
    """The first `limit` organic results of a DuckDuckGo HTML page."""
    parser = _ResultParser()
    parser.feed(html)
    parser.close()
    return [r for r in parser.results if r["title"]][:limit]


class WebSearch:
    """Searches the web through DuckDuckGo's HTML endpoint.

    Args:
        endpoint: the results page URL; its host is the one host this tool declares (tests
            point it at a local server through the egress client's test seam).
    """

    def __init__(self, endpoint: str = DEFAULT_ENDPOINT) -> None:
        host = urlsplit(endpoint).hostname
        if not host:
            raise ValueError(f"endpoint {endpoint!r} has no host")
        self._endpoint = endpoint
        self.spec = ToolSpec(
            name="web_search",
            description=(
                "Search the web. Returns the top results, each with title, url and snippet. "
                "Use http_fetch to read a result in full."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 400},
                    "max_results": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 10,
                        "description": "How many results to return (default 5).",
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            output_schema={
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "title": {"type": "string"},
                                "url": {"type": "string"},
                                "snippet": {"type": "string"},
                            },
                            "required": ["title", "url", "snippet"],
                        },
                    },
                },
                "required": ["query", "results"],
                "additionalProperties": False,
            },
            risk=Risk.MEDIUM,  # the query itself leaves the building
            hosts=(host,),
            timeout_s=15.0,
            max_output_bytes=32_768,
        )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """Search for ``args["query"]``."""
        if net is None:
            raise ToolError("no network access is available to this tool")
        query = args["query"]
        response = await net.get(
            f"{self._endpoint}?{urlencode({'q': query})}", headers={"Accept": "text/html"}
        )
        if response.status_code != 200:
            # DuckDuckGo answers 202 with a challenge page when it rate-limits.
            raise ToolError(
                f"the search service answered HTTP {response.status_code}; try again later"
            )
        results = parse_results(response.text(), args.get("max_results", 5))
        return {"query": query, "results": results}
