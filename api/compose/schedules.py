"""The scheduled questions of a process, wired from the settings: the use cases and the
scheduler (`api.app.schedules`, `api.app.scheduler`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from api.app.schedules import ScheduleBook
from api.compose.settings import AppSettings
from bus.store import Stores
from gateway.webhooks.target import private_hosts

if TYPE_CHECKING:  # the scheduler and the run starter: an API's, not the CLI's `schedules`
    from api.app.scheduler import Scheduler
    from api.app.starter import RunStarter


def schedule_book(
    settings: AppSettings, stores: Stores, starter: RunStarter | None
) -> ScheduleBook | None:
    """The schedules' use cases (None without the schedules table's store)."""
    if stores.schedules is None:
        return None
    return ScheduleBook(
        stores.schedules,
        starter,
        max_question_chars=settings.api.api_max_question_chars,
        webhook_private_hosts=private_hosts(settings.gateway.webhook_private_hosts),
        audit=stores.audit,
    )


def scheduler_of(settings: AppSettings, stores: Stores, starter: RunStarter) -> Scheduler | None:
    """The scheduler an API replica runs (None without the schedules table's store)."""
    from api.app.scheduler import Scheduler

    if stores.schedules is None:
        return None
    return Scheduler(
        stores.schedules,
        starter,
        stores.keys,
        misfire_grace_s=settings.api.schedule_misfire_grace_s,
    )
