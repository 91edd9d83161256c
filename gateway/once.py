"""At most once per call id, and exactly once where the tool takes an idempotency key.

Recording a side-effecting call's outcome after the tool ran is not enough: a gateway
killed between the two, or two deliveries of one step overlapping after a reclaim, would
run the tool again. So, for each side-effecting call, once its checks have passed:

1. **Claim** (one script, one round trip): a recorded outcome is returned as it is;
   otherwise the call id is claimed with ``SET NX`` (``claim`` key, holder = this
   process's consumer name, a per-process-start token, the step id and delivery) and a
   **lease** (``lease`` key, the claim idle time) that the worker's heartbeat keeps alive
   (`bus.runtime.leases`). With ``AGENTBUS_REDIS_WAIT_REPLICAS``, a ``WAIT`` follows the
   claim and the tool runs only once that many replicas hold it (else the claim is
   dropped and the step retried), so a failover cannot forget it.
2. **Run** the tool (with `idempotency_key` when it takes one).
3. **Record** the outcome with its audit record under the call id, and drop the claim
   and lease (one script; the step's commit, on the same connection, follows it and its
   ``WAIT`` covers it).

A redelivery that finds a claim whose lease is alive (its holder still running) polls,
with backoff, until the outcome is recorded or the lease ends, within the run's
deadline. A claim whose lease ended without an outcome (its holder died) is a call that
may or may not have run: a tool that takes no key is not run again, the call ends
``outcome_unknown`` (`gateway.errors.OutcomeUnknown`: the model, the ``tool_result``
event and the audit record all say so); a tool that takes a key is claimed again and run
again with the same key, which it applies at most once: exactly once downstream.

All keys carry the run's shard hash tag, so this holds unchanged on Redis Cluster.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import TYPE_CHECKING

import structlog
from pydantic import BaseModel, ConfigDict

from bus import keys
from bus.errors import ReplicaAckMissing
from bus.redis_io.lua import run_script
from bus.runtime.leases import PROCESS_TOKEN
from gateway.errors import OutcomeUnknown
from gateway.outcome import AuditRecord, OutcomeStatus, Settled, ToolOutcome
from gateway.ports import FaultPoint, no_fault

if TYPE_CHECKING:
    from bus.runtime.context import StepContext
    from gateway.spec import ToolSpec

log = structlog.get_logger(__name__)

# KEYS: outcome, claim, lease. ARGV: holder, lease ms, keys ttl s, retake a dead claim (0/1).
# Returns {state, value}: recorded (value: the record), claimed, live, retaken or dead
# (value: the holder). A repeat by the same holder (a reply lost) claims again.
CLAIM = """
local done = redis.call('GET', KEYS[1])
if done then
  return {'recorded', done}
end
local holder = redis.call('GET', KEYS[2])
if (not holder) or holder == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[3])
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
  return {'claimed', ARGV[1]}
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  return {'live', holder}
end
if ARGV[4] == '1' then
  redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[3])
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
  return {'retaken', holder}
end
return {'dead', holder}
"""
CLAIM_SHA = hashlib.sha1(CLAIM.encode()).hexdigest()

# KEYS: outcome, claim, lease. ARGV: the record (JSON), keys ttl s.
RECORD = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('DEL', KEYS[2], KEYS[3])
return 1
"""
RECORD_SHA = hashlib.sha1(RECORD.encode()).hexdigest()

# KEYS: claim, lease. ARGV: holder, also drop the claim (0/1). End the lease if it is
# ours; with ARGV[2], drop our claim too (the tool did not run, or may run again).
LET_GO = """
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
end
if ARGV[2] == '1' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 1
"""
LET_GO_SHA = hashlib.sha1(LET_GO.encode()).hexdigest()

_FIRST_POLL_S, _MAX_POLL_S = 0.02, 0.5


class RecordedCall(BaseModel):
    """What Redis holds under a side-effecting call's id once it ran."""

    model_config = ConfigDict(frozen=True)

    outcome: ToolOutcome
    audit: AuditRecord


def idempotency_key(tenant_id: str, run_id: str, call_id: str) -> str:
    """A call's idempotency key: 64 hex digits, the same on every delivery of the call."""
    return hashlib.sha256(f"agentbus-call\n{tenant_id}\n{run_id}\n{call_id}".encode()).hexdigest()


