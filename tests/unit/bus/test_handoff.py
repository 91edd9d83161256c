"""Commands a process published are taken back as built, without decoding them again."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys, wire
from bus.commands import Command
from bus.noop import handle_noop
from bus.publish import publish
from bus.runtime import worker as worker_module
from bus.runtime.handoff import Handoff
from bus.runtime.worker import Worker
from bus.transcript import fold
from tests.support import drain, events_of, noop_command


def test_a_command_is_taken_once_by_its_exact_bytes_and_the_oldest_are_dropped() -> None:
    table = Handoff(limit=2)
    a, b, c = noop_command(hops=1), noop_command(hops=2), noop_command(hops=3)
    for cmd in (a, b, c):
        table.put(wire.encode(cmd).encode(), cmd)
    assert table.take(wire.encode(a).encode()) is None  # dropped: over the limit
    assert table.take(wire.encode(b).encode() + b" ") is None  # other bytes: decoded
    assert table.take(wire.encode(b).encode()) is b
    assert table.take(wire.encode(b).encode()) is None  # once
    assert table.take(wire.encode(c).encode()) is c


async def test_only_the_command_from_outside_is_decoded(
    redis: Redis, make_settings: Callable[..., AppSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[str] = []
    real = wire.decode_command

    def counting(fields: dict[bytes, bytes]) -> Command:
        cmd = real(fields)
        decoded.append(cmd.step_id)
        return cmd

    monkeypatch.setattr(worker_module.wire, "decode_command", counting)
    s = make_settings().bus
    worker = Worker(keys.Role.NOOP, handle_noop, redis, s, concurrency=2)
    await worker.ensure_groups()
    cmd = noop_command(hops=4, tokens=["x"])
    await publish(redis, cmd, s)
    await drain([worker], redis)
    events = await events_of(redis, cmd.run_id)
    assert [e.type for e in events][-1] == "done"
    assert fold(events).answer == "x" * 4
    assert decoded == [cmd.step_id]  # every step after it was handed off
