"""The embedded Redis backed up through its own persistence: a BGSAVE image taken while it
serves, and that image restored as the data a new server starts from."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import redis

from bus import embedded
from bus.embedded import EmbeddedRedis
from bus.embedded_backup import is_rdb, place_rdb, save_rdb


def test_an_image_taken_while_the_server_runs_restores_what_was_written_before_it(
    tmp_path: Path,
) -> None:
    live, image = tmp_path / "live", tmp_path / "redis.rdb"
    with EmbeddedRedis(live) as server:
        client = redis.Redis.from_url(server.url)
        client.xadd("ab:{0}:role:planner", {"data": "before"})
        client.set("kept", "1")
        stop = threading.Event()

        def keep_writing() -> None:
            with redis.Redis.from_url(server.url) as w:
                while not stop.is_set():
                    w.incr("counter")

        writer = threading.Thread(target=keep_writing)
        writer.start()
        try:
            # The image is taken while the writer writes: once it has written (on a loaded
            # host the thread may not have run yet when the save starts).
            while client.get("counter") is None:
                time.sleep(0.001)
            version = save_rdb(live, image)
        finally:
            stop.set()
            writer.join()
        client.set("later", "1")  # after the image: not in it
        counted = int(client.get("counter") or 0)  # pyright: ignore[reportArgumentType]
        client.close()

    assert version.startswith(("6.", "7.")) and is_rdb(image)
    restored = tmp_path / "restored"
    assert place_rdb(image, restored) == 3  # the stream, "kept" and "counter"
    with EmbeddedRedis(restored) as again:  # and it stays: the AOF now starts with the image
        client = redis.Redis.from_url(again.url)
        assert client.xlen("ab:{0}:role:planner") == 1 and client.get("kept") == b"1"
        assert client.get("later") is None
        assert 0 < int(client.get("counter") or 0) <= counted  # pyright: ignore[reportArgumentType]
        client.close()


def test_a_stopped_server_is_started_for_the_image_and_stopped_again(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        client = redis.Redis.from_url(server.url)
        client.set("kept", "1")
        client.close()
    assert not embedded.is_running(tmp_path)

    save_rdb(tmp_path, tmp_path / "image.rdb")

    assert not embedded.is_running(tmp_path)
    assert place_rdb(tmp_path / "image.rdb", tmp_path / "restored") == 1
