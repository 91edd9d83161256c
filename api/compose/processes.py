"""The extra worker processes of ``agentbus up``: one Python process uses one core.

``agentbus up`` runs every role in one process (and the API in another, ``edge_process``);
with ``--processes N`` it starts
N-1 ``agentbus worker`` processes on the same Redis and store. Redis consumer groups share
the steps out between them, exactly as between replicas on other machines. A helper runs
every role except retrieval, whose embedded vector store ``up`` itself owns (a helper would
only stand by for it, and helpers die with ``up``; the gateway's ``search_docs`` reaches it
over the bus); with a Qdrant server (``AGENTBUS_QDRANT_URL``) helpers run retrieval too.
Helpers die with ``up``, even by SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bus.embedded import die_with_parent
from bus.keys import Role
from retrieval.settings import RetrievalSettings

#: Roles only the process holding the embedded vector store runs.
_STORE_ROLES = frozenset({Role.RETRIEVAL})


def helper_roles(settings: RetrievalSettings, roles: Sequence[Role]) -> list[Role]:
    """The roles a helper process runs."""
    if settings.qdrant_url is not None:
        return list(roles)
    return [r for r in roles if r not in _STORE_ROLES]


@contextmanager
def helper_processes(
    count: int, roles: Sequence[Role], redis_url: str, concurrency: int
) -> Generator[list[subprocess.Popen[bytes]]]:
    """Start ``count`` worker processes on ``redis_url``; SIGTERM (drain) them on exit."""
    agentbus = str(Path(sys.executable).with_name("agentbus"))
    # One /metrics port per machine is the parent's; a helper's would collide with it.
    env = {k: v for k, v in os.environ.items() if k != "AGENTBUS_METRICS_PORT"}
    env["AGENTBUS_REDIS_URL"] = redis_url
    command = [agentbus, "worker", *map(str, roles), "--concurrency", str(concurrency)]
    procs = [subprocess.Popen(command, env=env, preexec_fn=die_with_parent) for _ in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
