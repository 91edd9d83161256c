"""Budgets for one step: which counters its model calls are charged to, and how it ends
when one is spent.

`metered` wraps a role's handler. For the step it runs it binds a `StepBudget` (the
ledger of the run's tenant, the scopes the run counts in, a call counter) that
`agents.llm.budgeted.BudgetedLLM` reads before and after every model call. A call refused
before it starts raises `BudgetExhausted`; a call cut mid-stream marks the step. Either way
the step ends its run ``budget_exhausted``: what it streamed stays as the partial answer,
an ``error`` event names the budget, and nothing it would have published goes out.

Scopes: the run; the user's day and month; the tenant's day and month (counted for
``GET /api/v1/usage``; limited where the run's `bus.run_state.Budgets` says). A run that
no budget limits is counted in the dated scopes only, with each step's commit
(`StepBudget.charge`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from prometheus_client import Gauge

from agents import metrics
from agents.errors import AgentError
from bus.budget import BudgetLedger, Charge, Scope, Spent, micro_usd
from bus.commands import Command
from bus.events import Answer, Done, ErrorEvent, Reasoning
from bus.run_state import Budgets, RunState
from bus.runtime.context import StepContext, StepResult
from bus.runtime.worker import Handler

DAY_TTL_S = 3 * 86_400
MONTH_TTL_S = 62 * 86_400

#: What a budget's name means, for the error a spent budget ends its run with.
SAID = {
    "run_tokens": "the run's token budget",
    "run_cost_usd": "the run's cost budget",
    "user_day_tokens": "the user's daily token budget",
    "user_day_cost_usd": "the user's daily cost budget",
    "tenant_month_tokens": "the tenant's monthly token budget",
    "tenant_month_cost_usd": "the tenant's monthly cost budget",
}


class BudgetExhausted(AgentError):
    """A model call would spend more than a budget has left."""

    code = "budget_exhausted"
    hint = "ask a tenant admin to raise the budget (PUT /api/v1/settings), or wait for it to reset"

    def __init__(self, budget: str) -> None:
        super().__init__(f"{SAID.get(budget, budget)} is spent ({budget})")
        self.budget = budget


@dataclass(frozen=True, slots=True)
class _Day:
    start: float
    end: float
    day: str
    month: str


#: The last day a charge was counted in (one slot: the day changes once a day).
_today: list[_Day] = [_Day(0.0, 0.0, "", "")]


def _day(now: float) -> _Day:
    """The UTC day ``now`` falls in, formatted once a day rather than for every step."""
    today = _today[0]
    if today.start <= now < today.end:
        return today
    moment = datetime.fromtimestamp(now, UTC)
    start = moment.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
    today = _Day(start, start + 86_400, moment.strftime("%Y-%m-%d"), moment.strftime("%Y-%m"))
    _today[0] = today
    return today


def day_of(now: float) -> str:
    """The UTC day a charge counts in (``2026-12-01``)."""
    return _day(now).day


def month_of(now: float) -> str:
    """The UTC month a charge counts in (``2026-12``)."""
    return _day(now).month


def user_scope(subject: str, period: str, now: float) -> str:
    """The counter of a user's day or month."""
    return _user_key(subject, period, day_of(now) if period == "day" else month_of(now))


def tenant_scope(period: str, now: float) -> str:
    """The counter of the tenant's day or month."""
    return _tenant_key(period, day_of(now) if period == "day" else month_of(now))


def _user_key(subject: str, period: str, stamp: str) -> str:
    return f"user:{subject}:{period}:{stamp}"


def _tenant_key(period: str, stamp: str) -> str:
    return f"tenant:{period}:{stamp}"


def _micro(usd: float | None) -> int | None:
    return None if usd is None else micro_usd(usd)


