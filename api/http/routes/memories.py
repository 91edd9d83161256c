"""``/api/v1/memories``: the caller's long-term memories (list, edit, delete).

A memory is what the user said about themselves in a question ("I work in the Lisbon
office"); runs are given them as notes. Only their owner sees or changes them: another
user's id, an admin's included, is 404 ``memory_not_found``.
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Response, status
from pydantic import BaseModel, ConfigDict, Field

from agentbus_contracts import Memory, MemoryList
from api.app.errors import MemoryNotFound, Unavailable
from api.app.memories import MemoryBook
from api.http.responses import errors
from api.http.routes.common import Caller, use_case

router = APIRouter(prefix="/api/v1/memories", tags=["memories"])

MemoryId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


class MemoryEdit(BaseModel):
    """A memory's new text."""

    model_config = ConfigDict(extra="forbid")

    # Bounds checked by the book, so an empty or long text is a 422 with the field named.
    text: str = Field(description="The note, 1 to 500 characters.")


#: None: this API has no memory store.
_Memories = Annotated[MemoryBook | None, Depends(use_case(lambda deps: deps.memories))]


def _book(memories: MemoryBook | None) -> MemoryBook:
    if memories is None:
        raise Unavailable("this API has no memory store")
    return memories


_ONE = errors(MemoryNotFound)


@router.get("", response_model=MemoryList)
async def list_memories(memories: _Memories, caller: Caller) -> MemoryList:
    """The caller's memories, the most recently changed first."""
    return MemoryList(memories=await _book(memories).list(caller))


@router.patch("/{memory_id}", response_model=Memory, responses=_ONE)
async def edit_memory(
    memory_id: MemoryId, body: MemoryEdit, memories: _Memories, caller: Caller
) -> Memory:
    """Change the text of one of the caller's memories (its provenance stays)."""
    return await _book(memories).edit(caller, memory_id, body.text)


@router.delete("/{memory_id}", status_code=status.HTTP_204_NO_CONTENT, responses=_ONE)
async def delete_memory(memory_id: MemoryId, memories: _Memories, caller: Caller) -> Response:
    """Delete one of the caller's memories: no run is given it again."""
    await _book(memories).delete(caller, memory_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
