"""web_search and http_fetch through the whole chain, against a real server on loopback."""

from __future__ import annotations

from typing import Any

from bus.commands import ToolCallRequest
from gateway.call_context import CallContext, CallPolicy, GatewayDeps
from gateway.chain import invoke
from gateway.egress.policy import EgressPolicy
from gateway.outcome import OutcomeStatus, ToolOutcome
from gateway.registry import ToolRegistry
from gateway.tools import HttpFetch, WebSearch
from gateway.tools.web_search import parse_results
from tests.unit.gateway.local_http import OVERRIDE, FakeResolver, LocalServer

DDG_PAGE = """<!DOCTYPE html><html><head><title>q at DuckDuckGo</title></head><body>
<div class="result results_links results_links_deep result--ad">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a class="result__a"
      href="https://duckduckgo.com/y.js?ad_domain=ads.example">Buy things</a></h2>
    <a class="result__snippet" href="https://duckduckgo.com/y.js?x=1">An advert</a>
  </div>
</div>
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a"
      href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.python.org%2Fdoc%2F&amp;rut=abc">Python
      <b>Documentation</b></a></h2>
    <div class="result__extras"><a class="result__url" href="x">www.python.org/doc</a></div>
    <a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">The official <b>Python</b>
      docs &amp; tutorials.</a>
  </div>
</div>
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a class="result__a" href="https://peps.python.org/">PEPs</a></h2>
    <a class="result__snippet">Python Enhancement Proposals</a>
  </div>
</div>
</body></html>"""

ARTICLE = """<html><head><title> The  Title </title><style>body{color:red}</style>
<script>alert('hidden')</script></head><body><nav>Menu</nav>
<h1>Heading</h1><p>First   paragraph with <a href="#">a link</a>.</p>
<noscript>enable js</noscript><p>Second&nbsp;paragraph.</p>
<script type="application/ld+json">{"secret": 1}</script><ul><li>one</li><li>two</li></ul>
</body></html>"""


def context(
    server: LocalServer, resolver: FakeResolver, egress: EgressPolicy, **policy: Any
) -> CallContext:
    search = WebSearch(f"http://html.duckduckgo.com:{server.port}/html/")
    return CallContext(
        tenant_id="t",
        subject="s",
        run_id="r",
        agent="researcher",
        policy=CallPolicy(egress=egress, **policy),
        deps=GatewayDeps(
            registry=ToolRegistry([search, HttpFetch()]),
            resolver=resolver,
            connect_override=OVERRIDE,
        ),
    )


def allow(*hosts: str) -> EgressPolicy:
    return EgressPolicy(enabled=True, allowed_hosts=frozenset(hosts))


async def run(ctx: CallContext, tool: str, **args: Any) -> ToolOutcome:
    outcome, _ = await invoke(ToolCallRequest(call_id="c", name=tool, arguments=args), ctx)
    return outcome


async def test_web_search_parses_organic_results(
    server: LocalServer, resolver: FakeResolver
) -> None:
    server.route("/html/", body=DDG_PAGE, content_type="text/html; charset=utf-8")
    ctx = context(server, resolver, allow("html.duckduckgo.com"))
    outcome = await run(ctx, "web_search", query="python docs", max_results=5)
    assert outcome.status is OutcomeStatus.OK, outcome.message
    assert outcome.result["results"] == [
        {
            "title": "Python Documentation",
            "url": "https://www.python.org/doc/",
            "snippet": "The official Python docs & tutorials.",
        },
        {
            "title": "PEPs",
            "url": "https://peps.python.org/",
            "snippet": "Python Enhancement Proposals",
        },
    ]
    assert server.seen[0].path == "/html/?q=python+docs"
    assert server.seen[0].headers["host"] == f"html.duckduckgo.com:{server.port}"


def test_web_search_respects_max_results() -> None:
    assert len(parse_results(DDG_PAGE, 1)) == 1


async def test_web_search_is_egress_gated(server: LocalServer, resolver: FakeResolver) -> None:
    outcome = await run(context(server, resolver, EgressPolicy()), "web_search", query="x")
    assert (outcome.status, outcome.code) == (OutcomeStatus.EGRESS_BLOCKED, "egress_blocked")
    assert outcome.blocked_host == "html.duckduckgo.com"
    assert outcome.result is None
    assert server.seen == []


