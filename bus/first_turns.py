"""A conversation's first turn, kept in Redis beside its run instead of in SQL.

A question that starts a conversation (its id drawn for it) is the conversation's only
turn: nothing can wait behind it yet. So its turn is not written to SQL before the run is
published; the script that publishes the run records it (`bus.publish_once.PUBLISH_FIRST_TURN`,
one round trip, both or neither), under a key of the conversation's shard, which the
starter makes the run's. The next question of the conversation reads it
(`FirstTurns.read`) and its admission writes it to SQL as the running turn, unless its
run has ended by then (`bus.store.turns.TurnStore.admit`); from there on the turns are
SQL's, as every later turn's is. The record lives as long as the run's owner key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bus import keys
from bus.publish_once import publish_first_turn
from bus.redis_io.shared_mux import mux_for
from bus.store.turn_types import FirstTurn

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.typed_redis import Script


class FirstTurns:
    """Conversations' first turns in Redis: the script that publishes one, and their reads.

    Args:
        redis: the shared Redis client.
        shards: the bus's shard count.
    """

    def __init__(self, redis: Redis, shards: int) -> None:
        self._redis = redis
        self._shards = shards
        self.script: Script = publish_first_turn(redis)

    def shard(self, conversation_id: str) -> int:
        """The conversation's shard: its first run's, and its first turn's key's."""
        return keys.shard_of(conversation_id, self._shards)

    def key(self, conversation_id: str) -> str:
        """Where the conversation's first turn is kept."""
        return keys.conversation_first_turn(conversation_id, self.shard(conversation_id))

    async def read(self, conversation_id: str) -> FirstTurn | None:
        """The conversation's first turn as its publish recorded it (None: none was, or it
        expired with its run's keys)."""
        raw = await mux_for(self._redis).execute("GET", self.key(conversation_id))
        return None if raw is None else FirstTurn.loads(raw)
