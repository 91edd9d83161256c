"""Admitting a run into its conversation's turns, for the starter (`api.app.starter`).

The decision is the store's (`bus.store.turns`, under the conversation's lock); this
module turns its errors into the API's and acts on what it decided: it publishes a turn
that came due (its predecessor was stale) and asks the running run to stop for
``interrupt`` and ``rollback``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from api.app.errors import ConversationBusy, ConversationNotFound, Unavailable
from bus.errors import StoreError
from bus.events import RunStatus
from bus.store import ConversationNotFound as NoSuchConversation
from bus.store.turn_types import Admission, FirstTurn
from bus.store.turn_types import ConversationBusy as Busy

if TYPE_CHECKING:
    from api.app.ports import CancelRun
    from api.app.turn_publisher import TurnPublisher
    from bus.run_state import Multitask
    from bus.store import Scope


@dataclass(frozen=True, slots=True)
class NewTurn:
    """A run to admit into its conversation (``fresh``: in a conversation whose id was drawn
    for it just now, see `bus.store.turns.TurnStore.admit`)."""

    owner: Scope
    conversation_id: str
    run_id: str
    question: str
    publish: str
    timeout_s: float
    mode: str
    parent_message_id: int | None = None
    fresh: bool = False
    first: FirstTurn | None = None


async def refuse_if_busy(
    turns: TurnPublisher, scope: Scope, conversation_id: str, policy: Multitask
) -> None:
    """Refuse a ``reject`` question to a busy conversation before anything is spent.

    Only a first look: the decision that counts is the admission's, under the lock.

    Raises:
        ConversationBusy: the conversation has a run in flight (or queued).
    """
    if policy != "reject":
        return
    try:
        first = None if turns.first_turns is None else await turns.first_turns.read(conversation_id)
        live = await turns.turns.waiting(scope, conversation_id, first)
    except StoreError as e:
        raise Unavailable(f"cannot read the conversation: {e}") from e
    now = time.time()
    if any((t.running_until or now + 1) > now for t in live):
        raise ConversationBusy(f"conversation {conversation_id!r} has a run in flight")


async def admit(
    turns: TurnPublisher, turn: NewTurn, policy: Multitask, cancel: CancelRun
) -> Admission:
    """Admit the run into its conversation's turns; act on what that decided.

    Raises:
        ConversationBusy: busy, and the policy is ``reject`` (nothing was written).
        ConversationNotFound: the conversation is another user's or tenant's.
        Unavailable: the store failed.
    """
    try:
        admission = await turns.turns.admit(
            turn.owner,
            turn.conversation_id,
            turn.run_id,
            turn.question,
            publish=turn.publish,
            timeout_s=turn.timeout_s,
            policy=policy,
            mode=turn.mode,
            parent_message_id=turn.parent_message_id,
            fresh=turn.fresh,
            first=turn.first,
        )
    except Busy as e:
        raise ConversationBusy(str(e)) from e
    except NoSuchConversation as e:
        raise ConversationNotFound(f"no conversation {turn.conversation_id!r}") from e
    except StoreError as e:
        raise Unavailable(f"cannot admit the question: {e}") from e
    if admission.promoted is not None:  # its predecessor was stale: its turn has come
        await turns.publish(admission.promoted)
    if admission.cancel is not None:
        await cancel(admission.cancel)
    return admission


async def give_back(turns: TurnPublisher | None, owner: Scope, run_id: str) -> None:
    """A run that was admitted but not published gives its turn to the next one."""
    if turns is None:
        return
    try:
        await turns.finished(owner, run_id, RunStatus.ERROR, None)
    except Exception:  # the sweeper ends it at its deadline at the latest
        return
