"""The wire models: what the agentbus API sends and the client reads, declared once.

They depend on pydantic alone. The server's routes answer with these classes
(``response_model=``), its workers emit the events of :mod:`agentbus_client.models.events`,
and the client decodes both, so the two ends cannot drift apart (a test compares them with
the server's OpenAPI document).
"""

from agentbus_client.models.conversations import (
    Conversation,
    ConversationDetail,
    ConversationList,
    ConversationSummary,
    Message,
    ModelContext,
)
from agentbus_client.models.documents import Document, IngestJob, Upload
from agentbus_client.models.errors import ErrorBody, ErrorDetail
from agentbus_client.models.events import ClientEvent, parse_event
from agentbus_client.models.memories import Memory, MemoryList
from agentbus_client.models.runs import (
    TERMINAL,
    CancelRequested,
    Run,
    RunPage,
    Snapshot,
    Started,
)
from agentbus_client.models.schedules import (
    ScheduledQuestion,
    ScheduledQuestionDetail,
    ScheduledQuestionList,
    ScheduledTick,
)
from agentbus_client.models.settings import TenantSettings
from agentbus_client.models.usage import UsageReport
from agentbus_client.models.webhooks import Delivery, DeliveryList, WebhookSecret

__all__ = [
    "TERMINAL",
    "CancelRequested",
    "ClientEvent",
    "Conversation",
    "ConversationDetail",
    "ConversationList",
    "ConversationSummary",
    "Delivery",
    "DeliveryList",
    "Document",
    "ErrorBody",
    "ErrorDetail",
    "IngestJob",
    "Memory",
    "MemoryList",
    "Message",
    "ModelContext",
    "Run",
    "RunPage",
    "ScheduledQuestion",
    "ScheduledQuestionDetail",
    "ScheduledQuestionList",
    "ScheduledTick",
    "Snapshot",
    "Started",
    "TenantSettings",
    "Upload",
    "UsageReport",
    "WebhookSecret",
    "parse_event",
]
