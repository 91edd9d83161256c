"""Built-in tools."""

from __future__ import annotations

from gateway.ports import Tool
from gateway.tools.calculator import Calculator
from gateway.tools.current_time import CurrentTime
from gateway.tools.http_fetch import HttpFetch
from gateway.tools.web_search import DEFAULT_ENDPOINT, WebSearch

__all__ = ["Calculator", "CurrentTime", "HttpFetch", "WebSearch", "builtin_tools"]


def builtin_tools(*, search_endpoint: str = DEFAULT_ENDPOINT) -> list[Tool]:
    """One instance of every built-in tool (``search_docs`` joins when retrieval lands)."""
    return [Calculator(), CurrentTime(), HttpFetch(), WebSearch(search_endpoint)]
