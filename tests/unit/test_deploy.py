"""deploy/ stays true to the code and to what Kubernetes, KEDA, Compose and Postgres accept.

Checked offline: the manifests against Kubernetes' own API schemas (kubernetes-validate),
the compose file against the compose-spec schema (check-jsonschema's copy), and the rules
the schemas cannot see (restricted Pod Security Standard, probes, scaling, secrets).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import kubernetes_validate
import pytest
import yaml
from typer.main import get_command

from api.app.readiness import READY_TIMEOUT_S
from api.cli import manifests
from api.cli.main import app
from api.compose.settings import env_names
from bus import keys

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
ROLES = {str(r) for r in keys.Role if r is not keys.Role.NOOP}
# Read by KEDA's scaler (host:port) and by libraries (HOME), not by agentbus's settings.
NOT_SETTINGS = {"AGENTBUS_REDIS_ADDRESS", "HOME"}
APP_ROLE = "agentbus_app"


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def applied() -> list[dict[str, Any]]:
    """Every resource `kubectl apply -k deploy/k8s` creates."""
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return [d for name in kustomization["resources"] for d in docs(K8S / name)]


def pod_specs() -> list[tuple[str, dict[str, Any]]]:
    specs = []
    for doc in applied():
        if doc["kind"] in ("Deployment", "Job"):
            specs.append((doc["metadata"]["name"], doc["spec"]["template"]["spec"]))
    return specs


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def agentbus_services() -> dict[str, dict[str, Any]]:
    services = compose()["services"]
    return {n: s for n, s in services.items() if str(s.get("image", "")).startswith("agentbus")}


def agentbus_commands() -> list[list[str]]:
    commands = [s["command"] for s in agentbus_services().values()]
    for _, spec in pod_specs():
        commands += [c["args"] for c in spec.get("initContainers", []) + spec["containers"]]
    return commands


def test_every_role_is_a_compose_service_a_deployment_and_a_scaled_object() -> None:
    workers = [c for c in agentbus_commands() if c[0] == "worker"]
    assert {c[1] for c in workers} == ROLES
    assert set(compose()["services"]) >= ROLES
    scaled = [d for d in applied() if d["kind"] == "ScaledObject"]
    assert {d["spec"]["scaleTargetRef"]["name"] for d in scaled} == {f"agentbus-{r}" for r in ROLES}


def _named_streams(role: keys.Role, shard: int) -> list[tuple[str, str]]:
    streams = keys.role_streams(role, shard)
    names = [str(shard), *(f"{lane}_{shard}" for lane in keys.LANES.get(role, ()))]
    return list(zip(names, streams, strict=True))


def test_the_retrieval_scaler_counts_its_ingest_lane() -> None:
    [doc] = [
        d
        for d in yaml.safe_load_all(manifests.keda_yaml(1))
        if d and d["metadata"]["name"] == "agentbus-retrieval"
    ]
    streams = {t["metadata"]["stream"] for t in doc["spec"]["triggers"]}
    assert streams == {"ab:{0}:role:retrieval", "ab:{0}:role:retrieval:ingest"}


@pytest.mark.parametrize("shards", [1, 3])
def test_scalers_sum_pending_and_lag_over_every_shard(shards: int) -> None:
    # Max over triggers (KEDA's default) would scale a 3-shard backlog like a 1-shard one,
    # and lag alone reads 0 while every replica is busy with its pending entries.
    for doc in yaml.safe_load_all(manifests.keda_yaml(shards)):
        if not doc:
            continue
        role = doc["metadata"]["name"].removeprefix("agentbus-")
        triggers = {t["name"]: t["metadata"] for t in doc["spec"]["triggers"]}
        # Every stream the role's workers read: each shard's, and each lane's (the
        # retrieval role's ingest lane), so a queued ingest job scales retrieval too.
        streams = {
            f"{kind}_{n}": stream
            for kind in ("pending", "lag")
            for shard in range(shards)
            for n, stream in _named_streams(keys.Role(role), shard)
        }
        waiting = {"waiting"} if role == "researcher" else set()
        assert set(triggers) == set(streams) | waiting
        expected = set(streams) | waiting
        if waiting:  # runs held by fair admission are not in any stream's lag
            assert triggers["waiting"]["query"] == manifests.WAITING_QUERY
            assert "agentbus_fair_waiting_runs" in manifests.WAITING_QUERY
        for name, meta in triggers.items():
            if name == "waiting":
                continue
            assert meta["stream"] == streams[name]
            assert meta["consumerGroup"] == keys.group_name(role)
            assert ("lagCount" in meta) == name.startswith("lag")
        modifiers = doc["spec"]["advanced"]["scalingModifiers"]
        assert sorted(modifiers["formula"].split(" + ")) == sorted(expected)
        down = doc["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
        assert down["stabilizationWindowSeconds"] >= 60
        assert down["policies"] == [
            {"type": "Pods", "value": 1, "periodSeconds": manifests.GRACE_S}
        ]


def test_generated_manifests_are_current() -> None:
    assert (K8S / "workers.yaml").read_text() == manifests.workers_yaml(1), (
        "run `agentbus deploy k8s` and commit deploy/k8s"
    )
    assert (K8S / "keda.yaml").read_text() == manifests.keda_yaml(1)


@pytest.mark.parametrize("args", agentbus_commands(), ids=shlex.join)
def test_each_deployed_command_parses(args: list[str]) -> None:
    command, rest = get_command(app), list(args)
    while isinstance(command, click.Group):
        assert rest and rest[0] in command.commands, f"no command {shlex.join(args)!r}"
        command, rest = command.commands[rest[0]], rest[1:]
    command.make_context(args[0], rest)  # raises on an unknown option or a bad role


def test_every_setting_named_in_deploy_exists() -> None:
    names = set(compose()["x-agentbus"]["environment"])
    for doc in docs(K8S / "config.yaml") + docs(K8S / "secret.example.yaml"):
        names |= set(doc.get("data", {})) | set(doc.get("stringData", {}))
    fields = env_names()
    assert names - NOT_SETTINGS <= fields, names - NOT_SETTINGS - fields


def test_kustomization_lists_files_that_exist_and_pins_the_image() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert all((K8S / name).is_file() for name in kustomization["resources"])
    assert [i["name"] for i in kustomization["images"]] == ["agentbus"]
    assert kustomization["images"][0]["newTag"] not in ("", "latest")


@pytest.mark.parametrize(
    "name", ["config.yaml", "migrate.yaml", "api.yaml", "workers.yaml", "secret.example.yaml"]
)
def test_manifests_match_the_kubernetes_api_schema(name: str) -> None:
    for doc in docs(K8S / name):
        kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


@pytest.mark.parametrize(("name", "spec"), pod_specs(), ids=[n for n, _ in pod_specs()])
def test_pods_meet_the_restricted_pod_security_standard(name: str, spec: dict[str, Any]) -> None:
    pod = spec["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["automountServiceAccountToken"] is False
    for container in spec.get("initContainers", []) + spec["containers"]:
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["readOnlyRootFilesystem"] is True
        assert container["imagePullPolicy"] == "IfNotPresent"
        assert container["image"] == "agentbus"  # the kustomization's images entry applies


@pytest.mark.parametrize(("name", "spec"), pod_specs(), ids=[n for n, _ in pod_specs()])
def test_long_running_pods_wait_for_the_schema_and_have_probes(
    name: str, spec: dict[str, Any]
) -> None:
    if name == "agentbus-migrate":
        return
    assert [c["args"][:2] for c in spec["initContainers"]] == [["db", "wait"]]
    (container,) = spec["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    ready = container["readinessProbe"]
    assert ready["httpGet"]["path"] == "/readyz"
    if name == "agentbus-api":  # its /readyz waits up to READY_TIMEOUT_S for Redis and SQL
        assert ready["timeoutSeconds"] > READY_TIMEOUT_S


def test_workers_expose_metrics_and_are_scraped() -> None:
    for doc in docs(K8S / "workers.yaml"):
        annotations = doc["spec"]["template"]["metadata"]["annotations"]
        (container,) = doc["spec"]["template"]["spec"]["containers"]
        port = next(p for p in container["ports"] if p["name"] == "metrics")["containerPort"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == str(port)
    config = docs(K8S / "config.yaml")[0]["data"]
    assert config["AGENTBUS_METRICS_PORT"] == str(manifests.METRICS_PORT)
    scraped = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    names = {
        n for job in scraped["scrape_configs"] for sd in job["dns_sd_configs"] for n in sd["names"]
    }
    assert names >= ROLES | {"api"}


def test_drain_fits_in_the_grace_period() -> None:
    drain = float(docs(K8S / "config.yaml")[0]["data"]["AGENTBUS_DRAIN_TIMEOUT_S"])
    for doc in docs(K8S / "workers.yaml"):
        assert doc["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > drain


def test_the_migration_job_is_reapplied_and_runs_as_the_owner() -> None:
    (job,) = docs(K8S / "migrate.yaml")
    assert job["spec"]["ttlSecondsAfterFinished"] > 0
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["db", "upgrade", "--grant-to", APP_ROLE]
    assert {"secretRef": {"name": "agentbus-migrate"}} in container["envFrom"]


def test_no_secret_is_applied_from_the_repository() -> None:
    assert not [d for d in applied() if d["kind"] == "Secret"]
    text = (DEPLOY / "compose.yaml").read_text()
    for line in text.splitlines():
        if re.search(r"PASSWORD|API_KEY", line) and ":" in line:
            value = line.split(":", 1)[1]
            # Every secret comes from the environment (deploy/.env), required or empty.
            assert "${" in value or value.strip() == "", line


def test_the_application_connects_as_a_role_that_row_level_security_binds() -> None:
    url = compose()["x-agentbus"]["environment"]["AGENTBUS_DATABASE_URL"]
    assert url.startswith(f"postgresql+asyncpg://{APP_ROLE}:")
    migrate = compose()["services"]["migrate"]
    assert migrate["command"] == ["db", "upgrade", "--grant-to", APP_ROLE]
    assert not migrate["environment"]["AGENTBUS_DATABASE_URL"].startswith(
        f"postgresql+asyncpg://{APP_ROLE}:"
    )
    init = (DEPLOY / "postgres" / "init-app-role.sh").read_text()
    assert f"CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS" in init


def test_the_compose_file_matches_the_compose_spec() -> None:
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "check-jsonschema"),
            "--builtin-schema",
            "vendor.compose-spec",
            str(DEPLOY / "compose.yaml"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_runs_agentbus_hardened_with_prometheus_and_grafana() -> None:
    services = compose()["services"]
    assert {"prometheus", "grafana"} <= set(services)
    base = compose()["x-agentbus"]
    assert base["read_only"] is True and base["cap_drop"] == ["ALL"]
    assert base["image"] != "agentbus:latest"


def test_the_qdrant_server_matches_the_client_under_test() -> None:
    lock = (ROOT / "uv.lock").read_text()
    client = re.search(r'name = "qdrant-client"\nversion = "(\d+)\.(\d+)', lock)
    assert client is not None
    image = compose()["services"]["qdrant"]["image"]
    server = re.search(r":v(\d+)\.(\d+)", image)
    assert server is not None and server.groups() == client.groups(), (image, client.groups())


def test_the_image_build_is_pinned_cached_and_small() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=python:[\w.-]+@sha256:[0-9a-f]{64}$", dockerfile, re.M)
    deps = dockerfile.index("--no-install-project")
    assert deps < dockerfile.index("COPY agents"), "dependencies are a layer of their own"
    assert "arm64" in dockerfile  # says what holds on arm64
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignored[1] == "*" or "*" in ignored  # everything not named is left out
    assert "!.venv" not in ignored and "!tests/" not in ignored
