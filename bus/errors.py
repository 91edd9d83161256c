"""Errors raised by the bus: one root class, each error with a stable code and a hint."""

from __future__ import annotations


class BusError(Exception):
    """Root of every error the bus raises.

    Attributes:
        code: a stable, machine-readable code (documented, never reworded).
        hint: what the operator or user should do about it.
    """

    code = "bus_error"
    hint = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base} ({self.hint})" if self.hint else base


class MessageInvalid(BusError):
    """A stream entry could not be decoded into a known message type."""

    code = "message_invalid"
    hint = "check the publisher against the schemas from `agentbus schema export`"


class RedisUnavailable(BusError):
    """The broker could not be reached or started."""

    code = "redis_unavailable"
    hint = "start `agentbus up`, or set AGENTBUS_REDIS_URL to a reachable Redis 6.2+"


class StoreError(BusError):
    """The state store failed or is misconfigured."""

    code = "store_error"
    hint = "check AGENTBUS_DATABASE_URL and run `agentbus db upgrade`"


class StepFailed(BusError):
    """A handler failed a step; the runtime retries it, then dead-letters it."""

    code = "step_failed"


class MessageTooLarge(BusError):
    """A handler produced a command over the message budget."""

    code = "message_too_large"
    hint = "store bulky state with StepContext.put_blob and pass its key"
