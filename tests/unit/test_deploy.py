"""deploy/ stays true to the code: every role deployed and scaled, commands and settings real."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from typer.main import get_command

from api.cli.main import app
from api.compose.settings import env_names
from bus import keys

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ROLES = {str(r) for r in keys.Role if r is not keys.Role.NOOP}
# Read by KEDA's scaler (host:port), not by agentbus.
NOT_SETTINGS = {"AGENTBUS_REDIS_ADDRESS"}


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def agentbus_commands() -> list[list[str]]:
    services = compose()["services"]
    commands = [s["command"] for s in services.values() if s.get("image") == "agentbus:latest"]
    for doc in docs(DEPLOY / "k8s" / "workers.yaml") + docs(DEPLOY / "k8s" / "api.yaml"):
        if doc["kind"] == "Deployment":
            commands += [c["args"] for c in doc["spec"]["template"]["spec"]["containers"]]
    return commands


def test_every_role_is_a_compose_service_a_deployment_and_a_scaled_object() -> None:
    services = compose()["services"]
    workers = [c for c in agentbus_commands() if c[0] == "worker"]
    assert {c[1] for c in workers} == ROLES
    assert set(services) >= ROLES
    scaled = [d for d in docs(DEPLOY / "k8s" / "keda.yaml") if d["kind"] == "ScaledObject"]
    by_group = {d["spec"]["triggers"][0]["metadata"]["consumerGroup"]: d for d in scaled}
    assert set(by_group) == ROLES
    for role, doc in by_group.items():
        trigger = doc["spec"]["triggers"][0]["metadata"]
        assert trigger["stream"] == keys.role_stream(role, 0)
        assert trigger["consumerGroup"] == keys.group_name(role)
        assert doc["spec"]["scaleTargetRef"]["name"] == f"agentbus-{role}"


@pytest.mark.parametrize("args", agentbus_commands(), ids=shlex.join)
def test_each_deployed_command_parses(args: list[str]) -> None:
    command, rest = get_command(app), list(args)
    while isinstance(command, click.Group):
        assert rest and rest[0] in command.commands, f"no command {shlex.join(args)!r}"
        command, rest = command.commands[rest[0]], rest[1:]
    command.make_context(args[0], rest)  # raises on an unknown option or a bad role


def test_every_setting_named_in_deploy_exists() -> None:
    names: set[str] = set(compose()["x-agentbus"]["environment"])
    for doc in docs(DEPLOY / "k8s" / "config.yaml"):
        names |= set(doc.get("data", {})) | set(doc.get("stringData", {}))
    fields = env_names()
    assert names - NOT_SETTINGS <= fields, names - NOT_SETTINGS - fields


def test_kustomization_lists_files_that_exist() -> None:
    kustomization = yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())
    assert all((DEPLOY / "k8s" / name).is_file() for name in kustomization["resources"])
