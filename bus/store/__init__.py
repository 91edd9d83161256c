"""The SQL state store: runs and what they leave behind, on SQLite or Postgres."""

from bus.store.conversations import (
    ConversationNotFound,
    ConversationRecord,
    ConversationStore,
    MessageRecord,
    MessageRole,
)
from bus.store.engine import make_engine
from bus.store.migrate import downgrade, downgrade_async, upgrade, upgrade_async
from bus.store.runs import TERMINAL_STATUSES, RunRecord, RunStatus, RunStore

__all__ = [
    "TERMINAL_STATUSES",
    "ConversationNotFound",
    "ConversationRecord",
    "ConversationStore",
    "MessageRecord",
    "MessageRole",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "downgrade",
    "downgrade_async",
    "make_engine",
    "upgrade",
    "upgrade_async",
]
