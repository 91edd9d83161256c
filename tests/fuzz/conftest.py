"""The system every fuzzer here runs against: started once for the folder, stopped after
its last test (before other tests flush the test Redis under it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fuzz.system import System, running_system


@pytest.fixture(scope="package")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    """``agentbus api`` and every run role's worker, with a user, an admin and another
    tenant's key; fails the last test if a process died."""
    with running_system(tmp_path_factory.mktemp("fuzzed")) as running:
        yield running
        assert running.dead() == [], "\n".join(running.dead())
