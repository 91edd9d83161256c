"""`agentbus bench turn|hop|relay`: the deployment options, and the combinations refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentbus_bench.deployment import Deployment
from api.cli.main import app


@pytest.mark.parametrize(
    ("deployment", "problem"),
    [
        (Deployment(redis_url="http://x:6379"), "expected redis://"),
        (Deployment(redis_url="unix:///tmp/r.sock", redis_cluster=True), "TCP node"),
        (Deployment(cluster_port=7300), "needs --redis-cluster"),
        (
            Deployment(redis_url="redis://x:7000", redis_cluster=True, cluster_port=7300),
            "drop it",
        ),
        (Deployment(database_url="postgresql://u@h/db"), "postgresql+asyncpg://"),
    ],
)
def test_bad_combinations_say_what_is_wrong(deployment: Deployment, problem: str) -> None:
    found = deployment.problem()
    assert found is not None and problem in found


@pytest.mark.parametrize(
    "deployment",
    [
        Deployment(),
        Deployment(redis_url="redis://127.0.0.1:6379/3"),
        Deployment(redis_cluster=True, cluster_port=7300),
        Deployment(redis_url="redis://n1:7000", redis_cluster=True),
        Deployment(database_url="postgresql+asyncpg://app@db/agentbus"),
        Deployment(database_url="sqlite+aiosqlite:////tmp/x.db"),
    ],
)
def test_good_combinations_pass(deployment: Deployment) -> None:
    assert deployment.problem() is None


def test_the_environment_names_each_part(tmp_path: Path) -> None:
    target = Deployment("redis://n1:7000", True, "postgresql+asyncpg://app@db/a")
    env = target.env(tmp_path)
    assert env["AGENTBUS_REDIS_URL"] == "redis://n1:7000"
    assert env["AGENTBUS_REDIS_CLUSTER"] == "true"
    assert env["AGENTBUS_DATABASE_URL"] == "postgresql+asyncpg://app@db/a"
    assert env["AGENTBUS_DATA_DIR"] == str(tmp_path)
    settings = target.settings(tmp_path)
    assert settings.redis_cluster and settings.shards > 1  # the same shards as `up`'s
    assert target.describe() == "cluster+postgres"
    assert Deployment().describe() == "embedded+sqlite"
    assert "AGENTBUS_REDIS_URL" not in Deployment().env(tmp_path)


@pytest.mark.parametrize(
    "args",
    [
        ["turn", "--cluster-port", "7300"],
        ["turn", "--database-url", "postgres://u@h/db"],
        ["hop", "--redis-cluster", "--redis-url", "unix:///tmp/r.sock"],
        ["relay", "--url", "http://127.0.0.1:1", "--processes", "2"],
        ["relay", "--url", "http://127.0.0.1:1", "--redis-url", "redis://x:1"],
    ],
)
def test_the_cli_refuses_them_before_starting_anything(args: list[str]) -> None:
    result = CliRunner().invoke(app, ["bench", *args])
    assert result.exit_code == 2, result.output
    assert "Invalid value" in result.output
