"""Inside a sandbox: offer the gateway's egress proxy on the sandbox's own loopback, then
run the server.

Run as ``python -I -S egress_relay.py SOCKET -- COMMAND...`` (standard library only: it
runs from a file bound into the sandbox, without the gateway's packages). It listens on a
free port of 127.0.0.1 in the sandbox's network namespace, where nothing else is, sets
``HTTP_PROXY``, ``HTTPS_PROXY`` and ``ALL_PROXY`` (and their lower-case forms) to it,
forks a child that relays each connection to the proxy's unix socket, and replaces itself
with the command, so the command keeps the process the gateway started (its stdin and
stdout are the MCP session). The child ends with the sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys

_CHUNK = 65_536
_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while chunk := await src.read(_CHUNK):
            dst.write(chunk)
            await dst.drain()
        if dst.can_write_eof():
            dst.write_eof()


async def _relay(listener: socket.socket, path: str) -> None:
    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(path)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        writer.close()
        up_writer.close()

    server = await asyncio.start_server(one, sock=listener)
    await server.serve_forever()


def main(argv: list[str]) -> None:
    """``SOCKET -- COMMAND...``: see the module's docstring."""
    if len(argv) < 3 or argv[1] != "--":
        sys.exit("usage: egress_relay.py SOCKET -- COMMAND...")
    path, command = argv[0], argv[2:]
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for name in _NAMES:
        os.environ[name] = os.environ[name.lower()] = url
    if os.fork() == 0:
        # The relay: off the session's stdin and stdout, which belong to the command.
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        asyncio.run(_relay(listener, path))
        os._exit(0)
    listener.close()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
