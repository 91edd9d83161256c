"""``AgentbusClient``: the same client for code without an event loop.

It runs one :class:`AsyncAgentbusClient` on a private event loop in a background thread and
waits for each call, so both faces behave identically (retries, reconnects, typed errors)
and work from inside another running loop too (a notebook).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from types import TracebackType
from typing import Any, TypeVar

from agentbus_client.async_client import AsyncAgentbusClient
from agentbus_client.stream import EventStream, StreamItem
from agentbus_contracts import (
    Conversation,
    ConversationDetail,
    Delivery,
    Document,
    IngestJob,
    Run,
    RunPage,
    Started,
    TenantSettings,
    Upload,
    UsageReport,
    WebhookSecret,
)

T = TypeVar("T")


class _Portal:
    """An event loop in a daemon thread; ``call`` runs a coroutine there and waits."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="agentbus-client", daemon=True
        )
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


class SyncEventStream:
    """A run's events as a plain iterator (see ``EventStream``)."""

    def __init__(self, portal: _Portal, stream: EventStream) -> None:
        self._portal = portal
        self._stream = stream

    @property
    def run_id(self) -> str:
        """The run."""
        return self._stream.run_id

    @property
    def conversation_id(self) -> str | None:
        """The run's conversation, when known."""
        return self._stream.conversation_id

    @property
    def last_event_id(self) -> str:
        """The id of the last item yielded (pass it to ``join`` to continue)."""
        return self._stream.last_event_id

    @property
    def reconnects(self) -> int:
        """How many times the stream rejoined after a dropped connection."""
        return self._stream.reconnects

    def __iter__(self) -> Iterator[StreamItem]:
        return self

    def __next__(self) -> StreamItem:
        found, item = self._portal.call(self._next())
        if not found:
            raise StopIteration
        assert item is not None
        return item

    async def _next(self) -> tuple[bool, StreamItem | None]:
        try:
            return True, await self._stream.__anext__()
        except StopAsyncIteration:
            return False, None

    def close(self) -> None:
        """Close the connection (the run goes on)."""
        self._portal.call(self._stream.aclose())

    def __enter__(self) -> SyncEventStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AgentbusClient:
    """A client of one agentbus deployment, for synchronous code.

    Takes the arguments of :class:`AsyncAgentbusClient`; call ``close()`` (or use ``with``).
    """

    def __init__(self, base_url: str, api_key: str, **options: Any) -> None:
        self._portal = _Portal()

        async def make() -> AsyncAgentbusClient:  # httpx binds to the loop it is made in
            return AsyncAgentbusClient(base_url, api_key, **options)

        self._client = self._portal.call(make())

    def __enter__(self) -> AgentbusClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections and the background loop."""
        self._portal.call(self._client.aclose())
        self._portal.close()

    def start(self, question: str, **options: Any) -> Started:
        """Publish a question (see ``AsyncAgentbusClient.start`` for the options)."""
        return self._portal.call(self._client.start(question, **options))

    def stream(self, question: str, **options: Any) -> SyncEventStream:
        """Start a run and iterate its live events."""
        return SyncEventStream(
            self._portal, self._portal.call(self._client.stream(question, **options))
        )

    def join(self, run_id: str, last_event_id: str = "0-0") -> SyncEventStream:
        """A run's events after ``last_event_id``, then live ones."""
        return SyncEventStream(self._portal, self._client.join(run_id, last_event_id))

    def ask(self, question: str, **options: Any) -> Run:
        """Ask and wait for the run to end (or pause at a gate)."""
        return self._portal.call(self._client.ask(question, **options))

    def get_run(self, run_id: str) -> Run:
        """One run."""
        return self._portal.call(self._client.get_run(run_id))

    def list_runs(self, *, limit: int = 50, before: str | None = None) -> RunPage:
        """The tenant's runs, newest first."""
        return self._portal.call(self._client.list_runs(limit=limit, before=before))

    def usage(self, period: str = "day", *, scope: str = "user") -> UsageReport:
        """What the caller (or, ``scope="tenant"``, the tenant) spent this day or month."""
        return self._portal.call(self._client.usage(period, scope=scope))

    def cancel(self, run_id: str) -> None:
        """Ask the run to stop."""
        self._portal.call(self._client.cancel(run_id))

    def resume(self, run_id: str, decision: str) -> None:
        """Decide a paused run's gate."""
        self._portal.call(self._client.resume(run_id, decision))

    def gate(self, run_id: str) -> dict[str, Any]:
        """The open gate's details."""
        return self._portal.call(self._client.gate(run_id))

    def deliveries(self, run_id: str) -> list[Delivery]:
        """The run's webhook deliveries."""
        return self._portal.call(self._client.deliveries(run_id))

    def list_conversations(self, *, limit: int = 50) -> list[Conversation]:
        """The tenant's conversations."""
        return self._portal.call(self._client.list_conversations(limit=limit))

    def get_conversation(self, conversation_id: str, *, limit: int = 100) -> ConversationDetail:
        """A conversation and its messages."""
        return self._portal.call(self._client.get_conversation(conversation_id, limit=limit))

    def delete_conversation(self, conversation_id: str) -> None:
        """Delete a conversation."""
        self._portal.call(self._client.delete_conversation(conversation_id))

    def rename_conversation(self, conversation_id: str, title: str) -> Conversation:
        """Give a conversation a new title."""
        return self._portal.call(self._client.rename_conversation(conversation_id, title))

    def upload_documents(self, files: dict[str, bytes], *, acl: list[str] | None = None) -> Upload:
        """Ingest files (admin keys)."""
        return self._portal.call(self._client.upload_documents(files, acl=acl))

    def document_job(self, job_id: str) -> IngestJob:
        """An ingest job's progress."""
        return self._portal.call(self._client.document_job(job_id))

    def list_documents(self) -> list[Document]:
        """The tenant's documents."""
        return self._portal.call(self._client.list_documents())

    def delete_document(self, doc_id: str) -> None:
        """Delete a document."""
        self._portal.call(self._client.delete_document(doc_id))

    def get_settings(self) -> TenantSettings:
        """The tenant's settings."""
        return self._portal.call(self._client.get_settings())

    def put_settings(self, preferences: dict[str, Any]) -> TenantSettings:
        """Replace the tenant's preferences (admin keys)."""
        return self._portal.call(self._client.put_settings(preferences))

    def webhook_secret(self) -> WebhookSecret:
        """The tenant's webhook signing secret (admin keys)."""
        return self._portal.call(self._client.webhook_secret())

    def rotate_webhook_secret(self) -> WebhookSecret:
        """Replace the webhook signing secret (admin keys)."""
        return self._portal.call(self._client.rotate_webhook_secret())
