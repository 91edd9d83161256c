"""Errors raised by the bus: one root class, each error with a stable code and a hint."""

from __future__ import annotations


class CodedError(Exception):
    """An error a user or operator sees: a stable code and a hint that says what to do.

    Every package's root error class derives from it (``BusError``, ``AgentError``,
    ``GatewayError``, ``RetrievalError``), so the CLI and the API print them one way.

    Attributes:
        code: a stable, machine-readable code (documented, never reworded).
        hint: what the operator or user should do about it.
    """

    code = "error"
    hint = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    @property
    def message(self) -> str:
        """The message without the hint."""
        return str(self.args[0]) if self.args else self.code

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class BusError(CodedError):
    """Root of every error the bus raises."""

    code = "bus_error"


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


class MessageTooLarge(BusError):
    """A handler produced a command over the message budget."""

    code = "message_too_large"
    hint = "store bulky state with StepContext.put_blob and pass its key"


class ReplicaAckMissing(BusError):
    """Fewer replicas than ``AGENTBUS_REDIS_WAIT_REPLICAS`` acknowledged a commit in time."""

    code = "replica_ack_missing"
    hint = "check the replicas' health, or raise AGENTBUS_REDIS_WAIT_TIMEOUT_MS"
