"""A streaming node cut off the network is replaced and fenced; no acknowledged insert is lost.

Multi-host without Docker (issue #11): every process runs on a host of its
own, a network namespace on a private bridge (``tests/cluster/netns.py``,
addresses ``10.213.0.0/24`` that exist only inside namespaces the test
creates): etcd, a coordinator, two streaming nodes, a query node, a proxy and
the client. Each role binds and advertises its host's address
(``STRATA_COMMON_HOST``); every session has a 3 s TTL. The client host runs
``tests/cluster/netns_client.py``: the harness's ``Inserter`` threads through
the real ``pymilvus`` client, plus probes, driven from the test over a pipe.

Both streaming nodes register before the coordinator starts, so the 4
pchannels are spread over both; a collection with 4 shards puts a vchannel on
each, so every insert batch needs both nodes. Two clients insert without
pause. The streaming node owning ``<cluster>-dml_0`` first loses its route to
the coordinator for half a second (a blackhole route on its host): appends
that reach it then wait for timestamps, so it holds a batch when, next, its
cable is pulled (its bridge port down). It is healed once the take-over is
done. Checked:

* its pchannels move to the other node, each term exactly one higher, the
  other node's keep theirs (read from etcd); a ``Produce`` on the new owner at
  the new term is accepted (so the probe below can tell);
* inserts are acknowledged again while it is cut off (the time from the cut
  to the first acknowledged insert sent after it is printed);
* healed, it registers again under a new server id, having released its
  pchannels first: it reports none of them available at its old term, and a
  ``Produce`` there is refused; the batch it held, written after the
  take-over, is refused by the WAL (``wal fenced`` in its log): never
  acknowledged, never delivered (``streamingnode/walimpls/README.md``);
* inserts go on after the heal; a Strong query returns every acknowledged id,
  no id twice, and only ids a client sent; read from the start of their logs,
  the moved pchannels deliver their old term's messages, then the newer
  terms', with terms and timeticks never going back (the refused batch is
  not among them).

Its TCP retransmission timeout is capped at 1 s where the kernel allows
(6.15+), so the held batch gets its timestamp within a second of the heal;
elsewhere the back-off still answers (about 6 s after the cut) inside the
10 s deadline of that call and the 7 s a closing WAL waits for its writer,
as the heal comes about TTL seconds after the cut.

The WAL is the ``local`` backend in a directory every streaming node shares
(the namespaces share the file system; the take-over moves the pchannel to a
node that reads the same directory). A NATS JetStream backend
(``wal_backend: nats``) would remove that shared directory: nats-server
would be one more host here. Needs root and iproute2; without them the test
fails, it does not skip.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from common.etcd.process import find_etcd_binary
from common.procutil import die_with_parent
from tests.cluster.harness import Role, wait_until
from tests.cluster.netns import PREFIX, Host, NetnsUnavailable, Network, ip, namespaces
from tests.cluster.netns_client import ClientHost
from tests.harness import REPO

TTL = 3
DIM = 8
ROOT = "netns"
COLLECTION = "c"
PCHANNELS = 4
CLIENTS = 2
STALL = 0.5  # seconds the cut node cannot reach the coordinator before its cable is pulled
BATCHES_AFTER_HEAL = 5  # per client, before the inserters stop
ETCD_PORT = 2379  # fixed ports: each host has its own port space
PROXY_PORT = 19530
REFUSED = {"UNMATCHED_CHANNEL_TERM", "CHANNEL_NOT_EXIST", "CHANNEL_FENCED", "WAL_CLOSED"}


class HostRole(Role):
    """A harness :class:`Role` (own process group, log file) whose process runs on ``host``.

    ``Role`` itself starts ``python -m launch.cli`` in the machine's namespace; this one
    wraps any command in ``ip netns exec`` (which execs it, so the pid is the command's).
    """

    def __init__(self, host: Host, command: list[str], logs: Path, env: dict[str, str] | None = None) -> None:
        self.name = host.name
        self.log_path = logs / f"{host.name}.log"
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                host.argv(*command),
                cwd=REPO,
                stdout=out,
                stderr=out,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, **(env or {})},
                preexec_fn=die_with_parent,  # a test killed with -9 leaves no role behind
            )


def start_etcd(host: Host, data_dir: Path, logs: Path) -> HostRole:
    """One etcd member on ``host``, listening on (and advertising) the host's address only."""
    client_url = f"http://{host.address}:{ETCD_PORT}"
    peer_url = f"http://{host.address}:{ETCD_PORT + 1}"
    command = [
        find_etcd_binary(),
        "--name", "netns",
        "--data-dir", str(data_dir),
        "--listen-client-urls", client_url,
        "--advertise-client-urls", client_url,
        "--listen-peer-urls", peer_url,
        "--initial-advertise-peer-urls", peer_url,
        "--initial-cluster", f"netns={peer_url}",
    ]  # fmt: skip
    etcd = HostRole(host, command, logs)
    etcd.wait_for_log("ready to serve client requests", 30)
    return etcd


def start_role(host: Host, role: str, args: list[str], logs: Path) -> HostRole:
    """``strata ROLE`` on ``host``, bound to and advertising the host's address."""
    env = {"STRATA_COMMON_HOST": host.address, "STRATA_COMMON_SESSION_TTL_SECONDS": str(TTL)}
    return HostRole(host, [sys.executable, "-m", "launch.cli", role, *args], logs, env)


def log_time(role: Role, event: str) -> float | None:
    """Wall-clock time (``time.time()``) of the first log line of ``role`` with ``event=<event>``."""
    m = re.search(rf"timestamp='([^']+)' level='\w+' event='{re.escape(event)}'", role.log())
    return None if m is None else datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()


def connects(src: Host, dst: Host, port: int) -> bool:
    """Whether a TCP connection from ``src`` to ``dst``'s address and ``port`` opens within 1 s."""
    probe = "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)"
    done = subprocess.run(src.argv(sys.executable, "-c", probe, dst.address, str(port)), capture_output=True, timeout=30)
    return done.returncode == 0


@pytest.fixture()
def network() -> Iterator[Network]:
    net = Network()
    try:
        net.start()
    except NetnsUnavailable as err:
        net.close()
        pytest.fail(str(err), pytrace=False)
    try:
        yield net
    finally:
        net.close()


def test_the_network_connects_cuts_heals_and_leaves_nothing_behind(network: Network) -> None:
    a, b = network.add_host("a"), network.add_host("b")
    listener = subprocess.Popen(
        b.argv(sys.executable, "-c", f"import socket, time; s = socket.create_server(('{b.address}', 7000)); time.sleep(60)")
    )
    try:
        wait_until("b listens", lambda: connects(a, b, 7000), 10)
        network.cut(b)
        assert not connects(a, b, 7000)
        network.heal(b)
        wait_until("b reachable again", lambda: connects(a, b, 7000), 10)
        network.block(a, b)
        assert not connects(a, b, 7000)
        network.unblock(a, b)
        assert connects(a, b, 7000)
    finally:
        listener.kill()
        listener.wait(10)
    # The machine's own namespace has none of the test's addresses or interfaces.
    own = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, check=True).stdout
    names = [line.split(":")[1].strip().split("@")[0] for line in ip("-o", "link").stdout.splitlines()]
    assert not [h.address for h in (a, b) if f" {h.address}/" in own], own
    assert not {a.port, b.port} & set(names), names
    ours = [n for n in namespaces() if n.startswith(network.tag)]
    assert sorted(ours) == sorted([network.switch, a.netns, b.netns])

    # A crashed run's namespace (its pid is gone) is removed by the next network, with what runs in it.
    max_pid = int(Path("/proc/sys/kernel/pid_max").read_text())
    dead_pid = next(p for p in range(max_pid - 1, 1, -1) if not Path(f"/proc/{p}").exists())
    leftover = f"{PREFIX}{dead_pid}-1-x"
    ip("netns", "add", leftover)
    sleeper = subprocess.Popen(["ip", "netns", "exec", leftover, "sleep", "60"])
    try:
        with Network():
            assert leftover not in namespaces()
        assert sleeper.wait(10) == -signal.SIGKILL
    finally:
        sleeper.kill()
        sleeper.wait(10)
        ip("netns", "del", leftover, check=False)
    network.close()
    assert not [n for n in namespaces() if n.startswith(network.tag)]


