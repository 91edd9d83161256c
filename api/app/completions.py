"""A chat completion's use cases: the conversation it continues, and what its run came to.

The OpenAI dialect (``api.http.routes.openai_v1``) parses the request and writes OpenAI's
documents; this finds or seeds the conversation on the store and folds the run's events
into the answer a completion returns, so the route names neither.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agentbus_contracts.events import ApprovalRequest, ClientEvent, Done
from agentbus_contracts.ids import RUN_ID_PATTERN
from api.app.auth import Principal
from api.app.errors import ApiError, ConversationNotFound, Kind
from api.app.run_follow import RunFollower
from bus.store import ConversationNotFound as IdHeld
from bus.store import ConversationStore, MessageRole, Scope
from bus.transcript import Transcript

_ID = re.compile(RUN_ID_PATTERN)


class ConversationTaken(ApiError):
    """The conversation id a completion derived is held by someone else."""

    code = "conversation_taken"
    kind = Kind.CONFLICT
    hint = "send the request again with another user value"


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier message of the request: ``user`` or ``assistant``, and its text."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class Completion:
    """What a followed run came to.

    Attributes:
        answer: the answer text streamed since the pause (none sent before it).
        reasoning: the reasoning text of the whole run.
        error: the message of the run's last error step, if it had one.
        end: the event the completion ends on (None if the feed ended first).
    """

    answer: str
    reasoning: str
    error: str | None
    end: Done | ApprovalRequest | None


class Completions:
    """Finds or seeds a completion's conversation and follows its run to its end."""

    def __init__(self, conversations: ConversationStore, follower: RunFollower) -> None:
        self._store = conversations
        self._follower = follower

    async def conversation(
        self, who: Principal, named: str | None, user: str | None, earlier: Sequence[Turn]
    ) -> str | None:
        """The conversation the run continues, seeded with ``earlier`` if new: the one
        ``named`` (it must exist), the caller's own whose id is ``user``, the caller's keyed
        by ``user``, or a new one (None: the run's intake makes it).

        Only the caller's own conversations are found (an admin naming another user's is
        refused by the starter). A seeded conversation's id derives from the caller, the
        ``user`` value and the earlier messages, so a retried request (after a 429, say)
        finds the conversation it seeded and does not seed it twice.

        Raises:
            ConversationNotFound: ``named`` is no conversation of the caller's
                (``field`` is ``"named"``).
            ConversationTaken: the derived id is someone else's.
        """
        store, owner = self._store, Scope.user(who.tenant_id, who.subject)
        if named is not None:
            if not _ID.match(named) or await store.get(who.scope, named) is None:
                raise ConversationNotFound(f"no conversation {named[:80]!r}", field="named")
            return named
        if user and _ID.match(user) and await store.get(owner, user) is not None:
            return user
        cid = None
        if user:  # the caller's conversation for this user value, never another user's
            cid = _derived_id(who, user, [])
            if await store.get(owner, cid) is not None:
                return cid
        if not earlier:
            return cid
        cid = cid or _derived_id(who, "", earlier)
        if await store.get(owner, cid) is not None:
            return cid  # seeded by an earlier attempt of this request
        title = next((t.text for t in earlier if t.role == "user"), None)
        try:
            await store.ensure(owner, cid, title)
        except IdHeld as e:
            raise ConversationTaken("that conversation id is taken") from e
        for turn in earlier:
            await store.append(owner, cid, MessageRole(turn.role), turn.text, None)
        return cid

    async def follow(
        self, run_id: str, before: Sequence[ClientEvent] = (), after: str = "0-0"
    ) -> Completion:
        """Follow a run from ``after`` until it is done or pauses at a gate; ``before`` are
        the events the client was answered with already (their answer is not repeated)."""
        transcript, end = Transcript(), None
        for event in before:
            transcript.apply(event)
        shown = len(transcript.answer)
        follow = self._follower.follow(run_id, after=after)
        async with contextlib.aclosing(follow) as events:
            async for event in events:
                if event is None:
                    continue
                transcript.apply(event)
                if isinstance(event, Done | ApprovalRequest):
                    end = event
                    break
        errors = [s for s in transcript.steps if s.type == "error"]
        error = errors[-1].message if errors else None  # type: ignore[union-attr]
        return Completion(transcript.answer[shown:], transcript.reasoning, error, end)


def _derived_id(who: Principal, user: str, earlier: Sequence[Turn]) -> str:
    doc = [who.tenant_id, who.subject, user, *(f"{t.role}:{t.text}" for t in earlier)]
    digest = hashlib.sha256("\0".join(doc).encode()).hexdigest()
    return f"oai-{digest[:40]}"
