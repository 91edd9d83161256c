"""Scheduled questions: a question asked on a cron schedule, and what its ticks did."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from agentbus_contracts.base import View


class ScheduledQuestion(View):
    """A question asked on a cron schedule, in a conversation of its own."""

    id: str
    tenant_id: str
    subject: str = Field(description="The user who added it; its runs are theirs.")
    cron: str = Field(description="Five fields: minute hour day-of-month month day-of-week.")
    timezone: str = Field(description="The IANA time zone the cron expression is read in.")
    question: str
    settings: dict[str, Any] = Field(description="The question's own settings.")
    webhook_url: str | None = None
    missed: Literal["skip", "run_once"] = Field(
        description="Ticks missed while nothing ran: skip them, or run once for all of them."
    )
    conversation_id: str = Field(description="Where every run's question and answer land.")
    paused: bool
    next_run_at: datetime = Field(description="The next tick (paused: when it would be).")
    created_at: datetime


class ScheduledTick(View):
    """One tick of a schedule: the run it started, or why it started none."""

    tick_at: datetime
    run_id: str | None = None
    state: Literal["claimed", "started", "skipped", "refused"] = Field(
        description="claimed: its run is starting; skipped: missed while nothing ran; "
        "refused: see error."
    )
    error: str | None = Field(default=None, description="The refusal's code.")


class ScheduledQuestionList(View):
    """The caller's schedules (an admin's: the tenant's), the newest first."""

    schedules: list[ScheduledQuestion]


class ScheduledQuestionDetail(View):
    """One schedule and its latest ticks, the newest first."""

    schedule: ScheduledQuestion
    ticks: list[ScheduledTick]
