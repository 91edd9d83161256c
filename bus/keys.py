"""Every stream name, consumer group and Redis key prefix, in one place.

Keys that one transaction touches share a hash tag ``{k}`` (the run's shard), so the
same scripts run unchanged on Redis Cluster.
"""

from __future__ import annotations

import zlib
from enum import StrEnum

PREFIX = "ab"


class Role(StrEnum):
    """The consumer roles; each owns one stream (per shard) and one consumer group."""

    INTAKE = "intake"
    PLANNER = "planner"
    RETRIEVAL = "retrieval"
    RESEARCHER = "researcher"
    GATEWAY = "gateway"
    CRITIC = "critic"
    VERIFIER = "verifier"
    FINALIZER = "finalizer"
    MEMORY = "memory"  # after a run is done: what the user said about themselves
    AGENT = "agent"  # any declared agent of a tenant's team (`agents.roles.team_agent`)
    NOOP = "noop"  # a pass-through role used by the hop benchmark and runtime tests
    RECORDER = "recorder"  # ledger records for the SQL store (bus.ledger), in batches


#: External publishers XADD questions here (not sharded: intake re-shards them).
QUESTIONS_STREAM = "runs.questions"
#: Default stream where finished runs are announced for publishers that asked.
RESULTS_STREAM = "runs.results"
#: Dead letters, with the error and the original entry.
DEAD_LETTER_STREAM = f"{PREFIX}:dlq"


def shard_of(run_id: str, shards: int) -> int:
    """The shard a run lives on: stable across processes and restarts."""
    return zlib.crc32(run_id.encode()) % shards if shards > 1 else 0


#: The hash tags of shards 0-15, chosen so that on a Redis Cluster whose slots are split
#: evenly over M masters (as ``redis-cli --cluster create`` splits them), the first M shards
#: fall one on each master, for every M up to 16 (a Steinhaus sequence over the 16,384
#: slots, each slot at least 2 from a split's boundary; shard 0 keeps ``{0}``, the single
#: Redis's). So N >= M shards put at least one on every master, and N = M exactly one.
#: Shards from 16 on are ``{16}``, ``{17}``, ...
SHARD_TAGS = (
    "0", "1h", "2bw", "3i", "4ea", "5gv", "6db", "7pb",
    "8aa", "9fd", "10ff", "11ak", "12s", "13fg", "14", "15d",
)  # fmt: skip


#: `tag` of shards 0-15, made once (every key of a run is built with its shard's tag).
_TAGS = tuple("{" + t + "}" for t in SHARD_TAGS)


def tag(shard: int) -> str:
    """The hash tag shared by every key of one shard (`SHARD_TAGS`)."""
    return _TAGS[shard] if 0 <= shard < len(_TAGS) else "{" + str(shard) + "}"


def role_stream(role: Role | str, shard: int, lane: str | None = None) -> str:
    """The stream a role's workers read on one shard (or one of its lanes).

    A lane is a second stream of the same role and group for work that must not queue
    ahead of the role's other messages (ingest batches, `INGEST_LANE`).
    """
    base = f"{PREFIX}:{tag(shard)}:role:{role}"
    return f"{base}:{lane}" if lane else base


#: The retrieval role's lane for ingest batches: a large ingest job does not hold up
#: searches and gather steps, which stay on the role's main stream.
INGEST_LANE = "ingest"

#: Every role's lanes besides its main stream (`agentbus streams`, KEDA triggers).
LANES: dict[Role, tuple[str, ...]] = {Role.RETRIEVAL: (INGEST_LANE,)}


def role_streams(role: Role, shard: int) -> list[str]:
    """A role's main stream on one shard, then its lanes."""
    return [role_stream(role, shard), *(role_stream(role, shard, x) for x in LANES.get(role, ()))]


def group_name(role: Role | str) -> str:
    """A role's consumer group (the same on every shard)."""
    return str(role)


def stats_lease(group: str) -> str:
    """Held by the one replica of a role that exports the role's stream lag and pending."""
    return f"{PREFIX}:stats:exporter:{group}"


def run_events(run_id: str, shard: int) -> str:
    """The run's client event stream (plan, tokens, tool steps, verdicts, done)."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:events"


def run_steps(run_id: str, shard: int) -> str:
    """Set of the run's step ids already done (the idempotency record)."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:steps"


def run_cancel(run_id: str, shard: int) -> str:
    """Present when a cancel was requested for the run."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:cancel"


def erased_user(shard: int, mark: str) -> str:
    """Present while a user is being or was lately erased (`bus.fence`): the shard's steps of
    that user commit nothing. ``mark`` is the user's tombstone mark, never their id."""
    return f"{PREFIX}:{tag(shard)}:erased:{mark}"


