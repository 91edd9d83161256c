"""What each pytest-xdist worker has to itself: a Redis database and a range of ports.

``make test`` runs the suite on several workers at once (``pytest -n``). Every test of a
worker shares that worker's Redis database (flushed around each test that uses it), so two
workers never flush or read each other's keys. Worker ``gwN`` takes database ``base + N``,
where ``base`` is the database of ``AGENTBUS_TEST_REDIS_URL`` (default 9), and its Redis
Cluster nodes start ``N * CLUSTER_PORT_STRIDE`` ports above ``AGENTBUS_TEST_CLUSTER_PORT``.
A run without xdist (or with ``-p no:xdist``) uses the variables as given. Postgres needs
nothing here: every session creates a database of its own; data folders are ``tmp_path``,
which xdist already keeps apart per worker.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

#: Redis serves databases 0..15 unless configured otherwise.
REDIS_DATABASES = 16
#: Ports between two workers' clusters (a cluster takes six: three masters, three replicas).
CLUSTER_PORT_STRIDE = 10


class WorkerSetupError(RuntimeError):
    """The test environment cannot give every worker a database or ports of its own."""


def worker_index() -> int:
    """This process's xdist worker number (``gw3`` is 3); 0 when xdist is not running."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name.removeprefix("gw")) if name.startswith("gw") else 0


def worker_count() -> int:
    """How many workers this run has (1 without xdist)."""
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)


def worker_redis_url(base: str) -> str:
    """``base`` moved to this worker's database: ``base``'s own for worker 0 (or no xdist),
    the next ones for the others; refuses a run whose last worker would pass database 15."""
    parts = urlsplit(base)
    path = parts.path.strip("/")
    first = int(path) if path else 0
    last = first + worker_count() - 1
    if last >= REDIS_DATABASES:
        raise WorkerSetupError(
            f"{worker_count()} workers from Redis database {first} would need database {last}; "
            f"point AGENTBUS_TEST_REDIS_URL at database {REDIS_DATABASES - worker_count()} or "
            "lower, or run fewer workers (-n)"
        )
    return urlunsplit(parts._replace(path=f"/{first + worker_index()}"))


def worker_port(base: int, stride: int = CLUSTER_PORT_STRIDE) -> int:
    """The first of this worker's ports in a range that starts at ``base`` for worker 0."""
    return base + worker_index() * stride
