"""Every repository of the state store over one engine, opened and closed together."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bus.store.api_keys import ApiKeyStore
from bus.store.audit import AuditStore
from bus.store.checkpoints import CheckpointStore
from bus.store.conversations import ConversationStore
from bus.store.documents import DocumentStore
from bus.store.engine import make_engine
from bus.store.erasure import ErasureStore
from bus.store.facts import FactStore
from bus.store.memories import MemoryStore
from bus.store.migrate import upgrade_async
from bus.store.retention import RetentionStore
from bus.store.runs import RunStore
from bus.store.schedules import ScheduleStore
from bus.store.summaries import SummaryStore
from bus.store.teams import TeamStore
from bus.store.tenant_settings import TenantSettingsStore
from bus.store.turns import TurnStore
from bus.store.webhook_secrets import WebhookSecretStore

if TYPE_CHECKING:
    from bus.settings import BusSettings


@dataclass
class Stores:
    """The state store's repositories."""

    runs: RunStore
    conversations: ConversationStore
    keys: ApiKeyStore
    tenant_settings: TenantSettingsStore
    audit: AuditStore | None = None
    checkpoints: CheckpointStore | None = None
    documents: DocumentStore | None = None
    webhook_secrets: WebhookSecretStore | None = None
    turns: TurnStore | None = None
    schedules: ScheduleStore | None = None
    summaries: SummaryStore | None = None
    retention: RetentionStore | None = None
    erasure: ErasureStore | None = None
    memories: MemoryStore | None = None
    facts: FactStore | None = None
    teams: TeamStore | None = None


@contextlib.asynccontextmanager
async def open_store(settings: BusSettings, *, migrate: bool = False) -> AsyncGenerator[Stores]:
    """The state store (migrated to head first when ``migrate``)."""
    url = settings.resolved_database_url()
    if migrate:
        await upgrade_async(url)
    engine = make_engine(url)
    try:
        yield Stores(
            runs=RunStore(engine),
            conversations=ConversationStore(engine),
            keys=ApiKeyStore(engine),
            tenant_settings=TenantSettingsStore(engine),
            audit=AuditStore(engine),
            checkpoints=CheckpointStore(engine),
            documents=DocumentStore(engine),
            webhook_secrets=WebhookSecretStore(engine),
            turns=TurnStore(engine),
            schedules=ScheduleStore(engine),
            summaries=SummaryStore(engine),
            retention=RetentionStore(engine),
            erasure=ErasureStore(engine),
            memories=MemoryStore(engine),
            facts=FactStore(engine),
            teams=TeamStore(engine),
        )
    finally:
        await engine.dispose()