def fence_epoch(shard: int) -> str:
    """A token every erasure's fence replaces (`bus.epochs`, `bus.fence`)."""
    return f"{PREFIX}:{tag(shard)}:fence-epoch"


def fenced_marks(shard: int) -> str:
    """The marks of the users fenced on the shard (`bus.fence`), scored by when the fence
    ends: a sorted set, so a process knows who may be fenced in one read."""
    return f"{PREFIX}:{tag(shard)}:erased-marks"


def run_blob(run_id: str, shard: int, name: str) -> str:
    """A bulky part of a run's state stored once and referenced by key."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:blob:{name}"


def run_call(run_id: str, shard: int, call_id: str) -> str:
    """The recorded outcome of a side-effecting tool call (run at most once)."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:call:{call_id}"


def run_call_claim(run_id: str, shard: int, call_id: str) -> str:
    """Who claimed a side-effecting call before running it; outlives its holder, so a
    redelivery knows the tool may have run (`gateway.once`)."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:call:{call_id}:claim"


def run_call_lease(run_id: str, shard: int, call_id: str) -> str:
    """The claim's lease: present while its holder is alive (kept by the step's heartbeat)."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:call:{call_id}:lease"


def run_join(run_id: str, shard: int, name: str) -> str:
    """A join barrier's hash: member -> contribution."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:join:{name}"


def run_prefix(run_id: str, shard: int) -> str:
    """Prefix of every key that belongs to one run."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:"


# --- the API edge (api/) -------------------------------------------------------------

#: The consumer group of the API's admission of externally published questions.
ADMISSION_GROUP = "admission"


def run_owner(run_id: str, shard: int) -> str:
    """The tenant that started the run; set once, together with the run's first command."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:owner"


def conversation_fold(tenant_id: str, conversation_id: str) -> str:
    """The lock a fold of the conversation's older turns runs under (`agents.history`)."""
    return f"{PREFIX}:tenant:{tenant_id}:conversation:{conversation_id}:fold"


def tenant_settings_version(tenant_id: str) -> str:
    """A number every change of the tenant's settings increments (`bus.tenant_versions`)."""
    return f"{PREFIX}:tenant:{tenant_id}:settings-version"


def conversation_first_turn(conversation_id: str, shard: int) -> str:
    """The first run of a conversation drawn for it, while SQL holds no turn of it: written
    by the script that publishes the run (`bus.publish_once.PUBLISH_FIRST_TURN`), read by
    the next question of the conversation (`bus.store.turns`). ``shard``: the
    conversation's, which its first run's is (`api.app.starter`)."""
    return f"{PREFIX}:{tag(shard)}:conversation:{conversation_id}:first-turn"


def tenant_settings_version_on(tenant_id: str, shard: int) -> str:
    """The tenant's settings version as copied to one shard, for that shard's scripts
    (`bus.tenant_versions`)."""
    return f"{PREFIX}:{tag(shard)}:tenant:{tenant_id}:settings-version"


def settings_epoch(shard: int) -> str:
    """A token every change of any tenant's settings replaces (`bus.epochs`,
    `bus.tenant_versions`)."""
    return f"{PREFIX}:{tag(shard)}:settings-epoch"


def user_memories(tenant_id: str, subject: str) -> str:
    """Whether a user has long-term memories: "1" once one was stored, "0" when a read found
    none (`api.app.run_sources`); absent: not known, the store is asked."""
    return f"{PREFIX}:tenant:{tenant_id}:user:{subject}:memories"


def idempotency(tenant_id: str, key_digest: str) -> str:
    """The run an ``Idempotency-Key`` (digested) of a tenant already started."""
    return f"{PREFIX}:idem:{tenant_id}:{key_digest}"


def tenant_active_runs(tenant_id: str) -> str:
    """Sorted set of a tenant's runs in flight, scored by deadline (the concurrent quota)."""
    return f"{PREFIX}:quota:{tenant_id}:active"


def tenant_rate(tenant_id: str) -> str:
    """The tenant's run-start rate limiter state (GCRA theoretical arrival time)."""
    return f"{PREFIX}:rate:{tenant_id}"


# --- fair share (bus.fairshare) ---------------------------------------------------------
#: The fair-share keys of a shard, in the order its scripts take them.
FAIR_PARTS = (
    "ring:interactive",
    "credit:interactive",
    "queue:interactive",
    "ring:batch",
    "credit:batch",
    "queue:batch",
    "seq",
    "weight",
    "inflight",
    "pending",
    "capacity",
)


