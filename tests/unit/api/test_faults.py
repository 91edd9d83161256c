"""The test-only kill points stay off unless a test arms them with both variables."""

from __future__ import annotations

import pytest

from api.compose import faults


def test_a_fault_point_alone_arms_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTBUS_TEST_FAULTS", raising=False)
    monkeypatch.setenv("AGENTBUS_FAULT_POINT", "after_tool")
    assert faults._armed() == frozenset()  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setenv("AGENTBUS_TEST_FAULTS", "true")  # only "1" arms them
    assert faults._armed() == frozenset()  # pyright: ignore[reportPrivateUsage]


def test_both_variables_arm_the_named_points_and_a_typo_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTBUS_TEST_FAULTS", "1")
    monkeypatch.setenv("AGENTBUS_FAULT_POINT", "after_claim, before_commit")
    assert faults._armed() == {"after_claim", "before_commit"}  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setenv("AGENTBUS_FAULT_POINT", "after_tools")
    with pytest.raises(ValueError, match="unknown fault points"):
        faults._armed()  # pyright: ignore[reportPrivateUsage]


def test_this_test_process_has_no_point_armed() -> None:
    assert frozenset() == faults._ARMED  # pyright: ignore[reportPrivateUsage]
    faults.fault("after_tool", "anything")  # returns: nothing is armed here
