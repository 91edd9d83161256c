"""Redis connections whose pool checkout does not cost an event-loop cycle.

Before lending a connection, redis-py's pool asks it whether unread data is waiting
(``can_read_destructive``), and the answer comes from a socket read under a zero timeout:
a timer, a full loop iteration and a cancelled read on every command. Measured here, that
was the largest single cost of a step's Redis commands. These connections answer from the
bytes already received instead (the hiredis reader's, then the stream reader's buffer),
which is where a stray reply would be: the transport moves data into the stream reader as
soon as the loop sees it, and redis-py closes a connection whose command was interrupted
(any exception, cancellation included, between send and reply disconnects it), so no reply
can be left in flight on a connection returned to the pool. With another reply parser the
original check runs.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from redis._parsers.hiredis import NOT_ENOUGH_DATA
from redis.asyncio.connection import AbstractConnection, Connection, UnixDomainSocketConnection


def _buffered(parser: Any) -> bool | None:
    """Whether ``parser`` holds unread bytes; None when it is not the hiredis parser."""
    reader = getattr(parser, "_reader", None)
    stream = getattr(parser, "_stream", None)
    if reader is None or not isinstance(stream, asyncio.StreamReader):
        return None
    if not getattr(parser, "_connected", False):
        raise OSError("Buffer is closed.")
    if reader.gets() is not NOT_ENOUGH_DATA:  # a whole reply is parsed and waiting
        return True
    return bool(getattr(stream, "_buffer", b"")) or stream.at_eof()


class _BufferCheck(AbstractConnection):
    """The cheap unread-data check (see the module docstring), for any connection class."""

    async def can_read_destructive(self) -> bool:
        """Whether data is waiting unread, from what was already received."""
        try:
            found = _buffered(self._parser)
        except OSError:  # reports it the usual way (redis-py leaves the result unannotated)
            return cast("bool", await super().can_read_destructive())
        return cast("bool", await super().can_read_destructive()) if found is None else found


class BufferCheckConnection(_BufferCheck, Connection):
    """A TCP connection with the cheap unread-data check."""


class BufferCheckUnixConnection(_BufferCheck, UnixDomainSocketConnection):
    """A unix-socket connection with the cheap unread-data check."""


def connection_class(url: str) -> type[AbstractConnection] | None:
    """The connection class for ``url`` (None: TLS and others keep redis-py's own)."""
    if url.startswith("unix://"):
        return BufferCheckUnixConnection
    if url.startswith("redis://"):
        return BufferCheckConnection
    return None
