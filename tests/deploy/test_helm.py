"""The Helm chart, rendered as a user would render it, against Kubernetes' schemas and the roles' CLI.

Each scenario (defaults, every dependency external, the local WAL on a shared
volume, a NATS cluster) is rendered with ``helm template`` (or the repo's
renderer where no helm binary exists, ``tests/deploy/helmchart.py``), and:

* every object validates, strictly, against the schemas of the oldest and the
  newest Kubernetes release the chart supports (``kubernetes-validate``);
* every Strata container's arguments parse with ``strata``'s own parser, its
  ``STRATA_*`` variables are settings the roles know, and the mounted
  ``strata.yaml`` plus its environment load into a valid role configuration
  with ``common.configfile`` -- the code the role runs at start;
* the port the role then listens on is the container port its probes (native
  gRPC, answered by the role's health service) and Services use; the config
  file, WAL and scratch paths are on mounted volumes; the S3 credentials, etcd,
  NATS and Spark endpoints point at objects the chart renders, or at the
  external ones given.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from common.configfile import ENV_ALIASES, ENV_CONFIG_FILE, ROLES, SETTINGS, load, resolve
from launch.cli import _flag_values, _parser
from tests.deploy.helmchart import CHART, Renderer, RenderError, by_kind, find_renderer, one

VALUES = Path(__file__).parent / "values"
SCENARIOS = {
    "defaults": [],
    "external": [VALUES / "external.yaml"],
    "local-wal": [VALUES / "local-wal.yaml"],
    "nats-cluster": [VALUES / "nats-cluster.yaml"],
    "security": [VALUES / "security.yaml"],
    "monitoring": [VALUES / "monitoring.yaml"],
}
# Custom resources Kubernetes' own schemas do not describe (prometheus-operator's), checked by their own test.
CUSTOM_KINDS = {"PodMonitor"}
# The oldest release with GA gRPC probes, and the newest kubernetes-validate knows.
KUBERNETES_VERSIONS = ("1.27.0", "1.37.0")
RELEASE, NAMESPACE = "strata", "vectors"
POD_IP = "10.42.0.7"
# Variables a Strata container may set besides the settings' own.
EXTRA_STRATA_ENV = {ENV_CONFIG_FILE, "STRATA_LOG_LEVEL", "STRATA_LOG_FORMAT", *ENV_ALIASES}

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    return find_renderer()


@pytest.fixture(scope="module")
def rendered(renderer: Renderer) -> dict[str, list[Doc]]:
    return {name: renderer.template(values=files, release=RELEASE, namespace=NAMESPACE) for name, files in SCENARIOS.items()}


def _containers(doc: Doc) -> list[Doc]:
    spec = doc["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def _workloads(docs: list[Doc]) -> Iterator[Doc]:
    return (d for d in docs if d["kind"] in ("Deployment", "StatefulSet", "Job"))


# --- the manifests themselves --------------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_lint(renderer: Renderer, scenario: str) -> None:
    renderer.lint(values=SCENARIOS[scenario])


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_manifest_validates_against_the_kubernetes_schemas(
    rendered: dict[str, list[Doc]], scenario: str, version: str
) -> None:
    docs = rendered[scenario]
    assert docs
    for doc in docs:
        if doc["kind"] in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{doc['kind']} {doc['metadata']['name']} (k8s {version}): {err.message} at {list(err.path)}")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_names_are_unique_and_selectors_match_pods(rendered: dict[str, list[Doc]], scenario: str) -> None:
    docs = rendered[scenario]
    ids = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(ids) == len(set(ids)), ids
    pods = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"] for d in _workloads(docs)}
    for d in docs:
        if d["kind"] in ("Deployment", "StatefulSet"):
            assert d["spec"]["selector"]["matchLabels"].items() <= pods[d["metadata"]["name"]].items()
        if d["kind"] == "StatefulSet":
            assert d["spec"]["serviceName"] in by_kind(docs, "Service"), d["metadata"]["name"]
        if d["kind"] == "PodDisruptionBudget":
            selected = [n for n, labels in pods.items() if d["spec"]["selector"]["matchLabels"].items() <= labels.items()]
            assert len(selected) == 1, (d["metadata"]["name"], selected)
        if d["kind"] == "Service":
            selected = [
                w for w in _workloads(docs)
                if d["spec"]["selector"].items() <= w["spec"]["template"]["metadata"]["labels"].items()
            ]
            assert selected, f"Service {d['metadata']['name']} selects no pod"
            ports = {p["name"] for w in selected for c in _containers(w) for p in c.get("ports", [])}
            for p in d["spec"]["ports"]:
                assert p["targetPort"] in ports, (d["metadata"]["name"], p)


# --- the Strata roles against their CLI ------------------------------------------------------------


def _config_map_files(docs: list[Doc]) -> dict[str, dict[str, str]]:
    return {name: cm["data"] for name, cm in by_kind(docs, "ConfigMap").items()}


def _environment(container: Doc, docs: list[Doc]) -> dict[str, str]:
    """The container's environment as the kubelet would fill it (pod IP, Secret keys)."""
    secrets = by_kind(docs, "Secret")
    env: dict[str, str] = {}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
            continue
        source = var["valueFrom"]
        if "fieldRef" in source:
            assert source["fieldRef"]["fieldPath"] in ("status.podIP", "metadata.name"), var
            env[var["name"]] = POD_IP if source["fieldRef"]["fieldPath"] == "status.podIP" else "pod-0"
        else:
            ref = source["secretKeyRef"]
            if ref["name"] in secrets:
                assert ref["key"] in secrets[ref["name"]]["data"], var
            env[var["name"]] = f"secret:{ref['name']}/{ref['key']}"
    return env


