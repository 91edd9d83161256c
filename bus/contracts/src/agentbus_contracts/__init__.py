"""agentbus's wire models: what the API and the workers send and every client reads, declared once.

They depend on pydantic alone. The server's routes answer with these classes
(``response_model=``), its workers emit the events of :mod:`agentbus_contracts.events`,
and the Python client (``agentbus-client``) decodes both, so the two ends cannot drift
apart (a test compares them with the server's OpenAPI document). The request side, what a
question may carry (:mod:`agentbus_contracts.ids`, :mod:`agentbus_contracts.questions`),
is declared here too, so the transports check a request without importing the bus.
"""

from agentbus_contracts.conversations import (
    Conversation,
    ConversationDetail,
    ConversationList,
    ConversationSummary,
    Message,
    ModelContext,
)
from agentbus_contracts.documents import Document, IngestJob, Upload
from agentbus_contracts.errors import ErrorBody, ErrorDetail
from agentbus_contracts.events import ClientEvent, parse_event
from agentbus_contracts.memories import Memory, MemoryList
from agentbus_contracts.runs import (
    TERMINAL,
    CancelRequested,
    Run,
    RunPage,
    Snapshot,
    Started,
)
from agentbus_contracts.schedules import (
    ScheduledQuestion,
    ScheduledQuestionDetail,
    ScheduledQuestionList,
    ScheduledTick,
)
from agentbus_contracts.settings import TenantSettings
from agentbus_contracts.usage import UsageReport
from agentbus_contracts.webhooks import Delivery, DeliveryList, WebhookSecret

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
