"""Hosts on one machine without Docker: network namespaces on a private bridge.

A :class:`Network` is one L2 segment that exists only inside namespaces it
creates itself:

* a *switch* namespace holding a bridge ``br0`` (so nothing is added to the
  machine's own network namespace: no interface, address or route);
* one namespace per host, with ``lo`` up and an ``eth0`` whose veth peer is a
  port of the bridge; host *k* gets ``10.213.0.<k+2>/24``.

The range is private (RFC 1918) and, because each network has its own switch
namespace, two runs at the same time never see each other's addresses.
Namespaces are named ``strata-np<pid>-<n>-<host>`` after the creating
process (and the n-th network it made), so parallel runs do not collide;
:func:`remove_leftovers` deletes the namespaces (and the processes still
inside them) of earlier runs whose process is gone.

A host is cut off by taking its bridge port down (the cable pulled: its
packets and the packets to it are dropped, TCP connections stay open and
retransmit) and healed by taking it up again; :meth:`Network.block` drops
only what one host sends to another. Commands run on a host through
``ip netns exec`` (:meth:`Host.argv`).

Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2 with bridge and
veth support; without them :meth:`Network.start` raises
:class:`NetnsUnavailable` with the reason.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass

PREFIX = "strata-np"
SUBNET = "10.213.0"  # /24; .1 is left unused, hosts start at .2
_NAME = re.compile(rf"^{re.escape(PREFIX)}(\d+)-")
_networks = itertools.count(1)  # several networks of one process get distinct names


class NetnsUnavailable(RuntimeError):
    """Network namespaces cannot be created here (not root, no iproute2, no CAP_NET_ADMIN)."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``ip ARGS``; raises ``RuntimeError`` with its stderr when it fails and ``check`` is set."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def namespaces() -> list[str]:
    """Names of the network namespaces that ``ip netns`` knows."""
    return [line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line.strip()]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed but not yet reaped by its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def delete_namespace(name: str) -> None:
    """SIGKILL every process left in namespace ``name``, then delete it.

    ``ip netns del`` only unmounts the name: the namespace (and its interfaces)
    lives on while a process is inside, so those go first.
    """
    pids = [int(p) for p in ip("netns", "pids", name, check=False).stdout.split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    ip("netns", "del", name, check=False)


def remove_leftovers() -> list[str]:
    """Delete the namespaces of this module whose creating process no longer runs; returns their names."""
    removed = []
    for name in namespaces():
        m = _NAME.match(name)
        if m is not None and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            delete_namespace(name)
            removed.append(name)
    return removed


@dataclass(frozen=True, slots=True, kw_only=True)
class Host:
    """One host of a :class:`Network`: its namespace, its address, its port on the bridge."""

    name: str
    netns: str
    address: str
    port: str

    def argv(self, *command: str) -> list[str]:
        """``command`` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.netns, *command]


class Network:
    """A bridge in a switch namespace and one namespace per host; see the module docstring.

    ``start()`` then ``add_host()`` for each host; ``close()`` (or the context
    manager) deletes every namespace created, also after a failure half-way.
    """

    def __init__(self) -> None:
        self.tag = f"{PREFIX}{os.getpid()}-{next(_networks)}"
        self.switch = f"{self.tag}-switch"
        self.hosts: dict[str, Host] = {}
        self._created: list[str] = []

    def __enter__(self) -> Network:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Remove leftovers of crashed runs, then create the switch namespace and its bridge."""
        try:
            remove_leftovers()
            self._add_namespace(self.switch)
            ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            ip("-n", self.switch, "link", "set", "br0", "up")
        except (OSError, RuntimeError) as err:
            raise NetnsUnavailable(
                f"cannot create network namespaces ({err}); this test needs root (CAP_NET_ADMIN) and iproute2"
            ) from err

    def _add_namespace(self, name: str) -> None:
        ip("netns", "add", name)
        self._created.append(name)
        ip("-n", name, "link", "set", "lo", "up")

    def add_host(self, name: str) -> Host:
        """A new namespace ``<tag>-<name>`` plugged into the bridge, with the next address."""
        index = len(self.hosts) + 2
        if index > 254:
            raise ValueError("a /24 holds at most 253 hosts")
        host = Host(name=name, netns=f"{self.tag}-{name}", address=f"{SUBNET}.{index}", port=f"p{index}")
        self._add_namespace(host.netns)
        # Created in the switch namespace, the peer moved into the host's: the machine's
        # own namespace never holds either end, not even for a moment.
        ip("-n", self.switch, "link", "add", host.port, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
        ip("-n", self.switch, "link", "set", host.port, "master", "br0", "up")
        ip("-n", host.netns, "addr", "add", f"{host.address}/24", "dev", "eth0")
        ip("-n", host.netns, "link", "set", "eth0", "up")
        self.hosts[name] = host
        return host

    def block(self, host: Host, peer: Host) -> None:
        """Drop what ``host`` sends to ``peer`` (a blackhole route on ``host``); the rest still flows."""
        ip("-n", host.netns, "route", "add", "blackhole", f"{peer.address}/32")

    def unblock(self, host: Host, peer: Host) -> None:
        """Undo :meth:`block`."""
        ip("-n", host.netns, "route", "del", "blackhole", f"{peer.address}/32")

    def fast_retransmit(self, host: Host) -> bool:
        """Cap TCP's retransmission timeout on ``host`` at 1 s, if the kernel can (Linux 6.15+).

        Connections opened afterwards resend within a second of a heal rather than
        after an exponential back-off of many seconds. False where the kernel cannot.
        """
        # /proc/sys/net shows the namespace of the process that opens it: this host's value only.
        done = subprocess.run(
            host.argv("sh", "-c", "echo 1000 > /proc/sys/net/ipv4/tcp_rto_max_ms"),
            capture_output=True, timeout=30, check=False,
        )  # fmt: skip
        return done.returncode == 0

    def cut(self, host: Host) -> None:
        """Pull the host's cable: nothing reaches it, nothing it sends leaves."""
        ip("-n", self.switch, "link", "set", host.port, "down")

    def heal(self, host: Host) -> None:
        """Plug the cable back in."""
        ip("-n", self.switch, "link", "set", host.port, "up")

    def close(self) -> None:
        """Delete every namespace this network created (processes still inside are killed); idempotent."""
        errors = []
        for name in reversed(self._created):
            try:
                delete_namespace(name)
            except Exception as err:  # go on with the others, report at the end
                errors.append(f"{name}: {err}")
        self._created.clear()
        self.hosts.clear()
        if errors:
            raise RuntimeError(f"network namespaces not deleted: {errors}")
