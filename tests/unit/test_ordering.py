"""The long scenarios are dealt first, each module whole (``tests/ordering.py``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest

from tests.ordering import declared_timeout, longest_first


def _item(nodeid: str, timeout: float | None = None) -> pytest.Item:
    marker = None if timeout is None else pytest.mark.timeout(timeout).mark

    def closest(name: str) -> object:
        return marker if name == "timeout" else None

    return cast("pytest.Item", SimpleNamespace(nodeid=nodeid, get_closest_marker=closest))


def test_modules_with_the_longest_timeout_come_first_each_whole_and_in_order() -> None:
    items = [
        _item("tests/a.py::quick"),
        _item("tests/b.py::one"),
        _item("tests/b.py::long", 300),
        _item("tests/b.py::two"),
        _item("tests/c.py::quick"),
        _item("tests/d.py::longest[x]", 900),
        _item("tests/d.py::longest[y]", 900),
        _item("tests/e.py::quick"),
    ]
    assert [i.nodeid for i in longest_first(items)] == [
        "tests/d.py::longest[x]",
        "tests/d.py::longest[y]",
        "tests/b.py::one",
        "tests/b.py::long",
        "tests/b.py::two",
        "tests/a.py::quick",
        "tests/c.py::quick",
        "tests/e.py::quick",
    ]


def test_a_test_without_a_timeout_declares_none() -> None:
    assert declared_timeout(_item("tests/a.py::quick")) == 0.0
    assert declared_timeout(_item("tests/a.py::long", 600)) == 600.0


@pytest.mark.timeout(300)
def test_a_declared_timeout_is_read_from_the_real_marker(request: pytest.FixtureRequest) -> None:
    assert declared_timeout(request.node) == 300.0
