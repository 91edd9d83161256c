"""Where a webhook may go: checked when the question names it, and again on every attempt.

The check at the question is the part that needs no network (the URL's form, a literal
private address, the tenant's egress allowlist), so an obviously refused webhook is a 422
at once; the dispatcher's egress client repeats it and adds the SSRF guard on every
resolved address before each attempt.
"""

from __future__ import annotations

from gateway.egress.policy import EgressPolicy, EgressReason
from gateway.egress.ssrf import parse_target
from gateway.errors import EgressBlocked, SsrfBlocked
from gateway.hosts import canonical_pattern

MAX_URL_CHARS = 2048


def private_hosts(csv: str) -> frozenset[str]:
    """The operator's named private webhook hosts (``AGENTBUS_WEBHOOK_PRIVATE_HOSTS``).

    Raises:
        ValueError: an entry is a wildcard or not a host name or IP.
    """
    hosts = {canonical_pattern(h) for h in csv.split(",") if h.strip()}
    if any(h.startswith("*") for h in hosts):
        raise ValueError("webhook private hosts must be exact hosts, not wildcards")
    return frozenset(hosts)


def precheck(url: str, egress: EgressPolicy, allow_private: frozenset[str]) -> str:
    """The normalised URL, if the tenant may send webhooks there at all.

    Raises:
        SsrfBlocked: not an http(s) URL, or a private address nobody allowed.
        EgressBlocked: the host is not on the tenant's egress allowlist.
    """
    if len(url) > MAX_URL_CHARS:
        raise SsrfBlocked(f"a webhook URL has at most {MAX_URL_CHARS} characters")
    target = parse_target(url, allow_private)
    decision = egress.decide(target.host)
    if not decision.allowed:
        why = (
            "egress is disabled for this tenant"
            if decision.reason is EgressReason.EGRESS_DISABLED
            else "the host is not on this tenant's egress allowlist"
        )
        raise EgressBlocked(f"webhooks may not go to {target.host}: {why}", host=target.host)
    return target.url
