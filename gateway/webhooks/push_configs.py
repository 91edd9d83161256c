"""A2A push notification configs: where a task's updates are POSTed, kept in Redis by run.

A config is kept in the run's ``push`` hash (config id -> JSON) for the run's lifetime, and
registering one makes the webhook watcher follow the run as a webhook registration does
(`gateway.webhooks.schedule`): a run that has no REST webhook gets a registration with an
empty URL, followed from the start of its events (a config sent with the message) or from
now (one created later). The watcher reads the configs at each event, so a deleted config
gets no later notification, and each delivery is signed like any webhook, with the
config's own token and ``Authorization`` beside the signature.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from bus import keys
from bus.typed_redis import commands, lua
from gateway.webhooks.schedule import WebhookSpec, registration

if TYPE_CHECKING:
    from redis.asyncio import Redis

#: Configs one task may have.
MAX_CONFIGS = 10
#: The cursor that means "from the end of the run's events as they are now".
FROM_NOW = "$"

# KEYS: push hash, registration, watch set, wake stream, the run's events. ARGV: config id,
# config JSON, ttl, spec JSON, cursor ('$' = the events' end), now, run id, watch (0/1).
# A run that has a registration (a REST webhook) keeps it and its cursor.
_PUT = """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
if redis.call('HSETNX', KEYS[2], 'spec', ARGV[4]) == 1 then
  local cursor = ARGV[5]
  if cursor == '$' then
    local last = redis.call('XREVRANGE', KEYS[5], '+', '-', 'COUNT', 1)
    cursor = last[1] and last[1][1] or '0-0'
  end
  redis.call('HSET', KEYS[2], 'cursor', cursor)
  redis.call('EXPIRE', KEYS[2], ARGV[3])
end
if ARGV[8] == '1' then
  redis.call('ZADD', KEYS[3], 'NX', ARGV[6], ARGV[7])
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', 16, '*', 'w', '1')
end
return 1
"""


class PushConfig(BaseModel):
    """One A2A ``TaskPushNotificationConfig`` as kept (its URL checked against egress)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    url: str
    token: str = ""
    scheme: str = ""
    credentials: str = ""

    def headers(self) -> dict[str, str]:
        """The receiver's own headers: the token, and ``Authorization`` when it gave one."""
        out: dict[str, str] = {}
        if self.token:
            out["X-A2A-Notification-Token"] = self.token
        if self.scheme and self.credentials:
            out["Authorization"] = f"{self.scheme} {self.credentials}"
        return out


def configs_of(raw: dict[bytes, bytes]) -> list[PushConfig]:
    """The configs of a ``push`` hash as Redis returns it, in id order."""
    return [PushConfig.model_validate_json(v) for _, v in sorted(raw.items())]


class PushConfigs:
    """Reads and changes tasks' push notification configs.

    Args:
        redis: the broker's client.
        ttl_s: how long a config is kept (the run's key lifetime).
    """

    def __init__(self, redis: Redis, *, ttl_s: int) -> None:
        self._redis = redis
        self._ttl_s = ttl_s
        self._put = lua(redis, _PUT)

    async def put(
        self,
        run_id: str,
        shard: int,
        config: PushConfig,
        spec: WebhookSpec,
        *,
        cursor: str,
        follow: bool,
    ) -> None:
        """Keep ``config`` (replacing one of the same id) and have the watcher follow the run
        (``follow``: False for a run that has ended) from ``cursor`` unless it already is."""
        await self._put(
            keys=[
                keys.run_push_configs(run_id, shard),
                keys.run_webhook(run_id, shard),
                keys.webhook_watch(shard),
                keys.webhook_wake(shard),
                keys.run_events(run_id, shard),
            ],
            args=[
                config.id,
                config.model_dump_json(),
                self._ttl_s,
                registration(spec),
                cursor,
                time.time(),
                run_id,
                int(follow),
            ],
        )

    async def list(self, run_id: str, shard: int) -> list[PushConfig]:
        """The task's configs, by id."""
        raw = await commands(self._redis).hgetall(keys.run_push_configs(run_id, shard))
        return configs_of(raw)

    async def get(self, run_id: str, shard: int, config_id: str) -> PushConfig | None:
        """One config, or None."""
        raw = await commands(self._redis).hget(keys.run_push_configs(run_id, shard), config_id)
        return None if raw is None else PushConfig.model_validate_json(raw)

    async def count(self, run_id: str, shard: int) -> int:
        """How many configs the task has."""
        return int(await commands(self._redis).hlen(keys.run_push_configs(run_id, shard)))

    async def delete(self, run_id: str, shard: int, config_id: str) -> None:
        """Forget a config (nothing if there is none)."""
        await commands(self._redis).hdel(keys.run_push_configs(run_id, shard), config_id)


def headers_json(config: PushConfig) -> str:
    """A delivery's ``headers`` field for ``config``."""
    return json.dumps(config.headers(), separators=(",", ":"))
