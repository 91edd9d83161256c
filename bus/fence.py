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

Raising the fence also adds the user's mark to the shard's set of fenced marks
(`keys.fenced_marks`), then renews the shard's fence epoch (`bus.epochs`). A step delivered
at a fence epoch knows, from the marks this process read at that epoch, whether its user
may be fenced at all, and checks the key only then: the common intake reads nothing. A
step delivered before the epoch was renewed was in flight when the fence went up, so the
erasure waits for it (`bus.quiesce`), as for any step under way.

Steps in flight when the fence went up wrote before their commit; the erasure waits for
them (`bus.quiesce`) and only then deletes, so what they wrote is deleted too.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import TYPE_CHECKING

from bus import epochs, keys
from bus.redis_io.shared_mux import mux_for

if TYPE_CHECKING:
    from redis.asyncio import Redis

_LABEL = b"agentbus/erasure/v1"
_CACHE_LIMIT = 10_000
#: How long after a fence ended its mark stays in the shard's set (clocks of the processes
#: may differ; a mark in the set only costs a check of the key).
_KEEP_MARK_S = 86_400


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
        #: Per shard: the fence epoch the fenced marks were read at, and the marks.
        self._fenced: dict[int, tuple[bytes, frozenset[bytes]]] = {}

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
        """Fence the user on every shard (commands per shard: keys of many slots), then
        renew the shards' fence epochs."""
        mark = self.mark(tenant_id, subject)
        now = time.time()
        async with redis.pipeline(transaction=False) as pipe:
            for shard in range(shards):
                pipe.set(keys.erased_user(shard, mark), b"1", ex=ttl_s)
                marks = keys.fenced_marks(shard)
                pipe.zadd(marks, {mark: now + ttl_s})
                pipe.zremrangebyscore(marks, "-inf", now - _KEEP_MARK_S)
            await pipe.execute()
        # Once the fence is up: a step delivered at the new epoch reads the marks again.
        await epochs.renew(redis, (keys.fence_epoch(s) for s in range(shards)))

    async def holds(self, redis: Redis, tenant_id: str, subject: str, shard: int) -> bool:
        """Whether the user is fenced (on the pipelined connection: one round trip, none
        for a step delivered at a fence epoch whose marks do not name the user)."""
        mark = self.mark(tenant_id, subject)
        epoch = epochs.FENCE.get()
        if epoch is not None and mark.encode() not in await self._marks_at(redis, shard, epoch):
            return False
        found = await mux_for(redis).execute("EXISTS", keys.erased_user(shard, mark))
        return bool(found)

    async def _marks_at(self, redis: Redis, shard: int, epoch: bytes) -> frozenset[bytes]:
        """The marks fenced on ``shard`` as of ``epoch`` or later (read once per epoch)."""
        known = self._fenced.get(shard)
        if known is None or known[0] != epoch:
            # Read after the epoch was: every mark fenced by then is in it.
            marks = await mux_for(redis).execute("ZRANGE", keys.fenced_marks(shard), 0, -1)
            known = self._fenced[shard] = (epoch, frozenset(marks))
        return known[1]


#: The fence key a process without an erasure key checks (it never exists).
def unfenced(shard: int) -> str:
    """A key of the shard's slot that no erasure sets."""
    return keys.erased_user(shard, "-")
