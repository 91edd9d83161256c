"""Retention policies: a tenant's days over the deployment's, bounds, and cutoffs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from bus.retention import KINDS, RetentionPolicy
from bus.settings import BusSettings

NOW = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)


def test_by_default_every_kind_is_kept_forever() -> None:
    policy = RetentionPolicy().over(BusSettings().retention)
    assert [policy.cutoff(kind, NOW) for kind in KINDS] == [None] * len(KINDS)


def test_the_tenants_days_win_where_it_set_them_and_the_default_elsewhere() -> None:
    default = RetentionPolicy(runs=365, audit=730)
    policy = RetentionPolicy(runs=30, blobs=7).over(default)
    assert (policy.runs, policy.blobs, policy.audit, policy.messages) == (30, 7, 730, None)
    assert policy.cutoff("runs", NOW) == NOW - timedelta(days=30)


@pytest.mark.parametrize("bad", [{"runs": 0}, {"audit": 36_501}, {"everything": 3}, {"runs": "x"}])
def test_out_of_range_or_unknown_kinds_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RetentionPolicy.model_validate(bad)


def test_the_deployment_default_is_read_from_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTBUS_RETENTION", '{"runs": 90, "checkpoints": 30}')
    assert BusSettings().retention == RetentionPolicy(runs=90, checkpoints=30)
