"""uvicorn's HTTP/1.1 protocol with each response's head sent with its first body bytes.

uvicorn writes a response in two ``send()`` calls at least: the status line and headers
when the app sends ``http.response.start``, then the body. On loopback each write runs
the peer's TCP receive path and wakes it: a 202 of ``POST /api/v1/runs`` woke its client
twice, and the head's write was the largest single cost of the API process in a profile of
one-at-a-time POSTs (py-spy, ``agentbus bench api``). Here the head waits for the
connection's next write or the end of the event loop's current pass, whichever comes
first: a whole response (head, then body, in one step of the app's task) is one write,
and a streamed one (server-sent events) still has its head on the wire before its first
event is made.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_STATUS_LINE = b"HTTP/1.1 "
_HEAD_END = b"\r\n\r\n"


class HeldHead:
    """A socket transport whose response heads wait for the next write or the loop's next
    pass. Everything but ``write`` and ``close`` is the transport's own."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Write ``data``, after the held head if there is one; hold a response head."""
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held + data)
        elif type(data) is bytes and data.startswith(_STATUS_LINE) and data.endswith(_HEAD_END):
            self._held = data
            self._loop.call_soon(self.release)
        else:
            self._transport.write(data)

    def release(self) -> None:
        """Write the held head now (nothing held: nothing to do)."""
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        """Close the transport once a held head is written."""
        self.release()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class HeadWithBodyProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, writing each response's head with its body."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """The connection, its writes through a `HeldHead`."""
        held: Any = HeldHead(transport, self.loop)  # quacks as the transport it wraps
        super().connection_made(held)
