"""Egress: the per-tenant allowlist, the SSRF guard and the only HTTP client tools get."""