def scopes_of(command: Command, budgets: Budgets, now: float, run_ttl_s: int) -> list[Scope]:
    """Every counter a call of this run is charged to, with the limits that apply."""
    run = Scope(
        "run", f"run:{command.run_id}", budgets.run_tokens, _micro(budgets.run_cost_usd), run_ttl_s
    )
    return [run, *dated_scopes(command.subject, budgets, now)]


def dated_scopes(subject: str, budgets: Budgets, now: float) -> tuple[Scope, ...]:
    """The user's and the tenant's day and month counters (all but the run's)."""
    today = _day(now)
    return _dated(
        subject,
        today.day,
        today.month,
        budgets.user_day_tokens,
        budgets.user_day_cost_usd,
        budgets.tenant_month_tokens,
        budgets.tenant_month_cost_usd,
    )


@functools.lru_cache(maxsize=4_096)
def _dated(
    subject: str,
    day: str,
    month: str,
    user_day_tokens: int | None,
    user_day_usd: float | None,
    tenant_month_tokens: int | None,
    tenant_month_usd: float | None,
) -> tuple[Scope, ...]:
    """`dated_scopes`, made once per user, day and limits (every step of theirs asks)."""
    return (
        Scope(
            "user_day",
            _user_key(subject, "day", day),
            user_day_tokens,
            _micro(user_day_usd),
            DAY_TTL_S,
            dated=True,
        ),
        Scope("user_month", _user_key(subject, "month", month), ttl_s=MONTH_TTL_S, dated=True),
        Scope("tenant_day", _tenant_key("day", day), ttl_s=DAY_TTL_S, dated=True),
        Scope(
            "tenant_month",
            _tenant_key("month", month),
            tenant_month_tokens,
            _micro(tenant_month_usd),
            MONTH_TTL_S,
            dated=True,
        ),
    )


@dataclass(slots=True)
class StepBudget:
    """One step's metering: its ledger and scopes, and how many calls it has made.

    A call's id is the step's id and the call's number in the step: a redelivered step
    makes the same calls in the same order, so it reserves and settles the same ids. Calls
    a redelivery may skip (their work was stored the first time) are numbered apart
    (`numbered_apart`), so they never shift the numbers of the others.

    The scopes and whether any is limited are worked out at the step's first model call:
    a step that calls no model (the intake's, mostly) costs nothing here.

    The calls of a run no budget limits reserve nothing and are summed (`add`): the sum
    is charged with the step's commit (`charge`, `bus.budget.Charge`), once, with no
    round trip of its own. The run's own counter is kept only for a run budget.
    """

    ledger: BudgetLedger
    step_id: str
    command: Command
    budgets: Budgets
    started: float
    run_ttl_s: int
    expires_at: float
    calls: int = 0
    cut: str | None = field(default=None)
    series: str = "m"
    apart: dict[str, int] = field(default_factory=lambda: {})
    tokens: int = 0
    micro_usd: int = 0
    _scopes: list[Scope] | None = field(default=None)
    _limited: bool | None = field(default=None)

    @property
    def scopes(self) -> list[Scope]:
        """Every counter the step's calls are charged to (`scopes_of`)."""
        if self._scopes is None:
            self._scopes = scopes_of(self.command, self.budgets, self.started, self.run_ttl_s)
        return self._scopes

    @property
    def limited(self) -> bool:
        """Whether any budget limits the run (else calls are counted, not reserved)."""
        if self._limited is None:
            self._limited = self.budgets.limited()
        return self._limited

    def add(self, tokens: int, micro_usd: int) -> None:
        """Count a call of an unlimited run, charged with the step's commit."""
        self.tokens += tokens
        self.micro_usd += micro_usd

    def charge(self, spent: Callable[[dict[str, Spent]], None] | None = None) -> Charge | None:
        """What the step's calls spent, to charge with its commit (None: nothing)."""
        if not (self.tokens or self.micro_usd):
            return None
        # The run's own counter is only for a run budget.
        dated = dated_scopes(self.command.subject, self.budgets, self.started)
        return Charge(self.ledger.tenant_id, dated, self.tokens, self.micro_usd, spent)

    def next_call_id(self) -> str:
        """The id of the step's next model call."""
        if self.series != "m":
            self.apart[self.series] = number = self.apart.get(self.series, 0) + 1
            return f"{self.step_id}:{self.series}{number}"
        self.calls += 1
        return f"{self.step_id}:m{self.calls}"


