"""A test's markers come from its folder and its parameters (``tests/conftest.py``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from tests.conftest import markers_of

TESTS = Path(__file__).parents[1]


def _item(path: Path, params: dict[str, object], fixtures: tuple[str, ...] = ()) -> pytest.Item:
    callspec = SimpleNamespace(params=params) if params else None
    item = SimpleNamespace(path=path, callspec=callspec, fixturenames=list(fixtures))
    return cast("pytest.Item", item)


@pytest.mark.parametrize(
    ("path", "params", "expected"),
    [
        (TESTS / "unit/bus/test_keys.py", {}, set()),
        (TESTS / "unit/bus/test_runtime.py", {"redis": "fake"}, set()),
        (TESTS / "unit/bus/test_runtime.py", {"redis": "real"}, {"connected"}),
        (TESTS / "integration/api/test_probe.py", {}, {"connected"}),
        (TESTS / "integration/store/test_runs.py", {"store_url": "sqlite"}, {"connected"}),
        (
            TESTS / "integration/store/test_runs.py",
            {"store_url": "postgres"},
            {"connected", "postgres"},
        ),
        (TESTS / "integration/cluster/test_e2e.py", {}, {"connected", "cluster"}),
        (TESTS / "e2e/web/test_gates.py", {}, {"connected"}),
        (TESTS.parent / "api/client/tests/test_client.py", {}, set()),
    ],
)
def test_a_test_is_marked_for_the_servers_its_folder_and_parameters_need(
    path: Path, params: dict[str, object], expected: set[str]
) -> None:
    assert markers_of(_item(path, params)) == expected


def test_a_unit_test_needs_no_server(request: pytest.FixtureRequest) -> None:
    assert not {m.name for m in request.node.iter_markers()} & {"connected", "postgres"}


def test_a_test_that_loads_the_local_model_is_slow_wherever_it_lives() -> None:
    item = _item(TESTS / "unit/agents/test_x.py", {}, ("tmp_path", "local_model_dir"))
    assert markers_of(item) == {"slow"}
    assert markers_of(_item(TESTS / "unit/agents/test_x.py", {}, ("tmp_path",))) == set()