async def test_web_search_reports_a_rate_limit(server: LocalServer, resolver: FakeResolver) -> None:
    server.route("/html/", status=202, body="challenge")
    outcome = await run(context(server, resolver, allow("*")), "web_search", query="x")
    assert outcome.code == "tool_error" and "HTTP 202" in outcome.message


async def test_http_fetch_needs_high_risk_approval(
    server: LocalServer, resolver: FakeResolver
) -> None:
    ctx = context(server, resolver, allow("*"))
    outcome = await run(ctx, "http_fetch", url=f"http://site.test:{server.port}/")
    assert (outcome.status, outcome.code) == (OutcomeStatus.REFUSED, "approval_required")
    assert server.seen == []


async def test_http_fetch_returns_readable_text(
    server: LocalServer, resolver: FakeResolver
) -> None:
    server.route("/article", body=ARTICLE, content_type="text/html")
    ctx = context(server, resolver, allow("site.test"), approve_high_risk=True)
    outcome = await run(ctx, "http_fetch", url=f"http://site.test:{server.port}/article")
    assert outcome.status is OutcomeStatus.OK, outcome.message
    result = outcome.result
    assert result["title"] == "The Title"
    assert result["text"] == (
        "Menu\n\nHeading\n\nFirst paragraph with a link.\n\nSecond paragraph.\n\none\n\ntwo"
    )
    assert "alert" not in result["text"] and "color" not in result["text"]
    assert (result["status"], result["content_type"], result["truncated"]) == (
        200,
        "text/html",
        False,
    )


async def test_http_fetch_cuts_text_at_max_chars(
    server: LocalServer, resolver: FakeResolver
) -> None:
    server.route("/long", body="word " * 1_000, content_type="text/plain")
    ctx = context(server, resolver, allow("site.test"), approve_high_risk=True)
    outcome = await run(
        ctx, "http_fetch", url=f"http://site.test:{server.port}/long", max_chars=100
    )
    assert len(outcome.result["text"]) == 100 and outcome.result["truncated"] is True


async def test_http_fetch_refuses_loopback_even_when_every_host_is_allowed(
    server: LocalServer, resolver: FakeResolver
) -> None:
    ctx = context(server, resolver, allow("*"), approve_high_risk=True)
    for url in (f"http://127.0.0.1:{server.port}/", "http://169.254.169.254/latest/meta-data/"):
        outcome = await run(ctx, "http_fetch", url=url)
        assert (outcome.status, outcome.code) == (OutcomeStatus.REFUSED, "ssrf_blocked")
    assert server.seen == []


async def test_http_fetch_redirect_to_private_address_is_refused(
    server: LocalServer, resolver: FakeResolver
) -> None:
    server.route("/r", status=302, location=f"http://127.0.0.1:{server.port}/admin")
    ctx = context(server, resolver, allow("site.test"), approve_high_risk=True)
    outcome = await run(ctx, "http_fetch", url=f"http://site.test:{server.port}/r")
    assert outcome.code == "ssrf_blocked"
    assert server.paths() == ["/r"]


async def test_http_fetch_host_off_the_allowlist_is_egress_blocked(
    server: LocalServer, resolver: FakeResolver
) -> None:
    ctx = context(server, resolver, allow("other.test"), approve_high_risk=True)
    outcome = await run(ctx, "http_fetch", url=f"http://site.test:{server.port}/")
    assert (outcome.status, outcome.blocked_host) == (OutcomeStatus.EGRESS_BLOCKED, "site.test")


async def test_http_fetch_refuses_binary_content(
    server: LocalServer, resolver: FakeResolver
) -> None:
    server.route("/img", body=b"\x89PNG\r\n", content_type="image/png")
    ctx = context(server, resolver, allow("site.test"), approve_high_risk=True)
    outcome = await run(ctx, "http_fetch", url=f"http://site.test:{server.port}/img")
    assert outcome.code == "tool_error" and "image/png" in outcome.message


async def test_http_fetch_rejects_a_non_http_url(
    server: LocalServer, resolver: FakeResolver
) -> None:
    ctx = context(server, resolver, allow("*"), approve_high_risk=True)
    outcome = await run(ctx, "http_fetch", url="file:///etc/passwd")
    assert outcome.code == "ssrf_blocked" and "only http and https" in outcome.message
