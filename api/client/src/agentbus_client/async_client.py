"""``AsyncAgentbusClient``: the agentbus API from asyncio code (httpx + websockets)."""

from __future__ import annotations

import uuid
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from agentbus_client.http import RetryRules, send
from agentbus_client.stream import EventStream
from agentbus_contracts import (
    Conversation,
    ConversationDetail,
    ConversationList,
    Delivery,
    DeliveryList,
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


class AsyncAgentbusClient:
    """A client of one agentbus deployment.

    Args:
        base_url: the API's root, e.g. ``http://127.0.0.1:8080``.
        api_key: a tenant API key (``agentbus keys create``).
        timeout_s: per-request timeout.
        retries: how 429s, transient failures and dropped connections are retried.
        max_reconnects: consecutive failed reconnects of an event stream before it gives up.
        http: an httpx client to use instead of the client's own (its base URL is ignored).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = 30.0,
        retries: RetryRules | None = None,
        max_reconnects: int = 8,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._rules = retries or RetryRules()
        self._max_reconnects = max_reconnects
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout_s)
        parts = urlsplit(self.base_url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        self.ws_url = urlunsplit((scheme, parts.netloc, parts.path + "/api/v1/ws", "", ""))

    async def __aenter__(self) -> AsyncAgentbusClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections (streams close themselves)."""
        if self._own_http:
            await self._http.aclose()

    async def _call(self, method: str, path: str, *, repeatable: bool, **kwargs: Any) -> Any:
        headers = {**self._headers, **kwargs.pop("headers", {})}
        response = await send(
            self._http,
            self._rules,
            method,
            self.base_url + path,
            repeatable=repeatable,
            headers=headers,
            **kwargs,
        )
        return None if response.status_code == 204 else response.json()

    # --- asking -------------------------------------------------------------------------

    async def start(
        self,
        question: str,
        *,
        conversation_id: str | None = None,
        model: str | None = None,
        mode: str | None = None,
        accuracy: str | None = None,
        think: bool | None = None,
        use_tools: bool | None = None,
        approve_high_risk: bool | None = None,
        approve_critical: list[str] | None = None,
        webhook_url: str | None = None,
        webhook_approvals: bool = False,
        idempotency_key: str | None = None,
        parent_message_id: int | None = None,
        multitask: str | None = None,
        team: str | None = None,
    ) -> Started:
        """Publish a question; retried safely (one ``Idempotency-Key`` for every attempt).

        ``parent_message_id`` branches the conversation (an answer's id, 0 for its start);
        ``multitask`` says what to do if the conversation is busy (enqueue, reject,
        interrupt, rollback); ``team`` runs a team of the tenant's, at its current version.
        """
        settings = {
            "model": model,
            "mode": mode,
            "accuracy": accuracy,
            "think": think,
            "use_tools": use_tools,
            "approve_high_risk": approve_high_risk,
            "multitask": multitask,
            "team": team,
        }
        body: dict[str, Any] = {
            "question": question,
            "conversation_id": conversation_id,
            "settings": {k: v for k, v in settings.items() if v is not None},
            "webhook_url": webhook_url,
            "webhook_approvals": webhook_approvals,
        }
        if approve_critical:
            body["settings"]["approve_critical"] = list(approve_critical)
        if parent_message_id is not None:
            body["parent_message_id"] = parent_message_id
        key = idempotency_key or uuid.uuid4().hex
        doc = await self._call(
            "POST", "/api/v1/runs", repeatable=True, json=body, headers={"Idempotency-Key": key}
        )
        return Started.model_validate(doc)

    async def stream(self, question: str, **options: Any) -> EventStream:
        """Start a run (``start``'s options) and return its live events."""
        started = await self.start(question, **options)
        return self.join(started.run_id, conversation_id=started.conversation_id)

    def join(
        self, run_id: str, last_event_id: str = "0-0", *, conversation_id: str | None = None
    ) -> EventStream:
        """The run's events after ``last_event_id`` (all of them by default), then live ones."""
        return EventStream(
            self.ws_url,
            self._headers,
            run_id,
            last_event_id=last_event_id,
            conversation_id=conversation_id,
            max_reconnects=self._max_reconnects,
        )

    async def ask(self, question: str, **options: Any) -> Run:
        """Ask and wait: the run as stored once it ended, or paused at a gate (``suspended``:
        decide with ``resume``, then ``join`` it again)."""
        async with await self.stream(question, **options) as events:
            async for event in events:
                if event.type == "approval_request":
                    break
        return await self.get_run(events.run_id)

    # --- runs ---------------------------------------------------------------------------

    async def get_run(self, run_id: str) -> Run:
        """One run: status, answer, trace, usage."""
        return Run.model_validate(
            await self._call("GET", f"/api/v1/runs/{run_id}", repeatable=True)
        )

    async def list_runs(self, *, limit: int = 50, before: str | None = None) -> RunPage:
        """The tenant's runs, newest first."""
        params: dict[str, Any] = {"limit": limit, **({"before": before} if before else {})}
        return RunPage.model_validate(
            await self._call("GET", "/api/v1/runs", repeatable=True, params=params)
        )

    async def usage(self, period: str = "day", *, scope: str = "user") -> UsageReport:
        """What the caller spent on models this ``day`` or ``month`` (``scope="tenant"``:
        the tenant's, admin keys), and the limit that applies."""
        params = {"period": period, "scope": scope}
        return UsageReport.model_validate(
            await self._call("GET", "/api/v1/usage", repeatable=True, params=params)
        )

    async def cancel(self, run_id: str) -> None:
        """Ask the run to stop (it ends ``cancelled``)."""
        await self._call("POST", f"/api/v1/runs/{run_id}/cancel", repeatable=False)

    async def resume(self, run_id: str, decision: str) -> None:
        """Decide a paused run's gate (``approve``, ``egress_allow_once``, ...)."""
        body = {"decision": decision}
        await self._call("POST", f"/api/v1/runs/{run_id}/resume", repeatable=False, json=body)

    async def gate(self, run_id: str) -> dict[str, Any]:
        """The open gate's details (redacted arguments)."""
        return await self._call("GET", f"/api/v1/runs/{run_id}/gate", repeatable=True)

    async def deliveries(self, run_id: str) -> list[Delivery]:
        """The run's webhook deliveries and their status."""
        doc = await self._call("GET", f"/api/v1/runs/{run_id}/deliveries", repeatable=True)
        return list(DeliveryList.model_validate(doc).deliveries)

    # --- conversations ------------------------------------------------------------------

    async def list_conversations(self, *, limit: int = 50) -> list[Conversation]:
        """The tenant's conversations, most recently active first."""
        doc = await self._call(
            "GET", "/api/v1/conversations", repeatable=True, params={"limit": limit}
        )
        return list(ConversationList.model_validate(doc).conversations)

    async def get_conversation(
        self, conversation_id: str, *, limit: int = 100
    ) -> ConversationDetail:
        """A conversation and its latest messages."""
        path = f"/api/v1/conversations/{conversation_id}"
        doc = await self._call("GET", path, repeatable=True, params={"limit": limit})
        return ConversationDetail.model_validate(doc)

    async def delete_conversation(self, conversation_id: str) -> None:
        """Delete a conversation and its messages."""
        await self._call("DELETE", f"/api/v1/conversations/{conversation_id}", repeatable=True)

    async def rename_conversation(self, conversation_id: str, title: str) -> Conversation:
        """Give a conversation a new title."""
        path = f"/api/v1/conversations/{conversation_id}"
        doc = await self._call("PATCH", path, repeatable=True, json={"title": title})
        return Conversation.model_validate(doc)

    # --- documents (admin keys) ---------------------------------------------------------

    async def upload_documents(
        self, files: dict[str, bytes], *, acl: list[str] | None = None
    ) -> Upload:
        """Ingest files (name → content: Markdown, text, HTML or PDF), readable by ``acl``
        groups only when given."""
        parts = [("files", (name, data)) for name, data in files.items()]
        form = {"acl": ",".join(acl)} if acl else None
        doc = await self._call(
            "POST", "/api/v1/documents", repeatable=False, files=parts, data=form
        )
        return Upload.model_validate(doc)

    async def document_job(self, job_id: str) -> IngestJob:
        """An ingest job's progress."""
        doc = await self._call("GET", f"/api/v1/documents/jobs/{job_id}", repeatable=True)
        return IngestJob.model_validate(doc)

    async def list_documents(self) -> list[Document]:
        """The tenant's documents, most recently uploaded first."""
        doc = await self._call("GET", "/api/v1/documents", repeatable=True)
        return [Document.model_validate(d) for d in doc]

    async def delete_document(self, doc_id: str) -> None:
        """Delete a document (the retrieval role drops its chunks)."""
        await self._call("DELETE", f"/api/v1/documents/{doc_id}", repeatable=True)

    # --- settings -----------------------------------------------------------------------

    async def get_settings(self) -> TenantSettings:
        """The tenant's settings (preferences, defaults, effective)."""
        return TenantSettings.model_validate(
            await self._call("GET", "/api/v1/settings", repeatable=True)
        )

    async def put_settings(self, preferences: dict[str, Any]) -> TenantSettings:
        """Replace the tenant's preferences (admin keys)."""
        doc = await self._call("PUT", "/api/v1/settings", repeatable=True, json=preferences)
        return TenantSettings.model_validate(doc)

    async def webhook_secret(self) -> WebhookSecret:
        """The tenant's webhook signing secret (admin keys)."""
        doc = await self._call("GET", "/api/v1/settings/webhook-secret", repeatable=True)
        return WebhookSecret.model_validate(doc)

    async def rotate_webhook_secret(self) -> WebhookSecret:
        """Replace the webhook signing secret (admin keys)."""
        doc = await self._call("POST", "/api/v1/settings/webhook-secret/rotate", repeatable=False)
        return WebhookSecret.model_validate(doc)
