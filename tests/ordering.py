"""The order tests are dealt to xdist's workers: the long scenarios first.

``make test`` runs the suite on two workers that steal work from each other
(``--dist worksteal``): a worker that runs out takes the untouched half of the other's
queue. What cannot be shared is a test already running, so a scenario of a minute that
starts last leaves the other worker idle for that minute. Dealt first, the long scenarios
run while the short tests still fill the other worker, and the run ends on short tests.

A test module says it is long by the timeout it declares (``pytest.mark.timeout``; the
others have the ini file's default): the modules with the longest timeout come first,
each module's tests together and in their order (a module's fixtures are set up once),
then every other module in the order pytest collected it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest


def declared_timeout(item: pytest.Item) -> float:
    """The timeout a test declares with ``pytest.mark.timeout`` (0 when it declares none)."""
    marker = item.get_closest_marker("timeout")
    if marker is None:
        return 0.0
    given = marker.args[0] if marker.args else marker.kwargs.get("timeout", 0)
    return float(given or 0)


def longest_first(items: Sequence[pytest.Item]) -> list[pytest.Item]:
    """``items`` with the modules of the longest declared timeout first (a stable sort:
    modules of equal timeout, and each module's tests, keep pytest's order)."""
    longest: dict[str, float] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        longest[module] = max(longest.get(module, 0.0), declared_timeout(item))
    return sorted(items, key=lambda item: -longest[item.nodeid.split("::", 1)[0]])
