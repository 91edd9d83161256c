"""The SQL state store: runs and what they leave behind, on SQLite or Postgres."""

# Registers the checkpoints table on Base.metadata (what alembic compares against).
from bus.store import gate_tables as gate_tables
from bus.store.audit import AuditEntry, AuditLogRecord, AuditReport, AuditStore, ChainReport
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
    ConversationNotFound,
    ConversationRecord,
    ConversationStore,
    MessageRecord,
    MessageRole,
)
from bus.store.engine import make_engine
from bus.store.keys import ApiKeyRecord, ApiKeyStore, KeyRole
from bus.store.migrate import downgrade, downgrade_async, upgrade, upgrade_async
from bus.store.runs import TERMINAL_STATUSES, RunRecord, RunStatus, RunStore
from bus.store.tenant_settings import TenantSettingsRecord, TenantSettingsStore
from bus.store.webhook_secrets import WebhookSecretRecord, WebhookSecretStore

__all__ = [
    "TERMINAL_STATUSES",
    "ApiKeyRecord",
    "ApiKeyStore",
    "AuditEntry",
    "AuditLogRecord",
    "AuditReport",
    "AuditStore",
    "ChainReport",
    "CheckpointRecord",
    "CheckpointStore",
    "ConversationNotFound",
    "ConversationRecord",
    "ConversationStore",
    "GateAlreadyOpen",
    "GateConflict",
    "GateError",
    "GateExpired",
    "GateForbidden",
    "GateNotFound",
    "GateReason",
    "KeyRole",
    "MessageRecord",
    "MessageRole",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "TenantSettingsRecord",
    "TenantSettingsStore",
    "WebhookSecretRecord",
    "WebhookSecretStore",
    "downgrade",
    "downgrade_async",
    "make_engine",
    "upgrade",
    "upgrade_async",
]
