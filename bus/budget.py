"""The budget ledger: what runs, users and tenants have spent on models, held in Redis.

A model call first **reserves** (holds) the tokens it may spend, checked against every
scope it counts in (the run, the user's day, the tenant's month, ...), then **settles** to
what it really spent. Both are one Lua script over keys that share the tenant's hash tag,
so concurrent calls from any number of processes never see the same room twice: together
they overshoot a limit by at most one call's hold (a call's reported usage can exceed its
hold by the tokens its prompt estimate missed).

Exactly once, per call id (deterministic: the step id and the call's number in the step):

* a settled call leaves a ``charged`` marker; settling it again, or reserving for it again
  (a redelivered step whose first delivery died after the charge), changes nothing;
* a call that dies before settling leaves a hold with an expiry; the redelivered step
  reserves the same call id again and takes that hold over, and a hold nobody takes over
  is given back when it expires (any later reservation of the tenant purges them).

Amounts are tokens and micro-dollars (1e-6 USD); a hold's dollars are its tokens at the
call's dearest per-token price, an upper bound of what it can cost.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from bus import keys
from bus.redis_io.lua import run_script

if TYPE_CHECKING:
    from redis.asyncio import Redis

#: Lua: add ``tokens`` and ``usd`` to ``n`` budget counters, ``KEYS[keys_at + i]``, each
#: given its lifetime ``ARGV[lives_at + i]`` (negative: a dated counter's, set at its first
#: charge only); returns ``{1, tokens, usd, tokens, usd...}``, each counter's new totals.
#: The commit script (`bus.runtime.scripts.COMMIT`) charges a step's counters with it too.
CHARGE_COUNTERS = """
local function charge_counters(keys_at, lives_at, n, tokens, usd)
  tokens = tonumber(tokens)
  local out = {1}
  for i = 1, n do
    local used, life = KEYS[keys_at + i], tonumber(ARGV[lives_at + i])
    out[2 * i] = redis.call('HINCRBY', used, 'tok', tokens)
    out[2 * i + 1] = redis.call('HINCRBYFLOAT', used, 'usd', usd)
    if life > 0 or out[2 * i] == tokens then
      redis.call('EXPIRE', used, math.abs(life))
    end
  end
  return out
end
"""

# Gives back one hold: its tokens and dollars leave the reserved counters of its scopes.
_RELEASE = """
local function release(id)
  local raw = redis.call('HGET', KEYS[2], id)
  if raw then
    local hold = cjson.decode(raw)
    for _, scope in ipairs(hold.s) do
      local left = redis.call('HINCRBY', KEYS[1], scope .. ':tok', -hold.t)
      redis.call('HINCRBYFLOAT', KEYS[1], scope .. ':usd', -hold.t * hold.p)
      if left <= 0 then redis.call('HDEL', KEYS[1], scope .. ':tok', scope .. ':usd') end
    end
    redis.call('HDEL', KEYS[2], id)
  end
  redis.call('ZREM', KEYS[3], id)
end
"""

# KEYS: reserved, holds, expiry, charged marker, then one used-hash per scope.
# ARGV: now, call id, expires at, tokens wanted (the call's whole hold), tokens needed (at
#       least), micro-dollars per token, n scopes, then per scope: name, token limit,
#       micro-dollar limit (-1: none).
# Returns {1, hold} when held, {2, 0} when the call is charged already, {0, hold, i, m}
# when scope i's limit (m: 't' tokens, 'u' dollars) leaves less room than needed.
RESERVE = (
    _RELEASE
    + """
local now = tonumber(ARGV[1])
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 100)) do
  release(id)
