"""The SQL state store: runs and what they leave behind, on SQLite or Postgres."""

# Registers the checkpoints table on Base.metadata (what alembic compares against).
from bus.store import document_tables as document_tables
from bus.store import fact_tables as fact_tables
from bus.store import gate_tables as gate_tables
from bus.store import memory_tables as memory_tables
from bus.store import schedule_tables as schedule_tables
from bus.store import summary_tables as summary_tables
from bus.store import team_tables as team_tables
from bus.store import turn_tables as turn_tables
from bus.store.api_keys import ApiKeyRecord, ApiKeyStore, KeyRole
from bus.store.audit import AuditEntry, AuditLogRecord, AuditReport, AuditStore, ChainReport
from bus.store.audit_redaction import ERASED, ERASURE_AGENT
from bus.store.checkpoints import (
    CheckpointRecord,
    CheckpointStore,
    GateAlreadyOpen,
    GateConflict,
    GateError,
    GateExpired,
    GateForbidden,
    GateNotFound,
    GateReason,
)
from bus.store.conversations import (
    MAX_MESSAGE_ID,
    ConversationNotFound,
    ConversationRecord,
    ConversationStore,
    MessageRecord,
    MessageRole,
)
from bus.store.documents import DocumentRecord, DocumentStore
from bus.store.engine import make_engine
from bus.store.erasure import ErasureId, ErasureStore, Holdings
from bus.store.facts import FactChunk, FactStore, SourceChunk, StoredFact, Triple
from bus.store.memories import MemoryNotFound, MemoryRecord, MemoryStore, MemoryWrite
from bus.store.migrate import downgrade, downgrade_async, upgrade, upgrade_async
from bus.store.retention import RetentionStore
from bus.store.run_query import RunCursor, RunQuery
from bus.store.runs import TERMINAL_STATUSES, Exchange, RunRecord, RunStatus, RunStore
from bus.store.schedules import ScheduleRecord, ScheduleStore, TickRecord, TickState
from bus.store.scope import Scope
from bus.store.stores import Stores, open_store
from bus.store.summaries import BranchContext, SummaryRecord, SummaryStore
from bus.store.teams import TeamRecord, TeamStore
from bus.store.tenant_settings import TenantSettingsRecord, TenantSettingsStore
from bus.store.webhook_secrets import WebhookSecretRecord, WebhookSecretStore

__all__ = [
    "ERASED",
    "ERASURE_AGENT",
    "MAX_MESSAGE_ID",
    "TERMINAL_STATUSES",
    "ApiKeyRecord",
    "ApiKeyStore",
    "AuditEntry",
    "AuditLogRecord",
    "AuditReport",
    "AuditStore",
    "BranchContext",
    "ChainReport",
    "CheckpointRecord",
    "CheckpointStore",
    "ConversationNotFound",
    "ConversationRecord",
    "ConversationStore",
    "DocumentRecord",
    "DocumentStore",
    "ErasureId",
    "ErasureStore",
    "Exchange",
    "FactChunk",
    "FactStore",
    "GateAlreadyOpen",
    "GateConflict",
    "GateError",
    "GateExpired",
    "GateForbidden",
    "GateNotFound",
    "GateReason",
    "Holdings",
    "KeyRole",
    "MemoryNotFound",
    "MemoryRecord",
    "MemoryStore",
    "MemoryWrite",
    "MessageRecord",
    "MessageRole",
    "RetentionStore",
    "RunCursor",
    "RunQuery",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "ScheduleRecord",
    "ScheduleStore",
    "Scope",
    "SourceChunk",
    "StoredFact",
    "Stores",
    "SummaryRecord",
    "SummaryStore",
    "TeamRecord",
    "TeamStore",
    "TenantSettingsRecord",
    "TenantSettingsStore",
    "TickRecord",
    "TickState",
    "Triple",
    "WebhookSecretRecord",
    "WebhookSecretStore",
    "downgrade",
    "downgrade_async",
    "make_engine",
    "open_store",
    "upgrade",
    "upgrade_async",
]
