"""The edge's per-tenant start gate: a flood of one tenant waits for its few slots, another
tenant's start goes straight through, and no gate outlives its last user."""

from __future__ import annotations

import asyncio

from api.app.start_gate import StartGate


async def test_a_flooding_tenant_waits_for_its_slots_and_another_does_not() -> None:
    gate = StartGate(2)
    release = asyncio.Event()
    inside: list[str] = []

    async def start(tenant: str) -> None:
        async with gate.slot(tenant):
            inside.append(tenant)
            await release.wait()

    flood = [asyncio.create_task(start("a")) for _ in range(10)]
    await asyncio.sleep(0.01)
    assert inside == ["a", "a"] and gate.waiting("a") == 10  # two in, eight asleep
    other = asyncio.create_task(start("b"))
    await asyncio.sleep(0.01)
    assert inside[-1] == "b"  # not behind the flood
    release.set()
    await asyncio.gather(*flood, other)
    assert inside.count("a") == 10 and gate.waiting("a") == gate.waiting("b") == 0


async def test_no_limit_lets_every_start_in() -> None:
    gate = StartGate(0)
    async with gate.slot("a"), gate.slot("a"), gate.slot("a"):
        assert gate.waiting("a") == 0
