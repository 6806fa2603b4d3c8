"""The Helm chart's Strata role containers against the roles' CLI: every container's arguments parse with
``strata``'s own parser, its ``STRATA_*`` variables are settings the roles know, and the mounted ``strata.yaml`` plus
its environment load into a valid role configuration with ``common.configfile`` -- the code the role runs at start.
The port the role then listens on is the container port its probes (native gRPC, answered by the role's health
service) and Services use; the config file, WAL and scratch paths are on mounted volumes."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.configfile import ENV_ALIASES, ENV_CONFIG_FILE, ROLES, SETTINGS, load
from launch.cli import _flag_values, _parser
from tests.deploy.helmchart import one
from tests.deploy.helmdocs import (
    POD_IP,
    SCENARIOS,
    Doc,
    config_map_files,
    environment,
    mounts_of,
    role_deployments,
    volume_of,
)

# Variables a Strata container may set besides the settings' own.
EXTRA_STRATA_ENV = {ENV_CONFIG_FILE, "STRATA_LOG_LEVEL", "STRATA_LOG_FORMAT", *ENV_ALIASES}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_role_containers_run_what_the_cli_accepts(
    rendered: dict[str, list[Doc]], scenario: str, tmp_path: Path
) -> None:
    docs = rendered[scenario]
    roles = role_deployments(docs)
    assert sorted(roles) == sorted(ROLES)
    known_env = {s.env for s in SETTINGS} | EXTRA_STRATA_ENV
    config_maps = config_map_files(docs)
    for role, (deployment, container) in roles.items():
        args = _parser().parse_args(container["args"])
        assert args.command == role
        assert container["image"].startswith("strata:")
        env = environment(container, docs)
        assert {k for k in env if k.startswith("STRATA_")} <= known_env, env

        # The config file: a mounted ConfigMap key, read by the same loader the role runs.
        mounts = mounts_of(deployment, container)
        config_path = env[ENV_CONFIG_FILE]
        volume = volume_of(config_path, mounts)
        data = config_maps[volume["configMap"]["name"]]
        config_file = tmp_path / f"{role}-{Path(config_path).name}"
        config_file.write_text(data[Path(config_path).name])
        config = load(role, flags=_flag_values(role, args), config_file=str(config_file), environ=env)

        # It binds and advertises the pod IP, on the port of the container, its probes and Services.
        assert config.common.host == POD_IP
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        metrics = {} if config.common.metrics_port is None else {"metrics": config.common.metrics_port}
        assert ports == {"grpc": config.common.port, **metrics}, ports
        # A TLS port is probed with a TCP connect (Kubernetes' gRPC probes speak plaintext only): the
        # proxy's with tlsMode, the other roles' with internal TLS.
        tls_port = config.common.security.tls_mode if role == "proxy" else config.common.internal_tls.enabled
        kind = "tcpSocket" if tls_port else "grpc"
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert container[probe][kind] == {"port": config.common.port}, (role, probe)
        assert volume_of("/tmp", mounts) == {"name": "tmp", "emptyDir": {}}
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True

        storage = getattr(config, "storage", None)
        if storage is not None:
            assert storage.startswith("s3://")
            assert {"AWS_REGION"} <= env.keys()
        if role == "streamingnode" and config.wal_backend == "local":
            wal = volume_of(config.wal_dir, mounts)
            claim = wal["persistentVolumeClaim"]["claimName"]
            pvc = one(docs, "PersistentVolumeClaim", claim)
            assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
