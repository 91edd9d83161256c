"""What the conversation turn queue (`bus.store.turns`) hands out: a turn, where it is, what
an admission decided, and the refusal of a busy conversation under ``reject``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from bus.errors import StoreError
from bus.store.scope import Scope

INTERRUPTED = "interrupted"
"""The status of a partial answer kept by ``interrupt``."""

CANCELLED_BY = {"interrupt": INTERRUPTED, "rollback": "rolled_back"}
"""The ``error_code`` of a run a later question cancelled, by that question's policy."""


class TurnState(StrEnum):
    """Where a turn is: waiting its turn, running, or over."""

    QUEUED = "queued"
    RUNNING = "running"
    ENDED = "ended"


class ConversationBusy(StoreError):
    """The conversation has a run in flight and the question's policy is ``reject``."""

    code = "conversation_busy"
    hint = "wait for the running answer to finish, or ask with multitask enqueue or interrupt"


@dataclass(frozen=True, slots=True)
class Turn:
    """One run of a conversation, as the store holds it."""

    run_id: str
    conversation_id: str
    tenant_id: str
    subject: str
    state: TurnState
    question: str
    publish: str
    timeout_s: float
    running_until: float | None
    disposition: str | None
    parent_message_id: int | None = None

    @property
    def owner(self) -> Scope:
        """The user the turn's run belongs to."""
        return Scope.user(self.tenant_id, self.subject)


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """A conversation run's end, written with its turn's end in one transaction
    (`bus.store.runs.RunStore.end_turn`, `~RunStore.end_answered`).

    Attributes:
        next: the conversation's running turn to publish now: the one this end promoted,
            or, when the turn had ended before (a redelivered end), the one running since
            (publishing it again is a no-op); None when nothing waits.
        asked: the id of the question's message, when the run's answer was appended.
    """

    next: Turn | None = None
    asked: int | None = None


@dataclass(frozen=True, slots=True)
class Admission:
    """What the policy decided for a new question.

    Attributes:
        state: ``running`` (publish it now) or ``queued`` (it waits its turn).
        ahead: how many turns run or wait before it (0 when it runs now).
        cancel: the run to cancel (``interrupt`` and ``rollback``), if any.
        promoted: a queued turn this admission found due (its predecessor was stale):
            the caller publishes it.
        replayed: the run id had been admitted before (a retry); nothing changed.
    """

    state: TurnState
    ahead: int = 0
    cancel: str | None = None
    promoted: Turn | None = None
    replayed: bool = False


@dataclass(frozen=True, slots=True)
class FirstTurn:
    """The running first turn of a conversation drawn for its run, as the script that
    published the run recorded it in Redis (`bus.keys.conversation_first_turn`): SQL holds
    none of it until a later question of the conversation writes it there (`TurnStore.admit`).
    """

    run_id: str
    tenant_id: str
    subject: str
    question: str
    timeout_s: float
    running_until: float

    @property
    def owner(self) -> Scope:
        """The user the run belongs to."""
        return Scope.user(self.tenant_id, self.subject)

    def dumps(self) -> str:
        """The form the publish script stores."""
        return json.dumps(
            [self.run_id, self.tenant_id, self.subject, self.question, self.timeout_s,
             self.running_until]
        )  # fmt: skip

    @classmethod
    def loads(cls, raw: str | bytes) -> FirstTurn:
        """A stored first turn."""
        run_id, tenant_id, subject, question, timeout_s, until = json.loads(raw)
        return cls(str(run_id), str(tenant_id), str(subject), str(question), float(timeout_s),
                   float(until))  # fmt: skip
