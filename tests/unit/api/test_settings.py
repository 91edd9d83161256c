"""The settings split per package: every AGENTBUS_ name a user could set is still read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from api.compose.settings import PARTS, AppSettings, env_names

# Every variable the one ``bus.settings.Settings`` class read before the split, each with
# a value other than its default. Listed by hand on purpose: a name dropped from the code
# must fail here, not vanish from a list computed from the code.
OLD_NAMES: dict[str, str] = {
    "AGENTBUS_DATA_DIR": "/srv/agentbus",
    "AGENTBUS_REDIS_URL": "redis://redis.test:6379/2",
    "AGENTBUS_DATABASE_URL": "postgresql+asyncpg://u@db.test/agentbus",
    "AGENTBUS_QDRANT_URL": "http://qdrant.test:6333",
    "AGENTBUS_QDRANT_PATH": "/srv/qdrant",
    "AGENTBUS_LLM": "openai",
    "AGENTBUS_LLM_BASE_URL": "http://llm.test/v1",
    "AGENTBUS_LLM_API_KEY": "sk-llm",
    "AGENTBUS_LLM_MODEL": "qwen",
    "AGENTBUS_LLM_TOKEN_DELAY_S": "0.25",
    "AGENTBUS_QDRANT_COLLECTION": "chunks_2",
    "AGENTBUS_QDRANT_API_KEY": "qk",
    "AGENTBUS_EMBEDDER": "openai",
    "AGENTBUS_EMBEDDING_BASE_URL": "http://emb.test/v1",
    "AGENTBUS_EMBEDDING_API_KEY": "ek",
    "AGENTBUS_EMBEDDING_MODEL": "text-embedding-3-small",
    "AGENTBUS_EMBEDDING_DIM": "1536",
    "AGENTBUS_RERANKER": "nanoranker",
    "AGENTBUS_RETRIEVAL_TOP_K": "7",
    "AGENTBUS_RETRIEVAL_PREFETCH_LIMIT": "80",
    "AGENTBUS_RETRIEVAL_RERANK_CANDIDATES": "30",
    "AGENTBUS_CHUNK_MAX_CHARS": "1200",
    "AGENTBUS_CHUNK_OVERLAP_CHARS": "100",
    "AGENTBUS_INGEST_BATCH_CHUNKS": "32",
    "AGENTBUS_EGRESS_ENABLED": "true",
    "AGENTBUS_ALLOWED_EGRESS_HOSTS": "example.com",
    "AGENTBUS_TOOL_PLUGINS": "mytools:make",
    "AGENTBUS_MCP_SERVERS": '[{"name": "crm", "url": "https://mcp.test/mcp"}]',
    "AGENTBUS_AGENT_HUMAN_GATE": "true",
    "AGENTBUS_TENANT": "acme",
    "AGENTBUS_SUBJECT": "ops",
    "AGENTBUS_SHARDS": "4",
    "AGENTBUS_MAX_DELIVERIES": "5",
    "AGENTBUS_CLAIM_IDLE_MS": "45000",
    "AGENTBUS_HEARTBEAT_MS": "9000",
    "AGENTBUS_RETRY_BACKOFF_MS": "300",
    "AGENTBUS_READ_BLOCK_MS": "500",
    "AGENTBUS_STREAM_MAXLEN": "2000000",
    "AGENTBUS_EVENTS_MAXLEN": "20000",
    "AGENTBUS_EVENTS_TTL_S": "3600",
    "AGENTBUS_RUN_TTL_S": "86400",
    "AGENTBUS_MAX_MESSAGE_BYTES": "131072",
    "AGENTBUS_RUN_DEADLINE_S": "120",
    "AGENTBUS_DRAIN_TIMEOUT_S": "10",
    "AGENTBUS_METRICS_PORT": "9100",
    "AGENTBUS_API_HOST": "0.0.0.0",
    "AGENTBUS_API_PORT": "9000",
    "AGENTBUS_API_ALLOWED_ORIGINS": "https://chat.test",
    "AGENTBUS_API_MAX_QUESTION_CHARS": "8000",
    "AGENTBUS_API_RATE_PER_MINUTE": "60",
    "AGENTBUS_API_RATE_BURST": "10",
    "AGENTBUS_API_MAX_ACTIVE_RUNS": "8",
    "AGENTBUS_API_IDEMPOTENCY_TTL_S": "600",
    "AGENTBUS_API_KEY_CACHE_S": "2.5",
    "AGENTBUS_WS_MAX_FRAME_BYTES": "32768",
    "AGENTBUS_WS_IDLE_TIMEOUT_S": "60",
    "AGENTBUS_WS_BUFFER_EVENTS": "500",
    "AGENTBUS_RELAY_BLOCK_MS": "2000",
    "AGENTBUS_LOG_LEVEL": "debug",
}


def _read_as(got: Any, text: str) -> bool:
    """Whether a field's value is what ``text`` in the environment means."""
    if isinstance(got, SecretStr):
        return got.get_secret_value() == text
    if isinstance(got, bool):
        return got == (text == "true")
    if isinstance(got, int | float | Path):
        return got == type(got)(text)
    return got == text


def test_every_old_variable_is_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in OLD_NAMES.items():
        monkeypatch.setenv(name, value)

    settings = AppSettings.load()
    parts = [settings.bus, settings.agents, settings.retrieval, settings.gateway, settings.api]

    for name, value in OLD_NAMES.items():
        field = name.removeprefix("AGENTBUS_").lower()
        readers = [part for part in parts if field in type(part).model_fields]
        assert readers, f"{name} is read by no settings class"
        for part in readers:
            got = getattr(part, field)
            assert _read_as(got, value), f"{name}={value!r} read as {got!r}"
    assert set(OLD_NAMES) <= env_names()


def test_only_the_data_folder_is_shared_between_parts() -> None:
    seen: dict[str, str] = {}
    for part in PARTS:
        for field in part.model_fields:
            if field != "data_dir":
                assert field not in seen, f"{field} is in {seen.get(field)} and {part.__name__}"
                seen[field] = part.__name__
    assert all("data_dir" in part.model_fields for part in PARTS)


def test_overrides_reach_their_part_and_unknown_names_fail(tmp_path: Path) -> None:
    settings = AppSettings.load(data_dir=tmp_path, shards=3, embedder="hashing", api_port=0)

    assert (settings.bus.shards, settings.retrieval.embedder, settings.api.api_port) == (
        3,
        "hashing",
        0,
    )
    assert settings.bus.data_dir == settings.retrieval.data_dir == settings.api.data_dir == tmp_path
    with pytest.raises(TypeError, match="no setting named shard_count"):
        AppSettings.load(shard_count=2)
