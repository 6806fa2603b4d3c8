"""The Helm chart wires the roles to their dependencies: the in-chart etcd, NATS, MinIO and Spark by default
(their Services, credentials and replicas), the external ones given instead, the local WAL on one shared claim, and
a NATS cluster whose routes name every server."""

from __future__ import annotations

import re
from pathlib import Path

from tests.deploy.helmchart import by_kind, one
from tests.deploy.helmdocs import NAMESPACE, POD_IP, RELEASE, Doc, env_of, role_deployments, strata_config


def test_defaults_wire_the_roles_to_the_in_chart_services(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    docs = rendered["defaults"]
    values = strata_config(docs, tmp_path)
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
        env = env_of(docs, role)
        assert env["AWS_ENDPOINT_URL"] == f"http://{RELEASE}-minio.{svc}:{minio['spec']['ports'][0]['port']}"
        assert env["AWS_ACCESS_KEY_ID"] == f"secret:{RELEASE}-s3/AWS_ACCESS_KEY_ID"
    assert "AWS_ACCESS_KEY_ID" not in env_of(docs, "proxy")  # the proxy never reads the segments
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
    assert env_of(docs, "coordinator")["SPARK_LOCAL_IP"] == POD_IP
    # Two coordinators (active + standby); two of every other role.
    assert {r: d["spec"]["replicas"] for r, (d, _) in role_deployments(docs).items()} == {
        "coordinator": 2, "streamingnode": 2, "querynode": 2, "proxy": 2,
    }
    proxy_service = one(docs, "Service", f"{RELEASE}-proxy")
    assert proxy_service["spec"]["ports"][0]["port"] == 19530


def test_external_dependencies_replace_the_in_chart_ones(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    docs = rendered["external"]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for component in ("etcd", "nats", "minio", "spark-master"):
        assert ("StatefulSet", f"{RELEASE}-{component}") not in kinds
    assert ("Deployment", f"{RELEASE}-spark-worker") not in kinds
    assert ("Job", f"{RELEASE}-create-bucket") not in kinds
    assert not by_kind(docs, "Secret")  # the credentials are the user's existing Secret
    values = strata_config(docs, tmp_path)
    assert values["common.etcd"] == "etcd.infra.svc:2379"
    assert values["streamingnode.wal_nats_servers"] == "nats://nats-0.nats.infra.svc:4222,nats://nats-1.nats.infra.svc:4222"
    assert values["streamingnode.wal_nats_replicas"] == 3
    assert values["streamingnode.storage"] == "s3://vectors/prod/segments"
    assert values["jobs.spark_master"] == "spark://spark-master.infra.svc:7077"
    env = env_of(docs, "querynode")
    assert env["AWS_ENDPOINT_URL"] == "https://minio.infra.svc:9000"
    assert env["AWS_REGION"] == "eu-west-1"
    assert env["AWS_SECRET_ACCESS_KEY"] == "secret:strata-s3-credentials/AWS_SECRET_ACCESS_KEY"


def test_local_wal_is_one_shared_claim(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    docs = rendered["local-wal"]
    values = strata_config(docs, tmp_path)
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
