"""The API's settings: the HTTP and websocket edge, and the CLI's identity."""

from __future__ import annotations

from pydantic import Field, SecretStr

from bus.settings import EnvSettings


class ApiSettings(EnvSettings):
    """The edge's address and limits (0 switches a limit off), and who the CLI acts as."""

    api_host: str = Field(default="127.0.0.1", description="Address `agentbus api` binds.")
    api_port: int = Field(default=8080, ge=0, le=65535, description="Port of the API.")
    api_allowed_origins: str = Field(
        default="",
        description="Comma-separated browser origins allowed on the websocket and /mcp, "
        "beside the API's own; '*' allows any (on the websocket only).",
    )
    mcp_allowed_hosts: str = Field(
        default="localhost,127.0.0.1,[::1]",
        description="Comma-separated Host header values /mcp answers (any port, or host:port "
        "for one); a browser Origin must be one of them (http or https) or in "
        "api_allowed_origins. Others are refused: 421 (Host), 403 (Origin).",
    )
    a2a_push_notifications: bool = Field(
        default=True,
        description="Offer A2A push notifications (task updates POSTed, signed, to a URL the "
        "client gives); false: the agent card says pushNotifications false and the config "
        "methods answer -32003.",
    )
    api_max_question_chars: int = Field(
        default=32_000, ge=1, le=32_000, description="Longest question accepted (413 beyond)."
    )
    api_rate_per_minute: int = Field(
        default=120, ge=0, description="Runs a tenant may start per minute (0 = no limit)."
    )
    api_rate_burst: int = Field(default=30, ge=1, description="Runs a tenant may start at once.")
    api_max_active_runs: int = Field(
        default=32, ge=0, description="Runs a tenant may have in flight (0 = no limit)."
    )
    api_idempotency_ttl_s: int = Field(
        default=86_400, ge=60, description="How long an Idempotency-Key keeps its run."
    )
    api_key_cache_s: float = Field(
        default=5.0,
        ge=0,
        description="How long a checked API key is trusted before re-reading, where no "
        "tenant settings version is kept (with one: until the version moves, at most 300 s; "
        "0: keys are not cached).",
    )
    ws_max_frame_bytes: int = Field(
        default=64 * 1024, ge=1024, description="Largest websocket frame a client may send."
    )
    ws_idle_timeout_s: float = Field(
        default=300.0, gt=0, description="Close a websocket with no frames and no runs this long."
    )
    ws_buffer_events: int = Field(
        default=2_000, ge=10, description="Events queued for one slow client before it is cut off."
    )
    relay_block_ms: int = Field(
        default=5_000, ge=10, description="BLOCK of the relay's shared XREAD (re-issued on change)."
    )
    api_url: str | None = Field(
        default=None,
        description="`agentbus ask` asks this remote API (through the client) instead of the bus.",
    )
    api_key: SecretStr | None = Field(
        default=None, description="The API key `agentbus ask` uses with api_url."
    )
    tenant: str = Field(default="local", description="Tenant of runs started from the CLI.")
    subject: str = Field(default="cli", description="Subject of runs started from the CLI.")
    groups: str = Field(
        default="", description="Comma-separated ACL groups of runs started from the CLI."
    )
    signing_key: SecretStr | None = Field(
        default=None,
        description="Master key (32+ bytes) that API keys' signing secrets derive from; the "
        "same in every API process. Unset: a random key kept in data_dir/signing-key.",
    )
    api_signature_max_age_s: int = Field(
        default=300, ge=10, description="Signed questions older (or newer) than this are refused."
    )
    schedule_poll_s: float = Field(
        default=5.0,
        gt=0,
        description="How often each API replica looks for scheduled questions that are due.",
    )
    schedule_misfire_grace_s: float = Field(
        default=120.0,
        ge=0,
        description="A scheduled tick later than this (nothing ran) is missed: its schedule's "
        "policy (skip or run_once) decides.",
    )
    api_questions_maxlen: int = Field(
        default=100_000, ge=100, description="Approximate cap on runs.questions' backlog."
    )
