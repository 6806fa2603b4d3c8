"""Keeping the launcher's etcd child serving: restart it when it exits, clear a NOSPACE alarm.

Every role of ``strata standalone`` keeps its metadata and its session in the
one embedded etcd. etcd exits when it cannot write (a full disk makes it fail
a commit and stop), and it refuses every write while its ``NOSPACE`` alarm is
raised (its database reached its quota). Neither heals on its own, so the
launcher calls :meth:`EtcdSupervisor.check` from its loop:

* etcd exited: start it again on the same data directory and ports, at once
  the first time and then with a backoff (0.5 s doubling to 8 s) while it keeps
  failing to start or exits again within 30 s (say the disk is still full);
  after 30 s of serving, the next exit is restarted at once again. The roles reconnect to the same address; their sessions
  survive an outage shorter than their TTL, and a longer one is survived by
  registering again (``common/etcd/session.py``).
* ``NOSPACE`` alarm raised (checked after each start and every 5 s): compact
  the history up to the current revision, defragment, then disarm the alarm,
  as the etcd maintenance guide prescribes. If the live data alone is over
  the quota, the alarm comes back; that needs an operator (a larger
  ``--quota-backend-bytes``).

Blocking: ``check`` runs in the launcher's synchronous loop and may take up to
the start timeout of etcd (10 s).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import aetcd
import structlog
from aetcd import rpc

from common.etcd.process import EtcdExited, EtcdProcess

log = structlog.get_logger().bind(component="etcd-supervisor")

_BACKOFF_INITIAL = 0.5
_BACKOFF_MAX = 8.0
_STABLE_SECONDS = 30.0  # up this long: the next failure starts the backoff over
_ALARM_CHECK_SECONDS = 5.0
_START_TIMEOUT = 10.0
_CALL_TIMEOUT = 10.0


class EtcdSupervisor:
    """Restarts one :class:`EtcdProcess` when it exits and clears its ``NOSPACE`` alarm."""

    def __init__(self, etcd: EtcdProcess, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._etcd = etcd
        self._clock = clock
        self._down_since: float | None = None
        self._restart_at = 0.0
        self._delay = 0.0  # before the next restart attempt
        self._up_since = clock()
        self._alarm_check_at = 0.0
        self.restarts = 0
        self.alarms_cleared = 0

    def check(self) -> None:
        """Restart etcd if it exited (when its backoff allows), or clear a ``NOSPACE`` alarm."""
        now = self._clock()
        code = self._etcd.exit_code()
        if code is None:
            if now >= self._alarm_check_at:
                self._alarm_check_at = now + _ALARM_CHECK_SECONDS
                self._clear_alarm()
            return
        if self._down_since is None:
            self._down_since = now
            if now - self._up_since >= _STABLE_SECONDS:
                self._delay = 0.0
            self._schedule(now)
            log.error(
                "etcd exited", exit_code=code, restart_in=self._restart_at - now, data_dir=str(self._etcd.data_dir)
            )
        if now < self._restart_at:
            return
        try:
            self._etcd.start(timeout=_START_TIMEOUT, attempts=1)
        except (EtcdExited, TimeoutError, OSError) as err:
            self._schedule(self._clock())
            log.warning("etcd restart failed", error=str(err), retry_in=self._restart_at - self._clock())
            return
        up = self._clock()
        self.restarts += 1
        log.warning(
            "etcd restarted",
            down_seconds=round(up - self._down_since, 3),
            restarts=self.restarts,
            endpoint=self._etcd.endpoint,
            pid=self._etcd.pid,
        )
        self._down_since = None
        self._up_since = up
        self._alarm_check_at = up + _ALARM_CHECK_SECONDS
        self._clear_alarm()

    def _schedule(self, now: float) -> None:
        """The next attempt after the current delay; the delay after it doubles (0, 0.5, 1, ... 8 s)."""
        self._restart_at = now + self._delay
        self._delay = min(max(self._delay * 2, _BACKOFF_INITIAL), _BACKOFF_MAX)

    def _clear_alarm(self) -> None:
        try:
            cleared = asyncio.run(clear_nospace_alarm(self._etcd.endpoint))
        except Exception as err:  # etcd busy or going away: the next check tries again
            log.warning("etcd alarm check failed", error=str(err) or type(err).__name__)
            return
        if cleared:
            self.alarms_cleared += 1


async def clear_nospace_alarm(endpoint: str) -> bool:
    """If etcd at ``endpoint`` has a ``NOSPACE`` alarm: compact, defragment, disarm. True if it had one."""
    host, _, port = endpoint.rpartition(":")
    async with aetcd.Client(host=host or "127.0.0.1", port=int(port), timeout=_CALL_TIMEOUT) as client:
        alarms = [a async for a in client.list_alarms()]
        if not any(a.alarm_type == rpc.NOSPACE for a in alarms):
            return False
        status = await client.maintenancestub.Status(rpc.StatusRequest(), timeout=_CALL_TIMEOUT)
        revision = status.header.revision
        log.warning("etcd space alarm raised, compacting", revision=revision, db_bytes=status.dbSize)
        try:
            await client.compact(revision, physical=True)
        except aetcd.exceptions.RevisionCompactedError as err:  # already compacted to there: defragment anyway
            log.info("etcd compaction skipped", error=str(err))
        await client.defragment()
        await client.disarm_alarm()
        after = await client.maintenancestub.Status(rpc.StatusRequest(), timeout=_CALL_TIMEOUT)
        log.warning("etcd space alarm cleared", db_bytes=after.dbSize, revision=revision)
        return True
