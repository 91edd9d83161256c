"""Each xdist worker gets a Redis database and cluster ports of its own (``tests/workers.py``)."""

from __future__ import annotations

import pytest

from tests.workers import WorkerSetupError, worker_port, worker_redis_url


def _as_worker(monkeypatch: pytest.MonkeyPatch, name: str | None, count: int | None) -> None:
    for var, value in (("PYTEST_XDIST_WORKER", name), ("PYTEST_XDIST_WORKER_COUNT", count)):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, str(value))


def test_without_xdist_the_variables_are_used_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    _as_worker(monkeypatch, None, None)
    assert worker_redis_url("redis://127.0.0.1:6379/9") == "redis://127.0.0.1:6379/9"
    assert worker_redis_url("redis://:pw@h:6380") == "redis://:pw@h:6380/0"
    assert worker_port(7101) == 7101


@pytest.mark.parametrize(("name", "db", "port"), [("gw0", 9, 7101), ("gw1", 10, 7111)])
def test_each_worker_takes_the_next_database_and_ten_ports_higher(
    monkeypatch: pytest.MonkeyPatch, name: str, db: int, port: int
) -> None:
    _as_worker(monkeypatch, name, 2)
    assert worker_redis_url("redis://user:pw@127.0.0.1:6379/9?protocol=3") == (
        f"redis://user:pw@127.0.0.1:6379/{db}?protocol=3"
    )
    assert worker_port(7101) == port


def test_a_run_that_would_pass_database_15_is_refused_saying_which_base_fits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _as_worker(monkeypatch, "gw0", 4)
    assert worker_redis_url("redis://127.0.0.1:6379/12").endswith("/12")  # 12..15 fit
    with pytest.raises(WorkerSetupError, match="database 12 or lower"):
        worker_redis_url("redis://127.0.0.1:6379/13")