def _mounts(workload: Doc, container: Doc) -> dict[str, Doc]:
    """mountPath -> the volume mounted there."""
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"].get("volumes", [])}
    return {m["mountPath"]: volumes[m["name"]] for m in container.get("volumeMounts", [])}


def _volume_of(path: str, mounts: dict[str, Doc]) -> Doc:
    best = max((m for m in mounts if path == m or path.startswith(m.rstrip("/") + "/")), key=len, default=None)
    assert best is not None, f"{path} is on no mounted volume: {sorted(mounts)}"
    return mounts[best]


def _role_deployments(docs: list[Doc]) -> dict[str, tuple[Doc, Doc]]:
    """role -> (its Deployment, its Strata container)."""
    out = {}
    for name, d in by_kind(docs, "Deployment").items():
        for c in d["spec"]["template"]["spec"]["containers"]:
            if c.get("args") and c["args"][0] in ROLES and "command" not in c:
                out[c["args"][0]] = (d, c)
                assert name == f"{RELEASE}-{c['args'][0]}"
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_role_containers_run_what_the_cli_accepts(
    rendered: dict[str, list[Doc]], scenario: str, tmp_path: Path
) -> None:
    docs = rendered[scenario]
    roles = _role_deployments(docs)
    assert sorted(roles) == sorted(ROLES)
    known_env = {s.env for s in SETTINGS} | EXTRA_STRATA_ENV
    config_maps = _config_map_files(docs)
    for role, (deployment, container) in roles.items():
        args = _parser().parse_args(container["args"])
        assert args.command == role
        assert container["image"].startswith("strata:")
        env = _environment(container, docs)
        assert {k for k in env if k.startswith("STRATA_")} <= known_env, env

        # The config file: a mounted ConfigMap key, read by the same loader the role runs.
        mounts = _mounts(deployment, container)
        config_path = env[ENV_CONFIG_FILE]
        volume = _volume_of(config_path, mounts)
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
        assert _volume_of("/tmp", mounts) == {"name": "tmp", "emptyDir": {}}
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True

        storage = getattr(config, "storage", None)
        if storage is not None:
            assert storage.startswith("s3://")
            assert {"AWS_REGION"} <= env.keys()
        if role == "streamingnode" and config.wal_backend == "local":
            wal = _volume_of(config.wal_dir, mounts)
            claim = wal["persistentVolumeClaim"]["claimName"]
            pvc = one(docs, "PersistentVolumeClaim", claim)
            assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]


