"""Lua scripts on the process's pipelined connection: EVALSHA, and EVAL on NOSCRIPT."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from redis.exceptions import NoScriptError

from bus.redis_io.shared_mux import mux_for

if TYPE_CHECKING:
    from redis.asyncio import Redis


async def run_script(
    redis: Redis,
    body: str,
    sha: str,
    keys: list[str],
    args: list[Any],
    *,
    then: tuple[Any, ...] | None = None,
) -> Any:
    """Run a Lua script on the process's pipelined connection (`bus.redis_io.mux`; on a
    cluster, the master of its first key's slot): EVALSHA, and EVAL on NOSCRIPT (a
    restarted or newly promoted server). With ``then`` (a ``WAIT``), that command follows
    the script on the same connection and both replies are returned."""
    mux = mux_for(redis)

    def send(*command: Any) -> Any:
        return mux.execute(*command) if then is None else mux.execute_then(then, *command)

    try:
        return await send("EVALSHA", sha, len(keys), *keys, *args)
    except NoScriptError:
        return await send("EVAL", body, len(keys), *keys, *args)
