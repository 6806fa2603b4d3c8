"""The Helm chart's security values: root's password, the proxy's TLS certificates and internal TLS reach only
the roles that read them, where their settings point."""

from __future__ import annotations

from pathlib import Path

from common.configfile import load
from tests.deploy.helmchart import one
from tests.deploy.helmdocs import RELEASE, Doc, environment, mounts_of, role_deployments, volume_of


def test_security_secrets_reach_only_the_roles_that_read_them(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    docs = rendered["security"]
    roles = role_deployments(docs)
    configs = {}
    for role, (_deployment, container) in roles.items():
        env = environment(container, docs)
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
    mounts = mounts_of(coordinator, container)
    volume = volume_of(configs["coordinator"].common.security.default_root_password_file, mounts)
    assert volume["secret"]["secretName"] == f"{RELEASE}-security"
    for role in ("streamingnode", "querynode", "proxy"):
        deployment, container = roles[role]
        assert not any(v.get("secret", {}).get("secretName") == f"{RELEASE}-security"
                       for v in deployment["spec"]["template"]["spec"]["volumes"]), role
    # The proxy's certificates: the TLS Secret, mounted where tls.* point; nobody else mounts it.
    proxy, container = roles["proxy"]
    for path in (sec.server_pem_path, sec.server_key_path, sec.ca_pem_path):
        assert volume_of(path, mounts_of(proxy, container))["secret"]["secretName"] == "strata-proxy-tls"
    for role in ("coordinator", "streamingnode", "querynode"):
        deployment, _ = roles[role]
        assert not any(v.get("secret", {}).get("secretName") == "strata-proxy-tls"
                       for v in deployment["spec"]["template"]["spec"]["volumes"]), role
    # Internal TLS: every role mounts the roles' Secret where internaltls.* point, with mutual TLS on.
    for role, (deployment, container) in roles.items():
        tls = configs[role].common.internal_tls
        assert (tls.enabled, tls.mutual, tls.sni) == (True, True, "localhost"), role
        for path in (tls.server_pem_path, tls.server_key_path, tls.ca_pem_path):
            assert volume_of(path, mounts_of(deployment, container))["secret"]["secretName"] == "strata-internal-tls"
    # Defaults: no Secret, Milvus's default password, no TLS, no super users.
    assert not [d for d in rendered["defaults"] if d["kind"] == "Secret" and d["metadata"]["name"] == f"{RELEASE}-security"]
    assert "superUsers" not in one(rendered["defaults"], "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"]
