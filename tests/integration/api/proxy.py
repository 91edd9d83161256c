"""A TCP proxy a test can cut: every connection through it is dropped at once, and it stops
accepting for a while, as a crashed load balancer or a network partition would."""

from __future__ import annotations

import asyncio
import contextlib


class CuttableProxy:
    """Forwards 127.0.0.1:<port> to the API; ``cut()`` drops every connection through it."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Listen (on the same port again after a cut)."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self, down_for: float = 0.5) -> None:
        """Stop listening, reset every open connection, and listen again ``down_for`` later."""
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()  # a reset, not a polite close
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)
        await asyncio.sleep(down_for)
        await self.start()

    async def stop(self) -> None:
        """Close the listener and every connection."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers |= {writer, up_writer}
        pipes = [
            asyncio.create_task(self._pipe(reader, up_writer)),
            asyncio.create_task(self._pipe(up_reader, writer)),
        ]
        self._pipes.update(pipes)
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pipes:
                task.cancel()
                self._pipes.discard(task)
            for w in (writer, up_writer):
                self._writers.discard(w)
                w.transport.abort()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