class CallOnce:
    """The claim on one side-effecting call, for one delivery of its step (a `CallGuard`).

    Args:
        ctx: the gateway step (its run, delivery, leases and settings).
        call_id: the call.
        fault: the test seam, called once the call is claimed (``after_claim``).
    """

    def __init__(self, ctx: StepContext, call_id: str, fault: FaultPoint = no_fault) -> None:
        command = ctx.command
        self._ctx = ctx
        run, shard = command.run_id, command.shard
        self._outcome_key = keys.run_call(run, shard, call_id)
        self._claim_key = keys.run_call_claim(run, shard, call_id)
        self._lease_key = keys.run_call_lease(run, shard, call_id)
        detail = f"{command.step_id}|{ctx.delivery}"
        leases = ctx.leases
        self._holder = leases.holder(detail) if leases else f"-/{PROCESS_TOKEN}|{detail}"
        self.key = idempotency_key(command.tenant_id, run, call_id)
        self._fault = fault
        #: This delivery holds the claim: it runs the tool and must record or let go.
        self.holding = False

    async def before_run(self, spec: ToolSpec) -> str | None:
        """Claim the call (see the module); the key to run it with, if the tool takes one.

        Raises:
            Settled: the outcome is recorded (the tool is not run).
            OutcomeUnknown: the holder died before recording, and the tool takes no key.
            ReplicaAckMissing: the claim did not reach the replicas asked for in time.
        """
        delay = _FIRST_POLL_S
        while True:
            state, value = await self._claim(retake=spec.takes_idempotency_key)
            if state == "recorded":
                recorded = RecordedCall.model_validate_json(value)
                raise Settled(recorded.outcome, recorded.audit)
            if state in ("claimed", "retaken"):
                if state == "retaken":
                    log.warning("tool_call_retaken", tool=spec.name, dead_holder=value)
                self._fault("after_claim", spec.name)
                return self.key if spec.takes_idempotency_key else None
            if state == "dead":
                log.warning("tool_outcome_unknown", tool=spec.name, dead_holder=value)
                raise OutcomeUnknown(
                    f"the tool {spec.name!r} may or may not have run: the gateway that "
                    "started this call stopped before recording how it ended, and the tool "
                    "takes no idempotency key, so it was not run again"
                )
            # Live: another delivery is running it. Its outcome, or its lease's end, comes.
            left = self._ctx.command.deadline - time.time()
            await asyncio.sleep(max(0.0, min(delay, left)))
            delay = min(delay * 2, _MAX_POLL_S)

    async def _claim(self, *, retake: bool) -> tuple[str, str]:
        settings = self._ctx.settings
        args = [self._holder, settings.claim_idle_ms, settings.run_ttl_s, 1 if retake else 0]
        claim_keys = [self._outcome_key, self._claim_key, self._lease_key]
        n = settings.redis_wait_replicas
        redis = self._ctx.redis
        if n == 0:
            reply = await run_script(redis, CLAIM, CLAIM_SHA, claim_keys, args)
            acked = 0
        else:
            wait = ("WAIT", n, settings.redis_wait_timeout_ms)
            reply, acked = await run_script(redis, CLAIM, CLAIM_SHA, claim_keys, args, then=wait)
        state, value = (part.decode() if isinstance(part, bytes) else str(part) for part in reply)
        if state in ("claimed", "retaken"):
            self._hold()
            if n and int(acked) < n:
                # The tool has not run: a fresh claim is dropped, a retaken one kept (the
                # first holder may have run the tool); the step is retried.
                await self.let_go(forget=state == "claimed")
                raise ReplicaAckMissing(
                    f"{acked} of {n} replicas acknowledged the claim on a tool call in "
                    f"{settings.redis_wait_timeout_ms} ms; the tool did not run, the step "
                    "is retried"
                )
        return state, value

    def _hold(self) -> None:
        self.holding = True
        if self._ctx.leases is not None:
            self._ctx.leases.hold(self._lease_key, self._holder)

    def _stop_holding(self) -> None:
        self.holding = False
        if self._ctx.leases is not None:
            self._ctx.leases.release(self._lease_key)

    async def record(self, outcome: ToolOutcome, audit: AuditRecord) -> None:
        """Record the outcome under the call id and drop the claim and its lease.

        An ``egress_blocked`` outcome is not recorded: the claim is dropped, so the call
        runs again when a person allows the host (the egress gate retries that call).
        """
        if outcome.status is OutcomeStatus.EGRESS_BLOCKED:
            await self.let_go(forget=True)
            return
        record = RecordedCall(outcome=outcome, audit=audit).model_dump_json()
        claim_keys = [self._outcome_key, self._claim_key, self._lease_key]
        try:
            await run_script(
                self._ctx.redis,
                RECORD,
                RECORD_SHA,
                claim_keys,
                [record, self._ctx.settings.run_ttl_s],
            )
        finally:
            self._stop_holding()

    async def let_go(self, *, forget: bool = False) -> None:
        """End this delivery's lease (a redelivery then knows nobody is running the call);
        with ``forget``, drop the claim too (the tool did not run, or may run again)."""
        try:
            await run_script(
                self._ctx.redis,
                LET_GO,
                LET_GO_SHA,
                [self._claim_key, self._lease_key],
                [self._holder, 1 if forget else 0],
            )
        finally:
            self._stop_holding()
