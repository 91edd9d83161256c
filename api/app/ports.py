"""What the application layer needs from a transport, named as ports.

The use cases in ``api.app`` see only these; Redis implements them in ``api.streams``
(the relay's blocking read, the limits' Lua scripts, the publish-once script) or in ``bus``
(the budget ledger, the first turns), and the composition root (``api.compose``) or the
transport wires one to each use case.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agentbus_contracts.events import ClientEvent
    from api.app.ask import RunToPublish
    from bus.budget import Spent
    from bus.commands import Command
    from bus.store import DocumentRecord, Scope
    from bus.store.turn_types import FirstTurn, Turn
    from retrieval.ingest import PreparedDocument
    from retrieval.jobs import IngestTask, Job, JobStatus

Sink = Callable[[str, bytes], None]
"""Receives (entry id, the entry's ``data`` field) for each new entry, in stream order."""


@dataclass(eq=False)
class Subscription:
    """One sink on one stream; given back to :meth:`RunEvents.unsubscribe` when done."""

    stream: str
    shard: int
    sink: Sink
    active: bool = True


@dataclass(frozen=True, slots=True)
class StreamState:
    """What a join needs to know about a run's event stream."""

    exists: bool
    last_id: str = "0-0"
    first_id: str | None = None
    length: int = 0
    entries_added: int | None = None  # Redis 7+ only
    max_deleted_id: str | None = None  # Redis 7+ only (XDEL; trimming does not move it)


@dataclass(frozen=True, slots=True)
class JoinState:
    """A run's owner key and its event stream, read together (they share a hash tag).

    Attributes:
        owner: the owner key's value (tenant and user, `api.app.access.owner_value`), or None.
        owner_ttl_ms: the owner key's remaining life in milliseconds (negative: none).
        stream: the event stream's state.
    """

    owner: str | None
    owner_ttl_ms: int
    stream: StreamState


class RunEvents(Protocol):
    """The run feed: a run's event stream, read live and caught up, with no gap."""

    def shard_of(self, run_id: str) -> int:
        """The shard a run's streams and keys live on."""
        ...

    def stream_of(self, run_id: str, shard: int) -> str:
        """The name of the run's event stream, as the other methods take it."""
        ...

    async def start(self) -> None:
        """Start reading (idempotent); the app's lifespan calls it."""
        ...

    async def stop(self) -> None:
        """Stop reading; subscriptions receive nothing more."""
        ...

    def subscribe(
        self, stream: str, shard: int, after: str, sink: Sink
    ) -> tuple[Subscription, str | None]:
        """Watch ``stream`` for entries after ``after``.

        Returns:
            The subscription, and the cursor up to which the caller reads the stream itself
            with :meth:`read_range` (None when every entry after ``after`` reaches the sink).
        """
        ...

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering to ``sub`` (idempotent)."""
        ...

    async def read_range(
        self, stream: str, after: str, until: str, count: int
    ) -> list[tuple[str, bytes]]:
        """Up to ``count`` entries of ``stream`` after ``after`` (exclusive) up to ``until``."""
        ...

    async def history(self, stream: str) -> list[tuple[str, bytes]]:
        """Every entry of ``stream`` (id, the entry's ``data`` field), oldest first.

        Raises:
            bus.errors.MessageInvalid: an entry has no ``data`` field.
        """
        ...

    async def stream_state(self, stream: str) -> StreamState:
        """Existence, first and last ids of ``stream`` (and what was deleted, on Redis 7)."""
        ...

    async def join_state(self, run_id: str, shard: int) -> JoinState:
        """The run's owner key and its event stream's state, in one round trip."""
        ...


class IdempotencyClaims(Protocol):
    """The ``Idempotency-Key`` claims: one value per tenant and digested key, set once, for
    a while."""

    async def claim(self, tenant_id: str, digest: str, value: str, ttl_s: int) -> bool:
        """Set the claim to ``value`` for ``ttl_s`` seconds unless it is set; whether this
        call set it."""
        ...

    async def read(self, tenant_id: str, digest: str) -> str | None:
        """The claim's value (None: unset, or it expired)."""
        ...

    async def drop(self, tenant_id: str, digest: str) -> None:
        """Unset the claim."""
        ...


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a start is allowed and, if not, how long to wait."""

    allowed: bool
    retry_after_s: int = 0


class RateLimits(Protocol):
    """Each tenant's rate of run starts and its quota of runs in flight."""

    @property
    def per_minute(self) -> int:
        """Run starts per tenant per minute (0: no rate limit)."""
        ...

    @property
    def max_active(self) -> int:
        """Runs in flight per tenant (0: no quota)."""
        ...

    async def check_rate(self, tenant_id: str) -> Verdict:
        """Count one run start against the tenant's rate."""
        ...

    async def acquire(self, tenant_id: str, run_id: str, deadline: float) -> Verdict:
        """Take one of the tenant's slots for ``run_id`` until ``deadline``."""
        ...

    async def release(self, tenant_id: str, run_id: str) -> None:
        """Give the run's slot back (idempotent)."""
        ...


class Outcome(Enum):
    """What publishing a run did."""

    PUBLISHED = "published"
    """Published now: its owner recorded, its intake command queued for admission."""
    REPEATED = "repeated"
    """Published before (a retry with the same run id): nothing new was written."""
    ID_TAKEN = "id_taken"
    """Another owner's run has this run id: nothing was written."""
    QUEUE_FULL = "queue_full"
    """The tenant's fair-share queue on the run's shard is full: nothing was written."""
    VERSION_MOVED = "version_moved"
    """The tenant's settings version is not the one expected: nothing was written."""


@dataclass(frozen=True, slots=True)
class Published:
    """What publishing a run did, with what a refusal needs to be answered.

    Attributes:
        outcome: what happened.
        waiting: ``QUEUE_FULL``: the tenant's runs waiting on the shard.
        retry_after_s: ``QUEUE_FULL``: how long the caller should wait.
        version: ``VERSION_MOVED``: the tenant's settings version the shard holds.
    """

    outcome: Outcome
    waiting: int = 0
    retry_after_s: int = 0
    version: int = 0


class PreparedRun(Protocol):
    """A run's publication, encoded once (`RunPublishing.prepare`): published now, or kept
    with its queued turn and published when its turn comes."""

    def stored(self) -> str:
        """The publication as a queued turn keeps it (`TurnPublishing.publish_queued`)."""
        ...

    async def publish(
        self, *, version: int | None = None, first_turn: FirstTurn | None = None
    ) -> Published:
        """Publish the run exactly once, queued for its tenant's fair share of its shard.

        Args:
            version: the tenant's settings version to check first, in the same step (None:
                no check).
            first_turn: the conversation's first turn, written with the run (both or
                neither); the conversation's id is on the run's shard.
        """
        ...


class TurnPublishing(Protocol):
    """Publishes a queued run whose turn in its conversation has come."""

    async def publish_queued(self, turn: Turn) -> Published:
        """Publish the turn's run as its queued turn kept it, its time budget starting now
        (a repeat is a no-op: `Outcome.REPEATED`)."""
        ...


class RunPublishing(TurnPublishing, Protocol):
    """Publishes runs exactly once, each with its owner, its intake command queued for the
    tenant's fair share of its shard, and its webhook's registration."""

    def shard_of(self, id_: str) -> int:
        """The shard a run (or a conversation) of this id lives on."""
        ...

    def prepare(self, run: RunToPublish) -> PreparedRun:
        """The run's intake command in the current trace (else the caller's), with the
        caller's ACL groups, encoded with everything its publication writes."""
        ...

    async def owner(self, run_id: str) -> str | None:
        """Who published the run of this id (`api.app.access.owner_value`), in one round
        trip; None: nobody did, or it expired."""
        ...


class FirstTurnRecords(Protocol):
    """Conversations' first turns, kept with their runs instead of in SQL (a first turn is
    written by its run's publication: `PreparedRun.publish`)."""

    async def read(self, conversation_id: str) -> FirstTurn | None:
        """The conversation's first turn (None: none was recorded, or it expired)."""
        ...


class MemoryMarks(Protocol):
    """Whether a user has long-term memories, as marked beside the store: the memory
    step's writer marks a user when it stores one, so "none" is known without a count."""

    async def has(self, tenant_id: str, subject: str) -> bool | None:
        """True: marked as having some; False: marked as having none; None: not known."""
        ...

    async def none_found(self, tenant_id: str, subject: str) -> None:
        """Mark that a count found none (never over a writer's mark, and not for long)."""
        ...


class Spending(Protocol):
    """One tenant's model spending, as its budget counters hold it (`bus.budget`)."""

    async def spent(self, scope_key: str) -> Spent:
        """What the scope (a user's day, the tenant's month) has spent."""
        ...

    async def held(self, scope_key: str) -> int:
        """Tokens held for the scope by calls still in flight."""
        ...


Ledgers = Callable[[str], Spending]
"""A tenant's spending, by tenant id."""

TransportErrors = tuple[type[Exception], ...]
"""What the ports' transport raises when it fails (Redis's ``RedisError``): a use case turns
it into ``Unavailable`` without naming the transport."""

CancelRun = Callable[[str], Awaitable[None]]
"""Asks the run of this id to stop (workers honour it between steps and while streaming)."""

SendCommand = Callable[["Command"], Awaitable[object]]
"""Publishes a command to its role's stream on its shard (the bus's ``publish``)."""

ReadRunEvents = Callable[[str, int], AsyncIterator[tuple[str, "ClientEvent"]]]
"""A run's events on its shard from its start until its ``done``, with their stream ids."""

Probe = Callable[[], Awaitable[object]]
"""A round trip to a service the process needs (``/readyz``): raises when it does not answer."""

Prepare = Callable[[], Awaitable[None]]
"""Makes what the process will use exist (the role streams' consumer groups), idempotently."""

ErasedLately = Callable[[str, str], Awaitable[bool]]
"""Whether the user (tenant id, subject) was erased lately: the erasure fence (`bus.fence`)
holds them, so no step of theirs would commit."""

RunOwner = Callable[[str, int], Awaitable[str | None]]
"""Who started the run of this id and shard, as the API wrote it when it published the run
(`api.app.access.owner_value`); None once that expired, or for a run started elsewhere."""


class IngestJobs(Protocol):
    """Document ingest jobs on the bus: published to the retrieval role, followed by id."""

    async def publish(self, tasks: Sequence[IngestTask], *, tenant: str, subject: str) -> Job:
        """Publish a job of ``tasks`` for the tenant's ``subject``."""
        ...

    async def remove(self, tenant: str, subject: str, document: DocumentRecord) -> str:
        """Remove a document's chunks from search (a job of its own); the job's id."""
        ...

    async def tenant_of(self, job_id: str) -> str | None:
        """The tenant whose job this is (None: no such job, or it expired)."""
        ...

    async def status(self, job_id: str) -> JobStatus:
        """The job's progress."""
        ...

    async def outcome(self, job_id: str) -> tuple[str | None, bool]:
        """The job's error message, if it failed, and whether it ended (its last events)."""
        ...


class JobFollow(Protocol):
    """An ingest job published and followed to its end (``agentbus ingest`` over the bus)."""

    async def publish(
        self, tasks: Sequence[IngestTask], *, tenant: str, subject: str, deadline_s: float
    ) -> Job:
        """Publish a job of ``tasks`` for the tenant's ``subject``, dropped after ``deadline_s``."""
        ...

    async def consumed(self, job: Job) -> bool:
        """Whether a retrieval worker consumes the job's lane yet."""
        ...

    async def status(self, job_id: str) -> JobStatus:
        """The job's progress."""
        ...

    async def events(self, job: Job, *, after: str, block_ms: int) -> list[tuple[str, ClientEvent]]:
        """The job's events after ``after``, with their ids (waits up to ``block_ms`` for one)."""
        ...


class UploadedFile(Protocol):
    """A file a client sent (what a multipart form's file part offers)."""

    filename: str | None

    async def read(self, size: int = -1) -> bytes:
        """Its bytes (all of them by default)."""
        ...


class Uploads(Protocol):
    """Turns uploaded files into ingest tasks: the retrieval's parsing and chunking."""

    async def prepare(
        self, data: bytes, *, source: str, tenant: str, acl: Sequence[str]
    ) -> PreparedDocument:
        """The file parsed and chunked (off the event loop: parsing a PDF is CPU work).

        Raises:
            api.app.documents.UploadFailed: the file cannot be parsed (unsupported type,
                unreadable bytes).
        """
        ...

    def split(self, docs: Sequence[PreparedDocument]) -> list[IngestTask]:
        """The documents' chunks in tasks that each fit one message on the bus."""
        ...


class Resumes(Protocol):
    """Continues paused runs (`agents.gates`): with a gate's decision, or with the tool
    results of the run's client. Raise `bus.store.GateError` or `agents.gates.BadDecision`."""

    async def decide(self, scope: Scope, groups: Sequence[str], run_id: str, decision: str) -> None:
        """Resume ``run_id`` as ``scope`` (with its ACL ``groups``) with ``decision``."""
        ...

    async def client_tools(
        self, scope: Scope, groups: Sequence[str], run_id: str, results: Mapping[str, str]
    ) -> None:
        """Resume ``run_id`` as ``scope`` with its client's tool ``results`` (by call id)."""
        ...


class SessionStore(Protocol):
    """The web page's one-time login tokens and its sessions, each kept under its token's
    digest until it expires."""

    async def put_login(self, digest: str, key_id: str, ttl_s: int) -> None:
        """Keep a login token: the key id it signs in as, for ``ttl_s`` seconds."""
        ...

    async def take_login(self, digest: str) -> str | None:
        """A login token's key id, unset in the same step (None when there was none)."""
        ...

    async def put_session(self, digest: str, doc: str, ttl_s: int) -> None:
        """Keep a session (``doc``: the key id it acts for, when it began) for ``ttl_s``
        seconds."""
        ...

    async def read_session(self, digest: str) -> tuple[str | None, int]:
        """A session's doc and the seconds it has left (negative: no expiry or no value),
        in one round trip."""
        ...

    async def touch_session(self, digest: str, ttl_s: int) -> None:
        """Give a session ``ttl_s`` more seconds from now."""
        ...

    async def drop_session(self, digest: str) -> None:
        """End a session."""
        ...
