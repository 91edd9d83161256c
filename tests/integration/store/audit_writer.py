"""A separate process that appends to the audit log (run by test_audit's concurrency test).

Usage: ``python -m tests.integration.store.audit_writer URL TENANT COUNT LABEL``
"""

from __future__ import annotations

import asyncio
import sys

from bus.store import AuditEntry, AuditStore, make_engine


async def main(url: str, tenant: str, count: int, label: str) -> None:
    engine = make_engine(url)
    try:
        store = AuditStore(engine)
        for i in range(count):
            await store.append(
                AuditEntry(
                    tenant_id=tenant,
                    subject="writer",
                    run_id=f"run-{label}",
                    agent="researcher",
                    call_id=f"{label}-{i}",
                    tool="echo",
                    args={"i": i, "writer": label},
                    status="ok",
                    code="ok",
                    duration_ms=0.5,
                )
            )
    finally:
        await engine.dispose()


if __name__ == "__main__":
    url, tenant, count, label = sys.argv[1:5]
    asyncio.run(main(url, tenant, int(count), label))