def test_a_streaming_node_cut_off_the_network_is_replaced_and_fenced(network: Network, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    hosts = {
        name: network.add_host(name)
        for name in ("etcd", "coordinator", "sn-a", "sn-b", "querynode", "proxy", "client")
    }
    # Either streaming node may be the one cut off; once healed it resends within a second.
    fast = all([network.fast_retransmit(hosts["sn-a"]), network.fast_retransmit(hosts["sn-b"])])
    roles: list[HostRole] = []
    client: ClientHost | None = None
    try:
        etcd = start_etcd(hosts["etcd"], tmp_path / "etcd", logs)
        roles.append(etcd)
        endpoint = f"{hosts['etcd'].address}:{ETCD_PORT}"
        common = ["--etcd", endpoint, "--etcd-root", ROOT]
        storage = ["--storage", (tmp_path / "storage").as_uri()]  # shared object storage
        wal = ["--wal-dir", str(tmp_path / "wal")]  # shared WAL directory (local backend)
        nodes = {
            name: start_role(hosts[name], "streamingnode", [*common, *storage, *wal], logs) for name in ("sn-a", "sn-b")
        }
        roles.extend(nodes.values())
        for node in nodes.values():
            node.wait_for_log("role ready", 60)
        # Both sessions exist before the coordinator's first balance round: it spreads the pchannels.
        coordinator_args = [*common, *storage, "--pchannels", str(PCHANNELS)]
        roles.append(start_role(hosts["coordinator"], "coordinator", coordinator_args, logs))
        roles.append(start_role(hosts["querynode"], "querynode", [*common, *storage], logs))
        roles.append(start_role(hosts["proxy"], "proxy", [*common, "--port", str(PROXY_PORT)], logs))
        for role in roles[3:]:
            role.wait_for_log("role ready", 60)
        for role in roles[1:]:  # every role serves on its host's address, none on loopback
            assert f"address='{hosts[role.name].address}:" in role.log(), role.log()[-2000:]

        uri = f"http://{hosts['proxy'].address}:{PROXY_PORT}"
        client = ClientHost(hosts["client"], uri=uri, etcd=endpoint, root=ROOT, log=logs / "client.log")

        def pchannels() -> dict[str, dict[str, Any]]:
            assert client is not None
            return dict(client.call("pchannels"))

        def all_assigned() -> bool:
            ps = pchannels()
            return len(ps) == PCHANNELS and all(m["state"] == "ASSIGNED" for m in ps.values())

        wait_until("every pchannel assigned", all_assigned, 30)
        client.call("create", collection=COLLECTION, dim=DIM, shards=PCHANNELS)
        sessions = {int(i): a for i, a in client.call("sessions", role="streamingnode").items()}
        address = {name: f"{hosts[name].address}:" for name in nodes}
        node_id = {name: next(i for i, a in sessions.items() if a.startswith(address[name])) for name in nodes}
        node_address = {name: sessions[node_id[name]] for name in nodes}

        before = pchannels()
        assert {m["node_id"] for m in before.values()} == set(node_id.values()), before
        victim = next(n for n, i in node_id.items() if i == before[sorted(before)[0]]["node_id"])
        survivor = next(n for n in nodes if n != victim)
        moved = {p: int(m["term"]) for p, m in before.items() if m["node_id"] == node_id[victim]}
        kept = {p: int(m["term"]) for p, m in before.items() if m["node_id"] == node_id[survivor]}

        client.call("start", clients=CLIENTS, dim=DIM)
        wait_until("inserts before the cut", lambda: min(client.call("progress", since=0)["acked"]) >= 5, 60)

        # The link to the coordinator goes first, for half a second: appends that reach the node
        # then wait for timestamps, so it holds a batch when the cable is pulled and writes it
        # once healed, after the take-over: the late append the WAL must refuse.
        network.block(hosts[victim], hosts["coordinator"])
        time.sleep(STALL)
        network.cut(hosts[victim])
        cut_at, cut_wall = time.monotonic(), time.time()

        def reassigned() -> bool:
            now = pchannels()
            return all(now[p]["node_id"] == node_id[survivor] and now[p]["state"] == "ASSIGNED" for p in moved)

        reassigned_at = wait_until("pchannels of the cut node reassigned", reassigned, TTL + 15)
        after = pchannels()
        assert {p: (after[p]["node_id"], after[p]["term"]) for p in moved} == {
            p: (node_id[survivor], term + 1) for p, term in moved.items()
        }, after
        assert {p: (after[p]["node_id"], after[p]["term"]) for p in kept} == {
            p: (node_id[survivor], term) for p, term in kept.items()
        }, after
        # The probe used on the healed node below: the new owner takes an append at the new term.
        p0 = sorted(moved)[0]
        assert client.call("produce_probe", address=node_address[survivor], pchannel=p0, term=moved[p0] + 1) == "OK"

        def recovered() -> bool:
            return all(client.call("progress", since=cut_at)["after"])

        recovered_at = wait_until("every client inserts again while the node is cut off", recovered, 60)
        first_ack = min(a for per_client in client.call("progress", since=cut_at)["after"] for _, a in per_client)

        network.unblock(hosts[victim], hosts["coordinator"])
        network.heal(hosts[victim])
        healed_at = time.monotonic()

        def registered_again() -> bool:  # under a new server id: the coordinator sees a new node
            assert client is not None
            now = client.call("sessions", role="streamingnode")
            return any(a == node_address[victim] and int(i) != node_id[victim] for i, a in now.items())

        wait_until("the healed node registers again", registered_again, 30)
        # It released its pchannels before registering again: it serves none of them at its
        # old term any more and refuses an append there.
        status = client.call("wal_status", address=node_address[victim])
        still = [w for w in status if w["pchannel"] in moved and w["term"] == moved[w["pchannel"]] and w["available"]]
        assert not still, f"the cut node still serves {still} after the heal"
        for p, term in moved.items():
            answer = client.call("produce_probe", address=node_address[victim], pchannel=p, term=term)
            assert answer in REFUSED, f"the cut node answered {answer} to an append on {p} at its old term {term}"
        # The batch it held across the take-over was written after it and refused by the WAL.
        nodes[victim].wait_for_log("event='wal fenced'", 15)

        marks = client.call("progress", since=healed_at)["acked"]
        wait_until(
            "more inserts after the heal",
            lambda: all(
                n >= m + BATCHES_AFTER_HEAL
                for n, m in zip(client.call("progress", since=healed_at)["acked"], marks, strict=True)
            ),
            60,
        )
        failures = client.call("progress", since=0)["failures"]
        done = client.call("stop")
        acked = {i for a, b in done["acked"] for i in range(a, b)}
        attempted = {i for a, b in done["attempted"] for i in range(a, b)}
        got = client.call("query_ids")
        assert len(got) == len(set(got)), f"{len(got) - len(set(got))} ids are returned twice"
        missing = acked - set(got)
        assert not missing, f"{len(missing)} acknowledged ids are missing, e.g. {sorted(missing)[:10]}"
        assert set(got) <= attempted, f"ids nobody inserted: {sorted(set(got) - attempted)[:10]}"
        # What readers get of each moved pchannel from the start of its log: its old term, then the
        # newer ones, terms and timeticks never going back. The batch the cut node wrote after the
        # take-over (its term, later timeticks) would break one or the other wherever it showed up.
        now = pchannels()
        owners = {int(i): a for i, a in client.call("sessions", role="streamingnode").items()}
        for p, term in moved.items():
            owner = owners[now[p]["node_id"]]
            delivered = client.call("consume", address=owner, pchannel=p, term=now[p]["term"], seconds=2)
            terms, ticks = [t for t, _ in delivered], [tt for _, tt in delivered]
            runs = [(t, terms.count(t)) for t in sorted(set(terms))]
            assert {term, term + 1} <= set(terms), f"{p}: messages delivered per term: {runs}"
            assert terms == sorted(terms), f"{p}: an older term after a newer one: {terms}"
            assert ticks == sorted(ticks), f"{p}: timeticks going back: {delivered}"
        for role in roles:
            assert role.exited() is None, f"{role.name} exited with {role.exited()}"

        lost_at = log_time(nodes[victim], "session lost")
        print(
            f"streaming node cut off ({victim}, pchannels {sorted(moved)}): "
            f"it gave up its session after {'?' if lost_at is None else f'{lost_at - cut_wall:.2f}'}s, "
            f"pchannels reassigned (term+1) after {reassigned_at - cut_at:.2f}s, "
            f"first insert acknowledged after {first_ack - cut_at:.2f}s, "
            f"every client inserting again after {recovered_at - cut_at:.2f}s ({failures} failed attempts retried); "
            f"healed after {healed_at - cut_at:.2f}s, late appends refused: {nodes[victim].log().count('wal fenced')} "
            f"(TCP retransmission capped at 1 s: {fast}); "
            f"{len(acked)} acknowledged rows, {len(got)} returned by a Strong query"
        )
    except BaseException:
        for role in roles:
            print(f"==== {role.name} (exit {role.exited()}) ====\n{role.log()[-4000:]}")
        if client is not None:
            print(f"==== client ====\n{client.log_path.read_text()[-4000:]}")
        raise
    finally:
        if client is not None:
            client.close()
        for role in reversed(roles):
            role.kill()
