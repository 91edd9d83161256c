"""The erasure fence: once a user's erasure starts, no step of theirs writes anything.

An erasure names the user by a *mark*: HMAC-SHA256 of ``tenant \\n subject`` under the
deployment's erasure key (derived from the signing master key, so every process of a
deployment computes the same mark, and a dictionary of user ids does not reverse it
without the key). It sets the key `bus.keys.erased_user` on every shard, for
``erasure_fence_s``, before it touches any data.

While the key exists:

* the commit script (`bus.runtime.scripts.COMMIT`) acks a step of that user and changes
  nothing else, whatever the step is (a memory step after its run, a run's last step), so
  no event, next command or ledger record of theirs is ever published again;
* the intake checks it before it writes a new run's row (`agents.roles.intake`): a question
  admitted just before the user's keys were revoked starts nothing.

Steps in flight when the fence went up wrote before their commit; the erasure waits for
them (`bus.quiesce`) and only then deletes, so what they wrote is deleted too.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from bus import keys
from bus.redis_io.shared_mux import mux_for

if TYPE_CHECKING:
    from redis.asyncio import Redis

_LABEL = b"agentbus/erasure/v1"
_CACHE_LIMIT = 10_000


def erasure_key(master: bytes) -> bytes:
    """The deployment's erasure key, derived from its signing master key."""
    return hmac.new(master, _LABEL, hashlib.sha256).digest()


class Fence:
    """Computes users' marks and reads and raises the fence.

    Args:
        key: the deployment's erasure key (`erasure_key`).
    """

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._marks: dict[tuple[str, str], str] = {}

    def mark(self, tenant_id: str, subject: str) -> str:
        """The user's mark: what tombstones, the ledger and the fence name them by."""
        found = self._marks.get((tenant_id, subject))
        if found is None:
            found = hmac.new(
                self._key, f"{tenant_id}\n{subject}".encode(), hashlib.sha256
            ).hexdigest()
            if len(self._marks) >= _CACHE_LIMIT:
                self._marks.clear()
            self._marks[(tenant_id, subject)] = found
        return found

    def key_of(self, tenant_id: str, subject: str, shard: int) -> str:
        """The fence key of the user on ``shard``."""
        return keys.erased_user(shard, self.mark(tenant_id, subject))

    async def raise_for(
        self, redis: Redis, tenant_id: str, subject: str, *, shards: int, ttl_s: int
    ) -> None:
        """Fence the user on every shard (one command per shard: keys of many slots)."""
        mark = self.mark(tenant_id, subject)
        async with redis.pipeline(transaction=False) as pipe:
            for shard in range(shards):
                pipe.set(keys.erased_user(shard, mark), b"1", ex=ttl_s)
            await pipe.execute()

    async def holds(self, redis: Redis, tenant_id: str, subject: str, shard: int) -> bool:
        """Whether the user is fenced (on the pipelined connection: one round trip)."""
        found = await mux_for(redis).execute("EXISTS", self.key_of(tenant_id, subject, shard))
        return bool(found)


#: The fence key a process without an erasure key checks (it never exists).
def unfenced(shard: int) -> str:
    """A key of the shard's slot that no erasure sets."""
    return keys.erased_user(shard, "-")
