"""Check 5, egress: network access is decided per outbound request, not per call.

A tool that declares no hosts gets no client at all. A tool that does gets an
`HttpEgressClient` that, on every request and redirect hop, checks the tool's declared
hosts, the tenant allowlist and the SSRF guard, and raises `EgressBlocked` /
`SsrfBlocked` / `HostUndeclared`, which the chain turns into outcomes.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

from gateway.call_context import CallContext
from gateway.ports import Caller, EgressClient
from gateway.spec import ToolSpec


@asynccontextmanager
async def egress_for(
    spec: ToolSpec, ctx: CallContext, caller: Caller
) -> AsyncGenerator[EgressClient | None, None]:
    """The egress client for one call of `spec` (None when it declares no hosts), closed
    after; a request to one of the tool's private services names `caller` in its token."""
    if not spec.hosts:
        yield None
        return
    async with ctx.deps.egress_client(spec, ctx.policy.egress, caller) as client:
        yield client