def _strata_config(docs: list[Doc], tmp_path: Path) -> dict[str, object]:
    path = tmp_path / "strata.yaml"
    path.write_text(one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"])
    return resolve(flags={}, config_file=str(path), environ={})


def _env_of(docs: list[Doc], role: str) -> dict[str, str]:
    deployment, container = _role_deployments(docs)[role]
    return _environment(container, docs)


def test_defaults_wire_the_roles_to_the_in_chart_services(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    docs = rendered["defaults"]
    values = _strata_config(docs, tmp_path)
    svc = f"{NAMESPACE}.svc"
    etcd = one(docs, "Service", f"{RELEASE}-etcd")
    assert values["common.etcd"] == f"{RELEASE}-etcd.{svc}:{etcd['spec']['ports'][0]['port']}"
    assert one(docs, "StatefulSet", f"{RELEASE}-etcd")["spec"]["replicas"] == 1
    nats = one(docs, "Service", f"{RELEASE}-nats")
    assert values["streamingnode.wal_backend"] == "nats"
    assert values["streamingnode.wal_nats_servers"] == f"nats://{RELEASE}-nats.{svc}:{nats['spec']['ports'][0]['port']}"
    assert "8388608" in one(docs, "ConfigMap", f"{RELEASE}-nats")["data"]["nats-server.conf"]
    assert values["streamingnode.storage"] == values["querynode.storage"] == values["coordinator.storage"]
    assert values["streamingnode.storage"] == "s3://strata/segments"
    minio = one(docs, "Service", f"{RELEASE}-minio")
    for role in ("coordinator", "streamingnode", "querynode"):
        env = _env_of(docs, role)
        assert env["AWS_ENDPOINT_URL"] == f"http://{RELEASE}-minio.{svc}:{minio['spec']['ports'][0]['port']}"
        assert env["AWS_ACCESS_KEY_ID"] == f"secret:{RELEASE}-s3/AWS_ACCESS_KEY_ID"
    assert "AWS_ACCESS_KEY_ID" not in _env_of(docs, "proxy")  # the proxy never reads the segments
    # MinIO's root user is the roles' S3 identity; the bucket Job creates the storage URI's bucket.
    minio_env = {e["name"]: e for e in one(docs, "StatefulSet", f"{RELEASE}-minio")["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert minio_env["MINIO_ROOT_USER"]["valueFrom"]["secretKeyRef"] == {"name": f"{RELEASE}-s3", "key": "AWS_ACCESS_KEY_ID"}
    job = one(docs, "Job", f"{RELEASE}-create-bucket")
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["strata"]
    # The coordinator drives Spark jobs on the in-chart master, which the worker joins.
    master = one(docs, "StatefulSet", f"{RELEASE}-spark-master")
    master_args = master["spec"]["template"]["spec"]["containers"][0]["args"]
    # Spark's parsers take "--flag value" only.
    assert not any(a.startswith("--") and "=" in a for a in master_args), master_args
    assert master_args[master_args.index("--host") + 1] == f"$(POD_NAME).{RELEASE}-spark-master.{svc}"
    url = f"spark://{RELEASE}-spark-master-0.{RELEASE}-spark-master.{svc}:7077"
    assert values["jobs.spark_master"] == url
    worker_args = one(docs, "Deployment", f"{RELEASE}-spark-worker")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert worker_args[:2] == ["org.apache.spark.deploy.worker.Worker", url]
    assert not any(a.startswith("--") and "=" in a for a in worker_args), worker_args
    assert _env_of(docs, "coordinator")["SPARK_LOCAL_IP"] == POD_IP
    # Two coordinators (active + standby); two of every other role.
    assert {r: d["spec"]["replicas"] for r, (d, _) in _role_deployments(docs).items()} == {
        "coordinator": 2, "streamingnode": 2, "querynode": 2, "proxy": 2,
    }
    proxy_service = one(docs, "Service", f"{RELEASE}-proxy")
    assert proxy_service["spec"]["ports"][0]["port"] == 19530


def test_security_secrets_reach_only_the_roles_that_read_them(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    docs = rendered["security"]
    roles = _role_deployments(docs)
    configs = {}
    for role, (_deployment, container) in roles.items():
        env = _environment(container, docs)
        path = tmp_path / f"{role}.yaml"
        path.write_text(one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"])
        configs[role] = load(role, flags={}, config_file=str(path), environ=env)
        assert not any("PASSWORD" in k for k in env), (role, env)  # the password is a file, not a variable
    sec = configs["proxy"].common.security
    assert (sec.authorization_enabled, sec.tls_mode) == (True, 2)
    assert sec.super_user_names() == {"ops", "sre"}  # security.superUsers, joined as Milvus's setting
    # root's password: the chart's Secret, mounted into the coordinators only, where the setting points.
    secret = one(docs, "Secret", f"{RELEASE}-security")
    assert secret["data"] == {"rootPassword": "Y2hhcnQtcm9vdC1wYXNzd29yZA=="}  # base64 of the values file's password
    coordinator, container = roles["coordinator"]
    mounts = _mounts(coordinator, container)
    volume = _volume_of(configs["coordinator"].common.security.default_root_password_file, mounts)
    assert volume["secret"]["secretName"] == f"{RELEASE}-security"
    for role in ("streamingnode", "querynode", "proxy"):
        deployment, container = roles[role]
        assert not any(v.get("secret", {}).get("secretName") == f"{RELEASE}-security"
                       for v in deployment["spec"]["template"]["spec"]["volumes"]), role
    # The proxy's certificates: the TLS Secret, mounted where tls.* point; nobody else mounts it.
    proxy, container = roles["proxy"]
    for path in (sec.server_pem_path, sec.server_key_path, sec.ca_pem_path):
        assert _volume_of(path, _mounts(proxy, container))["secret"]["secretName"] == "strata-proxy-tls"
    for role in ("coordinator", "streamingnode", "querynode"):
        deployment, _ = roles[role]
        assert not any(v.get("secret", {}).get("secretName") == "strata-proxy-tls"
                       for v in deployment["spec"]["template"]["spec"]["volumes"]), role
    # Internal TLS: every role mounts the roles' Secret where internaltls.* point, with mutual TLS on.
    for role, (deployment, container) in roles.items():
        tls = configs[role].common.internal_tls
        assert (tls.enabled, tls.mutual, tls.sni) == (True, True, "localhost"), role
        for path in (tls.server_pem_path, tls.server_key_path, tls.ca_pem_path):
            assert _volume_of(path, _mounts(deployment, container))["secret"]["secretName"] == "strata-internal-tls"
    # Defaults: no Secret, Milvus's default password, no TLS, no super users.
    assert not [d for d in rendered["defaults"] if d["kind"] == "Secret" and d["metadata"]["name"] == f"{RELEASE}-security"]
    assert "superUsers" not in one(rendered["defaults"], "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"]


def test_external_dependencies_replace_the_in_chart_ones(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    docs = rendered["external"]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for component in ("etcd", "nats", "minio", "spark-master"):
        assert ("StatefulSet", f"{RELEASE}-{component}") not in kinds
    assert ("Deployment", f"{RELEASE}-spark-worker") not in kinds
    assert ("Job", f"{RELEASE}-create-bucket") not in kinds
    assert not by_kind(docs, "Secret")  # the credentials are the user's existing Secret
    values = _strata_config(docs, tmp_path)
    assert values["common.etcd"] == "etcd.infra.svc:2379"
    assert values["streamingnode.wal_nats_servers"] == "nats://nats-0.nats.infra.svc:4222,nats://nats-1.nats.infra.svc:4222"
    assert values["streamingnode.wal_nats_replicas"] == 3
    assert values["streamingnode.storage"] == "s3://vectors/prod/segments"
    assert values["jobs.spark_master"] == "spark://spark-master.infra.svc:7077"
    env = _env_of(docs, "querynode")
    assert env["AWS_ENDPOINT_URL"] == "https://minio.infra.svc:9000"
    assert env["AWS_REGION"] == "eu-west-1"
    assert env["AWS_SECRET_ACCESS_KEY"] == "secret:strata-s3-credentials/AWS_SECRET_ACCESS_KEY"


def test_local_wal_is_one_shared_claim(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    docs = rendered["local-wal"]
    values = _strata_config(docs, tmp_path)
    assert values["streamingnode.wal_backend"] == "local"
    assert "streamingnode.wal_nats_servers" not in values
    assert not any(d["metadata"]["name"].startswith(f"{RELEASE}-nats") for d in docs)
    pvc = one(docs, "PersistentVolumeClaim", f"{RELEASE}-wal")
    assert pvc["spec"]["storageClassName"] == "nfs"
    assert pvc["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    etcd = one(docs, "StatefulSet", f"{RELEASE}-etcd")
    assert etcd["spec"]["replicas"] == 3
    args = etcd["spec"]["template"]["spec"]["containers"][0]["args"]
    cluster = next(a for a in args if a.startswith("--initial-cluster="))
    assert cluster.count("=http://") == 3
    assert one(docs, "PodDisruptionBudget", f"{RELEASE}-etcd")["spec"]["maxUnavailable"] == 1
    assert one(docs, "Service", f"{RELEASE}-proxy")["spec"]["type"] == "LoadBalancer"
    assert "jobs.spark_master" not in values  # Spark off: jobs run in the coordinator (local[*])


def test_nats_cluster_routes_every_server(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["nats-cluster"]
    conf = one(docs, "ConfigMap", f"{RELEASE}-nats")["data"]["nats-server.conf"]
    routes = re.findall(r"nats://(\S+):6222", conf)
    assert routes == [f"{RELEASE}-nats-{i}.{RELEASE}-nats-peer.{NAMESPACE}.svc" for i in range(3)]
    assert one(docs, "StatefulSet", f"{RELEASE}-nats")["spec"]["replicas"] == 3
    assert one(docs, "Deployment", f"{RELEASE}-spark-worker")["spec"]["replicas"] == 3


# --- metrics -----------------------------------------------------------------------------------------


def _selects(selector: Doc, labels: dict[str, str]) -> bool:
    for e in selector.get("matchExpressions", []):
        assert e["operator"] == "In", e
        if labels.get(e["key"]) not in e["values"]:
            return False
    return selector.get("matchLabels", {}).items() <= labels.items()


def test_every_role_serves_metrics_where_the_pod_monitor_and_annotations_point(
    rendered: dict[str, list[Doc]], tmp_path: Path
) -> None:
    docs = rendered["monitoring"]
    monitor = one(docs, "PodMonitor", RELEASE)
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert (endpoint["port"], endpoint["path"], endpoint["interval"]) == ("metrics", "/metrics", "15s")
    selected = {d["metadata"]["name"] for d in _workloads(docs)
                if _selects(monitor["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"])}
    assert selected == {f"{RELEASE}-{role}" for role in ROLES}
    config_file = tmp_path / "strata.yaml"
    config_file.write_text(one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"])
    for role, (deployment, container) in _role_deployments(docs).items():
        env = _environment(container, docs)
        assert env["STRATA_LOG_FORMAT"] == "json"
        config = load(role, flags={}, config_file=str(config_file), environ=env)
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert config.common.metrics_port == 9100
        assert annotations["prometheus.io/port"] == "9100" and annotations["prometheus.io/scrape"] == "true"
        assert {"name": "metrics", "containerPort": 9100, "protocol": "TCP"} in container["ports"]
    # The defaults: Milvus's port, annotations, no PodMonitor (it needs the operator's CRDs).
    defaults = rendered["defaults"]
    assert not by_kind(defaults, "PodMonitor")
    _, container = _role_deployments(defaults)["proxy"]
    assert {"name": "metrics", "containerPort": 9091, "protocol": "TCP"} in container["ports"]


def test_metrics_can_be_turned_off(renderer: Renderer, tmp_path: Path) -> None:
    docs = renderer.template(sets=["metrics.enabled=false", "metrics.podMonitor.enabled=true"])
    assert not by_kind(docs, "PodMonitor")
    config_file = tmp_path / "strata.yaml"
    config_file.write_text(one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"])
    for role, (deployment, container) in _role_deployments(docs).items():
        config = load(role, flags={}, config_file=str(config_file), environ=_environment(container, docs))
        assert config.common.metrics_port is None
        assert [p["name"] for p in container["ports"]] == ["grpc"]
        assert "prometheus.io/scrape" not in deployment["spec"]["template"]["metadata"]["annotations"]


def test_tracing_values_reach_every_role(renderer: Renderer, tmp_path: Path) -> None:
    docs = renderer.template(sets=["trace.exporter=otlp", "trace.otlpEndpoint=otel-collector:4317",
                                   "trace.sampleFraction=0.25"])
    config_file = tmp_path / "strata.yaml"
    config_file.write_text(one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"])
    for role, (_deployment, container) in _role_deployments(docs).items():
        config = load(role, flags={}, config_file=str(config_file), environ=_environment(container, docs))
        trace = config.common.trace
        assert (trace.exporter, trace.otlp_endpoint, trace.sample_fraction, trace.otlp_secure) == (
            "otlp", "otel-collector:4317", 0.25, False), role


# --- values and errors -----------------------------------------------------------------------------


def test_set_overrides_values(renderer: Renderer) -> None:
    docs = renderer.template(sets=["querynode.replicas=5", "cluster.pchannels=32,image.tag=1.2.3", "spark.enabled=false"])
    querynode, container = _role_deployments(docs)["querynode"]
    assert querynode["spec"]["replicas"] == 5
    assert container["image"] == "strata:1.2.3"
    assert "pchannels: 32" in one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"]
    assert not any("spark" in d["metadata"]["name"] for d in docs)


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["etcd.external.enabled=true"], "etcd.external.endpoint is required"),
        (["wal.nats.external.enabled=true"], "wal.nats.external.servers is required"),
        (["spark.external.enabled=true"], "spark.external.masterUrl is required"),
        (["wal.backend=kafka"], "wal.backend must be nats or local"),
        (["s3.external.enabled=true", "s3.secretAccessKey="], "s3.secretAccessKey (or s3.existingSecret) is required"),
        (["security.tlsMode=1"], "security.tlsSecret is required with security.tlsMode 1 or 2"),
        (["security.internalTls.enabled=true"], "security.internalTls.secret is required with security.internalTls.enabled"),
    ],
)
def test_missing_required_values_fail_the_render(renderer: Renderer, sets: list[str], message: str) -> None:
    with pytest.raises(RenderError, match=re.escape(message)):
        renderer.template(sets=sets)


# The keys whose values are Kubernetes structures passed through as they are (documented by Kubernetes).
_PASSTHROUGH = {"resources", "podSecurityContext", "securityContext", "nodeSelector", "tolerations", "affinity",
                "annotations", "imagePullSecrets", "extraEnv"}


def test_values_are_documented_key_by_key() -> None:
    """Every key of values.yaml has a comment right above it, or is inside a Kubernetes structure."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    parents: list[tuple[int, str]] = []
    undocumented = []
    for i, line in enumerate(lines):
        m = re.match(r"^( *)([A-Za-z][A-Za-z0-9]*):", line)
        if not m:
            continue
        indent, key = len(m.group(1)), m.group(2)
        while parents and parents[-1][0] >= indent:
            parents.pop()
        path = [k for _, k in parents] + [key]
        parents.append((indent, key))
        if any(p in _PASSTHROUGH for p in path[:-1]):
            continue
        if not lines[i - 1].strip().startswith("#"):
            undocumented.append(".".join(path))
    assert not undocumented, f"values.yaml keys without a comment above them: {undocumented}"
    # And every key is one the chart uses.
    text = "\n".join(p.read_text() for p in (CHART / "templates").rglob("*") if p.is_file())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    unused = [k for k in _leaf_paths(values) if f".Values.{k}" not in text and not _used_by_parent(k, text)]
    assert not unused, f"values.yaml keys no template reads: {unused}"


def _leaf_paths(tree: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and key not in _PASSTHROUGH:
            yield from _leaf_paths(value, f"{path}.")
        else:
            yield path


def _used_by_parent(path: str, text: str) -> bool:
    # A role's keys are read through `$values := index $root.Values $role` in _helpers.tpl.
    head, _, rest = path.partition(".")
    return head in ROLES and f"$values.{rest}" in text