end
if redis.call('EXISTS', KEYS[4]) == 1 then return {2, 0} end
local call, expires = ARGV[2], tonumber(ARGV[3])
local want, need, price = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local n = tonumber(ARGV[7])
local held = 0
local raw = redis.call('HGET', KEYS[2], call)
if raw then held = cjson.decode(raw).t end
if want <= held then return {1, held} end
local room, tight, measure = want - held, 0, ''
local scopes = {}
for i = 1, n do
  local scope = ARGV[7 + 3 * i - 2]
  local tok_limit, usd_limit = tonumber(ARGV[7 + 3 * i - 1]), tonumber(ARGV[7 + 3 * i])
  scopes[i] = scope
  -- room left = limit - spent - everything held in the scope (this call's hold included)
  if tok_limit >= 0 then
    local used = tonumber(redis.call('HGET', KEYS[4 + i], 'tok') or '0')
    local resv = tonumber(redis.call('HGET', KEYS[1], scope .. ':tok') or '0')
    local r = tok_limit - used - resv
    if r < room then room, tight, measure = r, i, 't' end
  end
  if usd_limit >= 0 and price > 0 then
    local used = tonumber(redis.call('HGET', KEYS[4 + i], 'usd') or '0')
    local resv = tonumber(redis.call('HGET', KEYS[1], scope .. ':usd') or '0')
    local r = math.floor((usd_limit - used - resv) / price)
    if r < room then room, tight, measure = r, i, 'u' end
  end
end
if held + room < need then return {0, held, tight, measure} end
if room > 0 then
  for i = 1, n do
    redis.call('HINCRBY', KEYS[1], scopes[i] .. ':tok', room)
    redis.call('HINCRBYFLOAT', KEYS[1], scopes[i] .. ':usd', room * price)
  end
  held = held + room
end
redis.call('HSET', KEYS[2], call, cjson.encode({t = held, p = price, s = scopes}))
redis.call('ZADD', KEYS[3], expires, call)
return {1, held}
"""
)
RESERVE_SHA = hashlib.sha1(RESERVE.encode()).hexdigest()

# KEYS: as RESERVE. ARGV: call id, marker ttl, tokens, micro-dollars, n scopes, then per
# scope its used-hash ttl: a positive one is set at every charge (kept that long after the
# last), a negative one only at the counter's first (a counter of one day or month, whose
# lifetime outlasts its period). Returns {1, then each scope's tokens and micro-dollars
# spent} when charged now, {0} when it had been already.
_CHARGE = (
    CHARGE_COUNTERS
    + """
if redis.call('EXISTS', KEYS[4]) == 1 then return {0} end
local out = charge_counters(4, 5, tonumber(ARGV[5]), ARGV[3], ARGV[4])
redis.call('SET', KEYS[4], '1', 'EX', ARGV[2])
return out
"""
)
SETTLE = _RELEASE + "\nrelease(ARGV[1])\n" + _CHARGE
SETTLE_SHA = hashlib.sha1(SETTLE.encode()).hexdigest()
# The same for a call that held nothing (no budget limits its scopes): no hold to give back.
CHARGE = _CHARGE
CHARGE_SHA = hashlib.sha1(CHARGE.encode()).hexdigest()

# KEYS: as RESERVE (scopes unused). ARGV: call id. Gives the call's hold back uncharged.
RELEASE = _RELEASE + "\nrelease(ARGV[1])\nreturn 1\n"
RELEASE_SHA = hashlib.sha1(RELEASE.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Scope:
    """One counter a call is charged to, and its limits (None: counted, not limited).

    Attributes:
        name: what the limit is called where a refusal names it (``run``, ``user_day``).
        key: the counter's own name, unique in the tenant (``run:R``, ``user:alice:2026-12-01``).
        tokens: the most tokens it may spend.
        micro_usd: the most micro-dollars it may spend.
        ttl_s: how long the counter is kept after its last charge (after its first, with
            ``dated``).
        dated: the counter is one period's (a day's, a month's), and ``ttl_s`` outlasts
            the period: its lifetime is set once, at its first charge.
    """

    name: str
    key: str
    tokens: int | None = None
    micro_usd: int | None = None
    ttl_s: int = 86_400
    dated: bool = False


@dataclass(frozen=True, slots=True)
class Charge:
    """What one step's model calls spent, charged with the step's commit.

    For a run no budget limits: nothing has to be reserved, so the step's calls are
    summed and the sum goes out with the step's own commit (`bus.runtime.commit`), one
    write with the step, exactly once. On a cluster, where the tenant's counters live in
    another slot than the run's keys, it is charged just before the commit, once per step
    id (`BudgetLedger.settle`).

    Attributes:
        tenant_id: whose counters.
        scopes: the counters (none limited).
        tokens: the tokens the step's calls spent.
        micro_usd: what they cost, in micro-dollars.
        spent: called with each scope's new total once charged (gauges).
    """

    tenant_id: str
    scopes: Sequence[Scope]
    tokens: int
    micro_usd: int
    spent: Callable[[dict[str, Spent]], None] | None = None

    def keys(self) -> list[str]:
        """The counters' keys, in the order of `scopes`."""
        return [keys.budget_used(self.tenant_id, s.key) for s in self.scopes]

    def args(self) -> list[int]:
        """How many scopes, the tokens, the micro-dollars, then each scope's lifetime
        (negative: a dated counter's, set at its first charge only)."""
        ttls = [-s.ttl_s if s.dated else s.ttl_s for s in self.scopes]
        return [len(self.scopes), self.tokens, self.micro_usd, *ttls]

    def totals(self, reply: Sequence[object]) -> dict[str, Spent]:
        """Each scope's new total from a charge's reply (``1, tok, usd, tok, usd...``)."""
        # int() and float() read a reply's bytes as they read its text.
        values = cast("Sequence[Any]", reply)
        return {
            s.name: Spent(int(values[1 + 2 * i]), float(values[2 + 2 * i]) / 1e6)
            for i, s in enumerate(self.scopes)
        }


@dataclass(frozen=True, slots=True)
class Grant:
    """A reservation's answer.

    Attributes:
        held: tokens the call may spend now (0 when ``charged``).
        charged: an earlier delivery of this call was charged already: run it, charge nothing.
        refused: the budget that leaves less room than needed, e.g. ``run_tokens``.
    """

    held: int
    charged: bool = False
    refused: str | None = None

    @property
    def ok(self) -> bool:
        """The call may go on."""
        return self.refused is None


@dataclass(frozen=True, slots=True)
class Spent:
    """What one scope has spent."""

    tokens: int = 0
    cost_usd: float = 0.0


class BudgetLedger:
    """Reserve, settle and read one tenant's model spending.

    Args:
        redis: the shared Redis client (a cluster client works: one tenant, one slot).
        tenant_id: whose counters.
        charged_ttl_s: how long a charged call is remembered (at least a run's lifetime).
    """

    def __init__(self, redis: Redis, tenant_id: str, *, charged_ttl_s: int = 604_800) -> None:
        self._redis = redis
        self.tenant_id = tenant_id
        self._charged_ttl_s = charged_ttl_s

    def _keys(self, call_id: str, scopes: Sequence[Scope]) -> list[str]:
        t = self.tenant_id
        fixed = [keys.budget_reserved(t), keys.budget_holds(t), keys.budget_hold_expiry(t)]
        return [
            *fixed,
            keys.budget_charged(t, call_id),
            *(keys.budget_used(t, s.key) for s in scopes),
        ]

    async def reserve(
        self,
        call_id: str,
        scopes: Sequence[Scope],
        *,
        want: int,
        need: int,
        micro_usd_per_token: float,
        now: float,
        expires_at: float,
    ) -> Grant:
        """Hold up to ``want`` tokens for the call (in all, counting what it holds already),
        at least ``need``, in every scope at once; or refuse, naming the tightest budget."""
        args: list[str | int | float] = [
            now,
            call_id,
            expires_at,
            want,
            need,
            micro_usd_per_token,
            len(scopes),
        ]
        for s in scopes:
            args += [s.key, -1 if s.tokens is None else s.tokens]
            args.append(-1 if s.micro_usd is None else s.micro_usd)
        reply = await run_script(
            self._redis, RESERVE, RESERVE_SHA, self._keys(call_id, scopes), args
        )
        status, held = int(reply[0]), int(reply[1])
        if status == 2:
            return Grant(0, charged=True)
        if status == 1:
            return Grant(held)
        tight = scopes[int(reply[2]) - 1]
        measure = "tokens" if _text(reply[3]) == "t" else "cost_usd"
        return Grant(held, refused=f"{tight.name}_{measure}")

    async def settle(
        self,
        call_id: str,
        scopes: Sequence[Scope],
        *,
        tokens: int,
        micro_usd: int,
        held: bool = True,
    ) -> dict[str, Spent] | None:
        """Charge what the call spent to every scope, once: each scope's new total by its
        name (None: an earlier delivery charged it already). ``held``: the call may hold
        tokens (it reserved); False skips giving a hold back."""
        args: list[str | int] = [call_id, self._charged_ttl_s, tokens, micro_usd, len(scopes)]
        args += [-s.ttl_s if s.dated else s.ttl_s for s in scopes]
        script, sha = (SETTLE, SETTLE_SHA) if held else (CHARGE, CHARGE_SHA)
        reply = await run_script(self._redis, script, sha, self._keys(call_id, scopes), args)
        if not int(reply[0]):
            return None
        return Charge(self.tenant_id, scopes, tokens, micro_usd).totals(reply)

    async def release(self, call_id: str) -> None:
        """Give the call's hold back uncharged (it failed; its retry reserves again)."""
        await run_script(self._redis, RELEASE, RELEASE_SHA, self._keys(call_id, ()), [call_id])

    async def spent(self, scope_key: str) -> Spent:
        """What a scope has spent so far."""
        key = keys.budget_used(self.tenant_id, scope_key)
        reply = await self._redis.hgetall(key)  # pyright: ignore[reportGeneralTypeIssues, reportUnknownMemberType, reportUnknownVariableType]
        raw = cast("dict[bytes | str, bytes | str]", reply)
        values = {_text(k): _text(v) for k, v in raw.items()}
        micro = float(values.get("usd", "0"))
        return Spent(int(values.get("tok", "0")), round(micro / 1_000_000, 6))

    async def held(self, scope_key: str) -> int:
        """Tokens held by the scope's calls in flight."""
        key = keys.budget_reserved(self.tenant_id)
        reply = await self._redis.hget(key, f"{scope_key}:tok")  # pyright: ignore[reportGeneralTypeIssues, reportUnknownMemberType, reportUnknownVariableType]
        raw = cast("bytes | str | None", reply)
        return 0 if raw is None else int(_text(raw))


def micro_usd(usd: float) -> int:
    """US dollars as whole micro-dollars, rounded up (a limit is never loosened)."""
    return math.ceil(round(usd * 1_000_000, 3))


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def hold_json(tokens: int, price: float, scopes: Sequence[str]) -> str:
    """A hold as the scripts store it (for tests that plant a dead process's hold)."""
    return json.dumps({"t": tokens, "p": price, "s": list(scopes)})