def fair_keys(shard: int) -> list[str]:
    """A shard's admission queue: per priority a ring of tenants with runs waiting, their
    credits and the runs; sequence numbers, weights, runs admitted, runs waiting per
    tenant, and the capacity the live researchers announce (`FAIR_PARTS`)."""
    return [f"{PREFIX}:{tag(shard)}:fair:{part}" for part in FAIR_PARTS]


# --- budgets (bus.budget) ----------------------------------------------------------
# Every budget key of one tenant shares the tag {t:TENANT}: a reservation checks the
# run's, the user's and the tenant's counters in one script, on one slot of a cluster.


def budget_tag(tenant_id: str) -> str:
    """The hash tag of a tenant's budget keys."""
    return "{t:" + tenant_id + "}"


def budget_used(tenant_id: str, scope: str) -> str:
    """A hash of what one scope (a run, a user's day, the tenant's month...) has spent:
    ``tok`` tokens and ``usd`` micro-dollars."""
    return f"{PREFIX}:{budget_tag(tenant_id)}:budget:used:{scope}"


def budget_reserved(tenant_id: str) -> str:
    """A hash of the tokens and micro-dollars held by calls in flight, per scope."""
    return f"{PREFIX}:{budget_tag(tenant_id)}:budget:reserved"


def budget_holds(tenant_id: str) -> str:
    """A hash of each call in flight's hold (JSON: tokens, price, scopes)."""
    return f"{PREFIX}:{budget_tag(tenant_id)}:budget:holds"


def budget_hold_expiry(tenant_id: str) -> str:
    """A sorted set of the holds by expiry: a dead process's holds are given back."""
    return f"{PREFIX}:{budget_tag(tenant_id)}:budget:expiry"


def budget_charged(tenant_id: str, call_id: str) -> str:
    """Present once a model call was charged: a redelivered step is not charged again."""
    return f"{PREFIX}:{budget_tag(tenant_id)}:budget:charged:{call_id}"


def relay_wake(relay_id: str, shard: int) -> str:
    """A relay's private stream on one shard; an entry re-issues its blocking XREAD."""
    return f"{PREFIX}:{tag(shard)}:relay:{relay_id}:wake"


def question_signature(signature: str) -> str:
    """Marks a signed question's signature as used (by the entry id holding it)."""
    return f"{PREFIX}:qsig:{signature}"


def web_login(token_digest: str) -> str:
    """A one-time login token of the web page (digested): the key id it signs in as."""
    return f"{PREFIX}:web:login:{token_digest}"


def web_session(token_digest: str) -> str:
    """A web page session (digested token): the key id it acts for, and when it began."""
    return f"{PREFIX}:web:session:{token_digest}"


# --- signed webhooks (gateway/webhooks) ----------------------------------------------


def run_webhook(run_id: str, shard: int) -> str:
    """A run's webhook registration (hash: ``spec`` JSON, ``cursor`` of its event stream)."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:webhook"


def run_push_configs(run_id: str, shard: int) -> str:
    """A task's A2A push notification configs (hash: config id -> config JSON)."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:push"


def run_deliveries(run_id: str, shard: int) -> str:
    """List of the ids of a run's webhook deliveries, in the order they were made."""
    return f"{PREFIX}:{tag(shard)}:run:{run_id}:deliveries"


def webhook_watch(shard: int) -> str:
    """Sorted set of runs whose events a webhook watcher follows, scored by registration."""
    return f"{PREFIX}:{tag(shard)}:webhooks:watch"


def webhook_wake(shard: int) -> str:
    """Stream an entry is added to when a run registers a webhook (wakes the watcher)."""
    return f"{PREFIX}:{tag(shard)}:webhooks:wake"


def webhook_lease(shard: int) -> str:
    """Which process's watcher follows the shard's webhook runs (a lease with expiry)."""
    return f"{PREFIX}:{tag(shard)}:webhooks:lease"


def webhook_due(shard: int) -> str:
    """The delivery schedule: sorted set of delivery ids scored by their next attempt time."""
    return f"{PREFIX}:{tag(shard)}:webhooks:due"


def webhook_delivery(delivery_id: str, shard: int) -> str:
    """One delivery (hash: target, body, status, attempts, last outcome)."""
    return f"{PREFIX}:{tag(shard)}:webhooks:delivery:{delivery_id}"


# --- retention (bus.retention_passes) ----------------------------------------------------


def retention_lease() -> str:
    """Which process runs the retention passes now (a lease with expiry)."""
    return f"{PREFIX}:retention:lease"