@functools.lru_cache(maxsize=4_096)
def _spent_gauges(tenant: str, period: str) -> tuple[Gauge, Gauge]:
    """A tenant's spent gauges for a period (labelled once: labelling costs a lock and
    checks, and every charge sets them)."""
    return (
        metrics.BUDGET_TOKENS.labels(tenant, period),
        metrics.BUDGET_COST.labels(tenant, period),
    )


def show_spent(tenant: str, totals: dict[str, Spent]) -> None:
    """Set the tenant's spent gauges from a charge's new totals."""
    for period in ("day", "month"):
        spent = totals.get(f"tenant_{period}")
        if spent is not None:
            token_gauge, cost_gauge = _spent_gauges(tenant, period)
            token_gauge.set(spent.tokens)
            cost_gauge.set(spent.cost_usd)


@contextlib.contextmanager
def numbered_apart(series: str) -> Generator[None]:
    """Number the model calls made inside on their own (``STEP:{series}1``, ...).

    For calls a redelivered step may not make again because their result was stored (a
    conversation's summary): the step's other calls keep their numbers either way, so
    each is still reserved and settled once.
    """
    step = CURRENT.get()
    if step is None:
        yield
        return
    outer, step.series = step.series, series
    try:
        yield
    finally:
        step.series = outer


CURRENT: contextvars.ContextVar[StepBudget | None] = contextvars.ContextVar(
    "agentbus_step_budget", default=None
)


def state_of(command: Command) -> RunState | None:
    """The run state a command carries, if its payload has one."""
    state = getattr(command.payload, "state", None)
    return state if isinstance(state, RunState) else None


def metered(handler: Handler, *, run_ttl_s: int) -> Handler:
    """The handler with its model calls metered and a spent budget ending its run."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        state = state_of(command)
        budgets = state.settings.budgets if state is not None else Budgets()
        step = StepBudget(
            ledger=BudgetLedger(ctx.redis, command.tenant_id, charged_ttl_s=run_ttl_s),
            step_id=command.step_id,
            command=command,
            budgets=budgets,
            started=time.time(),
            run_ttl_s=run_ttl_s,
            expires_at=command.deadline + 60,
        )
        token = CURRENT.set(step)
        try:
            result = await handler(ctx, command)
        except BudgetExhausted as e:
            return exhausted(command, e.budget)
        finally:
            CURRENT.reset(token)
        if step.cut is not None:
            return exhausted(command, step.cut, result)
        charge = step.charge(functools.partial(show_spent, command.tenant_id))
        return result if charge is None else replace(result, charge=charge)

    return handle


def exhausted(command: Command, budget: str, result: StepResult | None = None) -> StepResult:
    """The step's end when ``budget`` is spent: the tokens it streamed (``result``'s, still
    unwritten), the error naming the budget, ``done``. Nothing it would have published
    goes out; its store records do (what happened, happened)."""
    events = () if result is None else result.events
    kept = [e for e in events if isinstance(e, Answer | Reasoning)]
    error = BudgetExhausted(budget)
    run_id, step_id = command.run_id, command.step_id
    return StepResult(
        events=[
            *kept,
            ErrorEvent(
                run_id=run_id,
                step_id=step_id,
                code=BudgetExhausted.code,
                message=error.message,
                budget=budget,
            ),
            Done(run_id=run_id, step_id=step_id, status="budget_exhausted", stop_reason=budget),
        ],
        finished="budget_exhausted",
        records=() if result is None else result.records,
    )
