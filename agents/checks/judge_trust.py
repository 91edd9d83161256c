"""Whose approval counts: each judge's precision per model, measured, as shipped data.

A judge's approval (critic OK, verifier pass) makes a run ``verified: yes`` only when that
judge, run by that model, was measured to be right when it approves: on the ``test`` half
of the judges eval (`agentbus_evals.judge_set`), at least :data:`TRUSTED_PRECISION` of the
drafts it approved were right, over at least :data:`MIN_APPROVED` approvals. The table is
``agents/data/judge_precision.json``, written by ``agentbus eval judges --half test
--record``; a model or judge it does not list is not measured, and its approval alone
never makes a run verified.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

TRUSTED_PRECISION = 0.95
#: Fewer approvals than this measure nothing: 5/5 right is no evidence of 95 %.
MIN_APPROVED = 20


class JudgePrecision(BaseModel):
    """One judge run by one model on the judges eval's ``test`` half: what it approved."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    model: str = Field(min_length=1, description="The model's name, as `LLM.name` gives it.")
    judge: str = Field(min_length=1, description="critic or verifier.")
    approved: int = Field(ge=0, description="Drafts it approved (OK, pass).")
    approved_right: int = Field(ge=0, description="Of them, the right drafts.")
    measured: str = Field(default="", description="When (UTC) and on what load.")

    @property
    def precision(self) -> float | None:
        """The share of its approvals that were right (None: it approved nothing)."""
        return self.approved_right / self.approved if self.approved else None

    @property
    def trusted(self) -> bool:
        """Whether its approval alone may make a run ``verified: yes``."""
        precision = self.precision
        return (
            self.approved >= MIN_APPROVED
            and precision is not None
            and precision >= TRUSTED_PRECISION
        )


class PrecisionTable(BaseModel):
    """The shipped measurements, one row per (model, judge)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    about: str = ""
    rows: list[JudgePrecision] = []

    def row(self, model: str, judge: str) -> JudgePrecision | None:
        """The measurement of ``judge`` run by ``model``, if there is one."""
        return next((r for r in self.rows if r.model == model and r.judge == judge), None)

    def with_row(self, new: JudgePrecision) -> PrecisionTable:
        """This table with ``new`` in place of the row for its (model, judge)."""
        kept = [r for r in self.rows if (r.model, r.judge) != (new.model, new.judge)]
        return self.model_copy(update={"rows": sorted([*kept, new], key=_order)})


def _order(row: JudgePrecision) -> tuple[str, str]:
    return row.model, row.judge


def table_path() -> Path:
    """Where the shipped table lives."""
    return Path(str(resources.files("agents").joinpath("data", "judge_precision.json")))


@functools.cache
def shipped() -> PrecisionTable:
    """The shipped table (read once per process)."""
    return PrecisionTable.model_validate_json(table_path().read_text())


def trusted(model: str, judge: str, table: PrecisionTable | None = None) -> bool:
    """Whether ``judge`` run by ``model`` has a measured precision that lets its approval
    alone make a run ``verified: yes``."""
    row = (table or shipped()).row(model, judge)
    return row is not None and row.trusted
