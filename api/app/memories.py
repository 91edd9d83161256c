"""The user's control over their long-term memories: list, edit, delete (REST and CLI).

Every call acts on the caller's own memories only: another user's id is not found, an
admin's included (memories are personal; an admin switches memory off for the tenant with
the ``memory`` preference instead). Deleting a memory removes its only copy: runs read
memories from the store when they gather, nothing else indexes them.
"""

from __future__ import annotations

import builtins

from agentbus_contracts import Memory
from api.app.auth import Principal
from api.app.errors import InvalidRequest, MemoryNotFound, Unavailable
from bus.errors import StoreError
from bus.store import MemoryNotFound as NoSuchMemory
from bus.store import MemoryRecord, MemoryStore
from bus.store.memories import MAX_MEMORY_CHARS


def _view(record: MemoryRecord) -> Memory:
    return Memory(
        id=record.id,
        topic=record.topic,
        text=record.text,
        run_id=record.run_id,
        conversation_id=record.conversation_id,
        message_id=record.message_id,
        said_at=record.said_at,
        edited=record.edited,
        updated_at=record.updated_at,
    )


class MemoryBook:
    """The memories' use cases, as one caller."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    async def list(self, who: Principal) -> builtins.list[Memory]:
        """The caller's memories, the most recently changed first."""
        try:
            return [_view(m) for m in await self._store.list(who.own_scope)]
        except StoreError as e:
            raise Unavailable(f"cannot read the memories: {e}") from e

    async def edit(self, who: Principal, memory_id: str, text: str) -> Memory:
        """Change the text of one of the caller's memories.

        Raises:
            InvalidRequest: the text is empty or too long.
            MemoryNotFound: the caller has no such memory.
        """
        if not text.strip() or len(text.strip()) > MAX_MEMORY_CHARS:
            raise InvalidRequest(f"a memory is 1 to {MAX_MEMORY_CHARS} characters", field="text")
        try:
            return _view(await self._store.edit(who.own_scope, memory_id, text))
        except NoSuchMemory as e:
            raise MemoryNotFound(f"no memory {memory_id!r}") from e
        except StoreError as e:
            raise Unavailable(f"cannot change the memory: {e}") from e

    async def delete(self, who: Principal, memory_id: str) -> None:
        """Delete one of the caller's memories.

        Raises:
            MemoryNotFound: the caller has no such memory.
        """
        try:
            gone = await self._store.delete(who.own_scope, memory_id)
        except StoreError as e:
            raise Unavailable(f"cannot delete the memory: {e}") from e
        if not gone:
            raise MemoryNotFound(f"no memory {memory_id!r}")
