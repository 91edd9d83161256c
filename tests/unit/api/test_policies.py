"""Keys, limits, preferences and the origin check: the API's small policies."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError
from redis.asyncio import Redis

from agents.llm.local import LocalLLM
from agents.llm.observed import ObservedLLM
from agents.settings import AgentSettings
from api import credentials
from api.app.auth import Authenticator, bearer_token
from api.app.errors import Unauthorized
from api.app.preferences import Preferences, overlay, run_settings, stored_preferences
from api.compose.edge import defaults_of
from api.compose.roles import make_llm
from api.compose.settings import AppSettings
from api.compose.tenant_policies import StoredTenantPolicies
from api.http.ws_protocol import origin_allowed
from api.streams.limits import TenantLimits
from bus.commands import Question
from bus.run_state import QuestionSettings
from bus.store import ApiKeyRecord, KeyRole, TenantSettingsRecord
from gateway.tenants import DeploymentPolicies


def test_a_minted_key_parses_and_matches_only_its_record() -> None:
    one = credentials.mint("t1", "alice", KeyRole.USER)
    other = credentials.mint("t1", "alice", KeyRole.USER)

    assert credentials.key_id(one.key) == one.record.id
    assert credentials.matches(one.key, one.record)
    assert not credentials.matches(one.key, other.record)
    assert one.key not in one.record.model_dump_json()  # only the digest is stored


@pytest.mark.parametrize("bad", ["", "abk_", "abk_XYZ123456789_s", "sk_0123456789ab_s", "abk_0123"])
def test_malformed_keys_have_no_id(bad: str) -> None:
    assert credentials.key_id(bad) is None


def test_tenant_names_follow_the_bus_pattern() -> None:
    with pytest.raises(ValueError, match="tenant"):
        credentials.mint("a tenant", "alice", KeyRole.USER)


class FakeKeys:
    def __init__(self, *records: ApiKeyRecord) -> None:
        self.records = {r.id: r for r in records}
        self.reads = 0

    async def get(self, key_id: str) -> ApiKeyRecord | None:
        self.reads += 1
        return self.records.get(key_id)


async def test_the_authenticator_caches_checked_keys_for_a_while() -> None:
    minted = credentials.mint("t1", "alice", KeyRole.ADMIN)
    store = FakeKeys(minted.record)
    now = [0.0]
    auth = Authenticator(store, cache_s=5, clock=lambda: now[0])  # type: ignore[arg-type]

    who = await auth.authenticate(minted.key)
    await auth.authenticate(minted.key)
    now[0] = 6.0
    await auth.authenticate(minted.key)

    assert (who.tenant_id, who.subject, who.is_admin) == ("t1", "alice", True)
    assert store.reads == 2


async def test_with_the_tenants_version_a_cached_key_is_kept_until_the_version_moves() -> None:
    minted = credentials.mint("t1", "alice", KeyRole.USER)
    store = FakeKeys(minted.record)
    now, version = [0.0], [3]

    async def current(tenant_id: str) -> int:
        return version[0]

    auth = Authenticator(store, cache_s=5, clock=lambda: now[0], version=current)  # type: ignore[arg-type]

    await auth.authenticate(minted.key)
    now[0] = 60.0  # long past api_key_cache_s: nothing changed, nothing is read again
    await auth.authenticate(minted.key)
    await auth.authenticate(minted.key, defer_version=True)
    kept = store.reads
    version[0] = 4  # a change of the tenant's keys or settings, in any process
    await auth.authenticate(minted.key)

    assert (kept, store.reads) == (1, 2)


@pytest.mark.parametrize("revoked", [False, True])
async def test_wrong_unknown_and_revoked_keys_are_all_unauthorized(revoked: bool) -> None:
    minted = credentials.mint("t1", "alice", KeyRole.USER)
    record = minted.record
    if revoked:
        record = record.model_copy(update={"revoked_at": record.created_at})
    auth = Authenticator(FakeKeys(record))  # type: ignore[arg-type]
    forged = minted.key[:-4] + "AAAA"
    for key in (None, "nonsense", forged, *([minted.key] if revoked else [])):
        with pytest.raises(Unauthorized):
            await auth.authenticate(key)


def test_bearer_token_parsing() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Basic abc") is None
    assert bearer_token(None) is None


async def test_the_rate_limit_allows_a_burst_then_says_when(fake_redis: Redis) -> None:
    limits = TenantLimits(fake_redis, per_minute=60, burst=3, max_active=0)

    verdicts = [await limits.check_rate("t1") for _ in range(4)]

    assert [v.allowed for v in verdicts] == [True, True, True, False]
    assert verdicts[-1].retry_after_s == 1
    assert (await limits.check_rate("t2")).allowed  # per tenant


async def test_the_run_quota_counts_runs_until_they_end_or_expire(fake_redis: Redis) -> None:
    limits = TenantLimits(fake_redis, per_minute=0, burst=1, max_active=2)
    later = time.time() + 60

    assert (await limits.acquire("t1", "a", later)).allowed
    assert (await limits.acquire("t1", "a", later)).allowed  # a retry of the same run
    assert (await limits.acquire("t1", "b", time.time() - 1)).allowed  # already past deadline
    assert (await limits.acquire("t1", "c", later)).allowed  # b's slot expired
    full = await limits.acquire("t1", "d", later)
    await limits.release("t1", "a")

    assert not full.allowed and 1 <= full.retry_after_s <= 5
    assert (await limits.acquire("t1", "d", later)).allowed


def test_preferences_overlay_the_deployment_then_the_question() -> None:
    defaults = defaults_of(AppSettings.load(egress_enabled=False, run_deadline_s=120))
    prefs = Preferences(think=True, egress_enabled=True, egress_hosts=["Example.COM", "*.x.org"])

    effective = overlay(defaults, prefs)
    chosen = run_settings(effective, QuestionSettings(think=False, mode="multi"))

    assert effective.think and effective.egress_enabled and effective.timeout_s == 120
    assert effective.egress_hosts == ["*.x.org", "example.com"]
    assert (chosen.think, chosen.mode, chosen.use_tools) == (False, "multi", True)


def test_bad_egress_hosts_and_unknown_fields_are_refused() -> None:
    with pytest.raises(ValidationError):
        Preferences(egress_hosts=["not a host"])
    with pytest.raises(ValidationError):
        Preferences.model_validate({"quota": 5})


@pytest.mark.parametrize(
    ("origin", "allowed_csv", "ok"),
    [
        (None, "", True),  # not a browser
        ("http://api.local:8080", "", True),  # the API's own origin
        ("https://evil.example", "", False),
        ("https://app.example", "https://app.example/", True),
        ("https://evil.example", "*", True),
    ],
)
def test_origin_check(origin: str | None, allowed_csv: str, ok: bool) -> None:
    assert origin_allowed(origin, "api.local:8080", allowed_csv) is ok


async def test_the_gateway_sees_each_tenants_stored_egress_and_critical_tools() -> None:
    class FakePrefs:
        async def get(self, tenant_id: str) -> TenantSettingsRecord | None:
            if tenant_id != "t1":
                return None
            doc = {
                "egress_enabled": True,
                "egress_hosts": ["docs.example.com"],
                "approved_critical_tools": ["wipe_cache"],
            }
            return TenantSettingsRecord(
                tenant_id="t1", settings=doc, updated_at=datetime.now(UTC), updated_by="root"
            )

    base = DeploymentPolicies.from_settings(egress_enabled=False, allowed_egress_hosts="")
    policies = StoredTenantPolicies(base, FakePrefs())  # type: ignore[arg-type]

    mine, other = await policies.for_tenant("t1"), await policies.for_tenant("t2")

    assert mine.egress_enabled and mine.allowed_egress_hosts == frozenset({"docs.example.com"})
    assert not other.egress_enabled and other.allowed_egress_hosts == frozenset()
    assert (mine.critical_tools, other.critical_tools) == (frozenset({"wipe_cache"}), frozenset())


async def test_steps_that_miss_the_policy_cache_together_share_one_read() -> None:
    reads: list[str] = []

    class SlowPrefs:
        async def get(self, tenant_id: str) -> None:
            reads.append(tenant_id)
            await asyncio.sleep(0.01)

    base = DeploymentPolicies.from_settings(egress_enabled=False, allowed_egress_hosts="")
    policies = StoredTenantPolicies(base, SlowPrefs())  # type: ignore[arg-type]
    got = await asyncio.gather(*(policies.for_tenant("t1") for _ in range(20)))
    assert reads == ["t1"] and len(set(map(id, got))) == 1
    await policies.for_tenant("t1")  # cached
    assert reads == ["t1"]


def test_a_run_asks_for_critical_tools_by_name_only() -> None:
    ask = QuestionSettings(approve_critical=["wipe_cache", "wipe_cache"], approve_high_risk=True)
    made = run_settings(defaults_of(AppSettings.load()), ask)
    assert made.approve_critical == ["wipe_cache"]
    with pytest.raises(ValidationError):
        QuestionSettings(approve_critical=["rm -rf"])


def test_run_defaults_come_from_the_environment_and_the_tenant() -> None:
    env = AppSettings.load(
        agent_mode="multi",
        agent_accuracy="accurate",
        verifier_check=False,
        agent_max_tool_hops=3,
        approve_high_risk=True,
        run_deadline_s=5,  # below the floor: a run gets at least MIN_TIMEOUT_S
    )
    made = run_settings(defaults_of(env), QuestionSettings())
    assert (made.mode, made.accuracy, made.verifier_check) == ("multi", "accurate", False)
    assert (made.max_tool_hops, made.approve_high_risk, made.timeout_s) == (3, True, 30)

    prefs = Preferences(verifier_check=True, max_tool_hops=5, approve_high_risk=False)
    tenant = overlay(defaults_of(env), prefs)
    made = run_settings(tenant, QuestionSettings())
    assert (made.verifier_check, made.max_tool_hops, made.approve_high_risk) == (True, 5, False)
    asked = run_settings(tenant, QuestionSettings(max_tool_hops=1, approve_high_risk=True))
    assert (asked.max_tool_hops, asked.approve_high_risk) == (1, True)


@pytest.mark.parametrize(
    "bad",
    [{"max_tool_hops": 33}, {"timeout_s": 29}, {"timeout_s": 3601}, {"max_tool_hops": -1}],
)
def test_tenant_limits_are_bounded(bad: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        Preferences.model_validate(bad)


@pytest.mark.parametrize(
    "bad", [{"max_tool_hops": 99}, {"human_gate": True}, {"sources": ["web"]}, {"model": ""}]
)
def test_a_question_may_set_only_its_own_fields_in_range(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        QuestionSettings.model_validate(bad)


def test_the_exported_question_schema_is_what_admission_keeps() -> None:
    schema = Question.model_json_schema()
    settings = schema["$defs"]["QuestionSettings"]
    assert set(settings["properties"]) == set(QuestionSettings.model_fields)
    assert settings["additionalProperties"] is False


def test_the_local_model_context_window_is_a_setting(tmp_path: Path) -> None:
    llm = make_llm(AgentSettings(llm="local", llm_context_tokens=4096, data_dir=tmp_path))
    local = llm.inner if isinstance(llm, ObservedLLM) else llm  # priced and traced
    assert isinstance(local, LocalLLM) and local.context_tokens == 4096


def test_a_timeout_stored_before_the_bounds_is_read_back_in_range() -> None:
    assert stored_preferences({"timeout_s": 5}).timeout_s == 30
    assert stored_preferences({"timeout_s": 9000}).timeout_s == 3600
    assert stored_preferences({"timeout_s": 120, "think": True}).timeout_s == 120
