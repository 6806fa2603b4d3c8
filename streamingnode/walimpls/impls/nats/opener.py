"""``NatsWALOpener``: opens channels as JetStream streams on a NATS cluster.

``open(channel, term)``:

1. make sure the channel's stream exists (file storage, ``replicas`` copies);
2. read the newest term marker: a newer term refuses the open
   (``ChannelFenced``); the same term asks the owner subject whether an owner
   of that term is still alive, and refuses if so;
3. answer on the owner subject from now on, and append this owner's marker
   with ``Nats-Expected-Last-Subject-Sequence`` set to the marker read in 2,
   so that of two concurrent openers only one gets its marker in (the other
   starts again at 2). Data appends never block a marker: the check is on
   the term subject only;
4. read the first and the last frame (where the log starts, its newest id),
   and hand a :class:`NatsWAL` to the caller.

From step 3 on, every append of an older owner expects a stream sequence
below this marker and is refused by JetStream: the old owner is fenced even
if it is frozen and wakes up later. The opener owns the NATS connection
(connected at the first ``open``) and the WALs it opened, until its own
``close``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import DiscardPolicy, Header, RetentionPolicy, StorageType, StreamConfig
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, NotFoundError

from common.errors import ChannelFenced, ErrorCode, InvalidArgument, StrataError, WALClosed

from .layout import ChannelNames, Frame, TermMarker, check_token, frame_header
from .nats_wal import NatsWAL, OwnerState, answer_probe
from .natsutil import settled
from .publish import WRONG_LAST_SEQUENCE

MAX_REPLICAS = 5  # JetStream's limit
_STREAM_IN_USE = 10058  # "stream name already in use with a different configuration"
_PROBE_TIMEOUT = 0.5
_PROBE_ATTEMPTS = 3
_TAKE_ATTEMPTS = 20
_API_TIMEOUT = 5.0  # seconds for a JetStream API request (stream info, message get, purge, marker)
_DUPLICATE_WINDOW = 120.0  # seconds; retries of an append end well before


def parse_servers(servers: str | Sequence[str]) -> tuple[str, ...]:
    """``"nats://h1:4222,h2:4222"`` or a list of URLs -> normalised URLs; ``InvalidArgument`` if bad."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out = []
    for item in items:
        url = str(item).strip()
        if not url:
            continue
        if "://" not in url:
            url = f"nats://{url}"
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.scheme not in ("nats", "tls") or not parts.hostname or port is None:
            raise InvalidArgument(f"nats server must be nats://HOST:PORT (or tls://), got {item!r}")
        out.append(url)
    if not out:
        raise InvalidArgument("the nats wal backend needs at least one server URL")
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class NatsWALOptions:
    """Options of the ``nats`` backend.

    Attributes:
        servers: NATS URLs of the cluster (any members; the client learns the rest).
        replicas: copies JetStream keeps of each channel's stream (1 to 5); an
            append is acknowledged once a majority stored it. Applies when a
            stream is created.
        stream_prefix: first token of stream names and subjects; clusters that
            share a NATS cluster need different prefixes (or cluster names).
        ack_timeout: seconds to wait for the acks of one published run before
            retrying the rest.
        append_timeout: an append still not acknowledged after this many seconds
            of retries fails, and with it the WAL (it no longer knows where its
            log ends; the streaming node reopens the channel).
        connect_timeout: seconds for the first connection and for each ``open``.
    """

    servers: tuple[str, ...]
    replicas: int = 1
    stream_prefix: str = "strata"
    ack_timeout: float = 2.0
    append_timeout: float = 30.0
    connect_timeout: float = 10.0

    def validate(self) -> None:
        parse_servers(self.servers)
        if (
            isinstance(self.replicas, bool)
            or not isinstance(self.replicas, int)
            or not 1 <= self.replicas <= MAX_REPLICAS
        ):
            raise InvalidArgument(f"replicas must be 1 to {MAX_REPLICAS}, got {self.replicas!r}")
        check_token("stream prefix", self.stream_prefix, 64)
        for name in ("ack_timeout", "append_timeout", "connect_timeout"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value <= 0:
                raise InvalidArgument(f"{name} must be a positive number of seconds, got {value!r}")
        if self.append_timeout >= _DUPLICATE_WINDOW:
            raise InvalidArgument(f"append_timeout must be below {_DUPLICATE_WINDOW:.0f} s (the duplicate window)")


def _transient(err: BaseException) -> bool:
    """Server or connection trouble worth another try (a cluster electing a leader answers 503)."""
    if isinstance(err, APIError):
        return err.code in (None, 408, 503, 504)
    return isinstance(err, NatsError | OSError | asyncio.TimeoutError)


class NatsWALOpener:
    """A :class:`~streamingnode.walimpls.wal.WALOpener` for the ``nats`` backend."""

    def __init__(self, options: NatsWALOptions) -> None:
        options.validate()
        self._options = options
        self._servers = parse_servers(options.servers)
        self._nc: NATS | None = None
        self._connect_lock = asyncio.Lock()
        self._wals: list[NatsWAL] = []
        self._closed = False
        self._log = structlog.get_logger().bind(component="wal-nats")

    async def open(self, channel: str, term: int) -> NatsWAL:
        """See :meth:`WALOpener.open`."""
        if self._closed:
            raise WALClosed("nats wal opener is closed")
        names = ChannelNames.of(self._options.stream_prefix, channel)
        if isinstance(term, bool) or not isinstance(term, int) or term < 0:
            raise InvalidArgument(f"term must be a non-negative integer, got {term!r}")
        for wal in self._wals:
            if wal.channel == channel and not wal.is_closed:
                raise ChannelFenced(f"channel {channel} is owned by term {wal.term}, cannot open with term {term}")
        nc = await self._connection()
        js = nc.jetstream(timeout=_API_TIMEOUT)
        log = self._log.bind(pchannel=channel, term=term)
        owner = uuid.uuid4().hex
        deadline = time.monotonic() + self._options.connect_timeout
        responder = _Responder()
        try:
            while True:
                try:
                    await self._ensure_stream(js, names, log)
                    marker_seq = await self._take(nc, js, names, term, owner, responder)
                    state = await self._recover(js, names, owner, marker_seq)
                    break
                except (ChannelFenced, InvalidArgument):
                    raise
                except Exception as err:
                    if not _transient(err) or time.monotonic() > deadline:
                        raise StrataError(f"cannot open wal {channel} on nats: {err!r}", ErrorCode.UNAVAILABLE) from err
                    log.warning("open failed, retrying", error=repr(err))
                    await asyncio.sleep(0.2)
            wal = NatsWAL(
                channel=channel,
                term=term,
                nc=nc,
                jsm=js,
                names=names,
                state=state,
                responder=responder.take(),
                ack_timeout=self._options.ack_timeout,
                append_timeout=self._options.append_timeout,
            )
            await wal.start()
        except BaseException:
            await responder.stop(nc)
            raise
        self._wals = [w for w in self._wals if not w.is_closed]
        self._wals.append(wal)
        log.info(
            "wal opened",
            owner=owner,
            marker_seq=state.marker_seq,
            first_id=None if state.first is None else state.first.first_id,
            last_id=None if state.last is None else state.last.last_id,
        )
        return wal

    async def close(self) -> None:
        """Close every WAL still open, then the connection; later ``open`` calls fail. Idempotent."""
        self._closed = True
        wals, self._wals = self._wals, []
        async with asyncio.TaskGroup() as tg:
            for wal in wals:
                tg.create_task(wal.close())
        async with self._connect_lock:
            nc, self._nc = self._nc, None
        if nc is not None and not nc.is_closed:
            await nc.close()

    # -- internals ------------------------------------------------------------

    async def _connection(self) -> NATS:
        async with self._connect_lock:
            if self._closed:
                raise WALClosed("nats wal opener is closed")
            if self._nc is None:
                self._nc = await self._connect()
            return self._nc

    async def _connect(self) -> NATS:
        nc = NATS()
        log = self._log

        async def on_error(err: Exception) -> None:
            log.warning("nats connection error", error=repr(err))

        async def on_disconnect() -> None:
            if self._closed:
                log.info("nats disconnected", reason="opener closed")
            else:
                log.warning("nats disconnected")

        async def on_reconnect() -> None:
            log.info("nats reconnected", server=str(nc.connected_url.netloc if nc.connected_url else None))

        try:
            async with asyncio.timeout(self._options.connect_timeout):
                await nc.connect(
                    servers=list(self._servers),
                    name="strata-wal",
                    connect_timeout=2,
                    reconnect_time_wait=0.25,  # type: ignore[arg-type]  # seconds; annotated int upstream
                    max_reconnect_attempts=-1,
                    error_cb=on_error,
                    disconnected_cb=on_disconnect,
                    reconnected_cb=on_reconnect,
                )
        except (TimeoutError, NatsError, OSError) as err:
            with contextlib.suppress(Exception):
                await nc.close()
            raise StrataError(
                f"cannot connect to nats servers {', '.join(self._servers)}: {err!r}", ErrorCode.UNAVAILABLE
            ) from err
        log.info("nats connected", servers=list(self._servers), max_payload=nc.max_payload)
        return nc

    async def _ensure_stream(self, js: JetStreamContext, names: ChannelNames, log: structlog.BoundLogger) -> None:
        subjects = [names.data_subject, names.term_subject]
        try:
            info = await settled(js.stream_info(names.stream))
        except NotFoundError:
            config = StreamConfig(
                name=names.stream,
                subjects=subjects,
                storage=StorageType.FILE,
                num_replicas=self._options.replicas,
                retention=RetentionPolicy.LIMITS,
                discard=DiscardPolicy.OLD,
                duplicate_window=_DUPLICATE_WINDOW,
                deny_delete=True,
            )
            try:
                await settled(js.add_stream(config))
            except APIError as err:
                if err.err_code != _STREAM_IN_USE:
                    raise
            else:
                log.info("stream created", stream=names.stream, replicas=self._options.replicas)
                return
            info = await settled(js.stream_info(names.stream))
        if info.config.subjects is None or sorted(info.config.subjects) != sorted(subjects):
            raise StrataError(
                f"nats stream {names.stream} exists with subjects {info.config.subjects}, expected {subjects}"
            )
        if info.config.num_replicas != self._options.replicas:
            log.warning("stream replicas differ", stream=names.stream, replicas=info.config.num_replicas,
                        configured=self._options.replicas)  # fmt: skip

    async def _take(
        self,
        nc: NATS,
        js: JetStreamContext,
        names: ChannelNames,
        term: int,
        owner: str,
        responder: _Responder,
    ) -> int:
        """Steps 2 and 3 of the module doc; returns the stream sequence of this owner's marker.

        Safe to call again after a transient error: a marker of this ``owner``
        that made it in is found and kept.
        """
        for _ in range(_TAKE_ATTEMPTS):
            last = await _last_marker(js, names)
            if last is not None:
                last_seq, recorded = last
                if recorded.owner == owner:  # an earlier attempt got it in; its answer was lost
                    return last_seq
                if recorded.term > term:
                    raise ChannelFenced(
                        f"channel {names.stream} was owned by term {recorded.term}, term {term} is stale"
                    )
                if recorded.term == term:
                    await responder.stop(nc)  # never probe ourselves
                    if await self._owner_alive(nc, names, term):
                        raise ChannelFenced(
                            f"channel {names.stream} is owned by term {term}, cannot open with term {term}"
                        )
            await responder.start(nc, names.owner_subject(term), term, owner)
            marker = TermMarker(term=term, owner=owner)
            expected = 0 if last is None else last[0]
            try:
                ack = await settled(
                    js.publish(
                        names.term_subject,
                        marker.encode(),
                        headers={Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(expected)},
                    )
                )
            except APIError as err:
                if err.err_code != WRONG_LAST_SEQUENCE:
                    raise
                continue  # another opener got its marker in first: decide again
            return ack.seq
        raise ChannelFenced(f"channel {names.stream}: gave up after {_TAKE_ATTEMPTS} concurrent opens")

    async def _owner_alive(self, nc: NATS, names: ChannelNames, term: int) -> bool:
        """Whether an owner of ``term`` answers (or is subscribed but silent: frozen) on its owner subject."""
        for _ in range(_PROBE_ATTEMPTS):
            try:
                await settled(nc.request(names.owner_subject(term), b"", timeout=_PROBE_TIMEOUT))
                return True
            except NoRespondersError:
                return False
            except NatsTimeout:
                # Frozen, or a dead owner's interest the server has not dropped yet: ask again.
                continue
        return True

    async def _recover(self, js: JetStreamContext, names: ChannelNames, owner: str, marker_seq: int) -> OwnerState:
        """Step 4: the first and the last frame (the log's extent and its newest id)."""
        where = names.stream
        try:
            msg = await settled(js.get_last_msg(names.stream, names.data_subject))
            assert msg.seq is not None
            last: Frame | None = frame_header(msg.headers, msg.seq, f"{where} seq {msg.seq}")
        except NotFoundError:
            last = None
        first: Frame | None = None
        if last is not None:
            msg = await settled(js.get_msg(names.stream, seq=1, subject=names.data_subject, next=True))
            assert msg.seq is not None
            first = frame_header(msg.headers, msg.seq, f"{where} seq {msg.seq}")
        return OwnerState(owner=owner, marker_seq=marker_seq, first=first, last=last)


async def _last_marker(js: JetStreamContext, names: ChannelNames) -> tuple[int, TermMarker] | None:
    try:
        msg = await settled(js.get_last_msg(names.stream, names.term_subject))
    except NotFoundError:
        return None
    assert msg.seq is not None
    return msg.seq, TermMarker.decode(msg.data, f"{names.stream} seq {msg.seq}")


class _Responder:
    """The owner-probe subscription while an ``open`` is under way; the WAL takes it over."""

    def __init__(self) -> None:
        self._sub: Subscription | None = None

    async def start(self, nc: NATS, subject: str, term: int, owner: str) -> None:
        if self._sub is not None:
            return

        async def answer(msg: Msg) -> None:
            await answer_probe(msg, term, owner)

        self._sub = await settled(nc.subscribe(subject, cb=answer))

    async def stop(self, nc: NATS) -> None:
        """Unsubscribe, and make sure the server has dropped the interest before returning."""
        sub, self._sub = self._sub, None
        if sub is None or nc.is_closed:
            return
        with contextlib.suppress(NatsError):
            await settled(sub.unsubscribe())
            await settled(nc.flush(timeout=2))

    def take(self) -> Subscription:
        sub, self._sub = self._sub, None
        assert sub is not None, "the responder subscribes before the marker is written"
        return sub


def nats_opener(
    servers: str | Sequence[str],
    replicas: int = 1,
    stream_prefix: str = "strata",
    ack_timeout: float = 2.0,
    append_timeout: float = 30.0,
    connect_timeout: float = 10.0,
) -> NatsWALOpener:
    """The registry factory of the ``nats`` backend."""
    return NatsWALOpener(
        NatsWALOptions(
            servers=parse_servers(servers),
            replicas=replicas,
            stream_prefix=stream_prefix,
            ack_timeout=ack_timeout,
            append_timeout=append_timeout,
            connect_timeout=connect_timeout,
        )
    )
