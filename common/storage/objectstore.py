"""Object storage: one root inside a ``pyarrow.fs`` filesystem (a local directory or an S3 prefix).

Promises:

* every path is relative to the root, uses ``/``, and has no empty, ``.``-prefixed
  or ``..`` segment; anything else is refused with ``InvalidArgument``;
* a write is atomic: a reader sees either nothing (or the previous object) or the
  whole new object under its final name, never a prefix of it. On local disk the
  bytes go to a hidden temporary file in the same directory, are fsynced, renamed
  over the final name, and the directory is fsynced. On S3 the object is uploaded
  in one call after it is fully encoded in memory; S3 makes a PUT (or a completed
  multipart upload) visible all at once;
* reading a missing object raises ``ObjectNotFound``, which names the object.

Every method blocks (pyarrow does the I/O); call them from a worker thread.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from common.errors import InvalidArgument
from common.storage.errors import ObjectNotFound

#: Hidden temporary files of in-progress local writes look like ``.<name>.<random>.tmp``.
_TMP_PREFIX = "."
_TMP_SUFFIX = ".tmp"

#: Parquet codec of every file Strata writes (readable by Spark >= 3.2 and any parquet-mr >= 1.12).
PARQUET_COMPRESSION = "zstd"


@dataclass(frozen=True, slots=True, kw_only=True)
class FileEntry:
    """One object found by ``ObjectStore.list``."""

    path: str  # relative to the store root, ``/``-separated
    size: int  # bytes
    mtime: datetime  # last modification, timezone-aware UTC


def check_rel_path(rel: str, *, allow_root: bool = False) -> str:
    """Validate a store-relative path and return it without a trailing ``/``.

    ``allow_root`` accepts ``""`` (the root itself), which only prefixes may name.
    """
    if not isinstance(rel, str):
        raise InvalidArgument(f"object path must be a string, got {type(rel).__name__}")
    trimmed = rel[:-1] if rel.endswith("/") and rel != "/" else rel
    if trimmed == "":
        if allow_root:
            return ""
        raise InvalidArgument("object path must not be empty")
    if trimmed.startswith("/"):
        raise InvalidArgument(f"object path must be relative to the store root, got {rel!r}")
    if "\\" in trimmed or "\x00" in trimmed:
        raise InvalidArgument(f"object path must use '/' and no NUL, got {rel!r}")
    for segment in trimmed.split("/"):
        if segment == "":
            raise InvalidArgument(f"object path has an empty segment: {rel!r}")
        if segment.startswith("."):
            # Covers '.', '..' and hidden names, which are reserved for in-progress local writes.
            raise InvalidArgument(f"object path segments must not start with '.': {rel!r}")
    return trimmed


class ObjectStore:
    """A root directory in a local or S3 filesystem; see the module docstring for the promises."""

    def __init__(self, *, filesystem: pafs.FileSystem, root: str, uri: str) -> None:
        """Wrap ``root`` (a path in ``filesystem``'s own syntax, no trailing ``/``).

        Prefer ``ObjectStore.from_uri``.
        """
        self._fs = filesystem
        self._root = root.rstrip("/")
        self._uri = uri
        self._local = isinstance(filesystem, pafs.LocalFileSystem)

    @staticmethod
    def from_uri(uri: str, *, env: Mapping[str, str] | None = None) -> ObjectStore:
        """Open ``file:///ABSOLUTE/PATH`` (creating the directory) or ``s3://BUCKET[/PREFIX]``.

        S3 settings come from ``env`` (default ``os.environ``): ``AWS_ACCESS_KEY_ID`` and
        ``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``), ``AWS_REGION`` or
        ``AWS_DEFAULT_REGION``, and ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` for an
        S3-compatible server such as MinIO (``http://host:port``). pyarrow does not read the
        endpoint variables itself, so they are passed explicitly. Without keys the AWS SDK's
        default credential chain applies. Does not contact S3.

        Raises:
            InvalidArgument: the URI or an endpoint variable is malformed.
        """
        if not isinstance(uri, str) or not uri:
            raise InvalidArgument("storage URI must be a non-empty string")
        parts = urlsplit(uri)
        if parts.query or parts.fragment:
            raise InvalidArgument(f"storage URI must not have a query or fragment, got {uri!r}")
        if parts.scheme == "file":
            return _local_store(uri, parts.netloc, parts.path)
        if parts.scheme == "s3":
            return _s3_store(uri, parts.netloc, parts.path, os.environ if env is None else env)
        raise InvalidArgument(f"storage URI must be file:///ABSOLUTE/PATH or s3://BUCKET[/PREFIX], got {uri!r}")

    @property
    def uri(self) -> str:
        """The URI this store was opened with."""
        return self._uri

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The underlying pyarrow filesystem (for readers that need ranged access)."""
        return self._fs

    def full_path(self, rel: str) -> str:
        """``rel`` in the filesystem's own syntax (``/abs/dir/rel`` or ``bucket/prefix/rel``)."""
        return f"{self._root}/{check_rel_path(rel)}"

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Store ``data`` under ``rel`` atomically, replacing any previous object."""
        path = self.full_path(rel)
        payload = bytes(data)
        if self._local:
            _atomic_local_write(path, lambda f: f.write(payload))
        else:
            self._upload(path, payload)

    def write_parquet(
        self,
        rel: str,
        table: pa.Table,
        *,
        row_group_size: int | None = None,
        use_dictionary: bool = True,
    ) -> None:
        """Encode ``table`` as one Parquet file (zstd, Arrow schema stored) and store it atomically."""
        path = self.full_path(rel)

        def encode(sink: BinaryIO | pa.NativeFile) -> None:
            pq.write_table(
                table,
                sink,
                compression=PARQUET_COMPRESSION,
                row_group_size=row_group_size,
                use_dictionary=use_dictionary,
            )

        if self._local:
            _atomic_local_write(path, encode)
            return
        buffer = pa.BufferOutputStream()
        encode(buffer)
        self._upload(path, buffer.getvalue())

    def read_bytes(self, rel: str) -> bytes:
        """The whole object. Raises ``ObjectNotFound`` if it does not exist."""
        path = self.full_path(rel)
        try:
            with self._fs.open_input_stream(path) as f:
                return bytes(f.read())
        except FileNotFoundError as err:
            raise self._not_found(rel) from err

    def read_parquet(self, rel: str, columns: list[str] | None = None) -> pa.Table:
        """Read a Parquet object (only ``columns`` if given). Raises ``ObjectNotFound``."""
        path = self.full_path(rel)
        try:
            f = self._fs.open_input_file(path)
        except FileNotFoundError as err:
            raise self._not_found(rel) from err
        with f:
            return pq.read_table(f, columns=columns)

    def read_parquet_schema(self, rel: str) -> pa.Schema:
        """The Arrow schema of a Parquet object (its footer only). Raises ``ObjectNotFound``."""
        path = self.full_path(rel)
        try:
            f = self._fs.open_input_file(path)
        except FileNotFoundError as err:
            raise self._not_found(rel) from err
        with f:
            return pq.read_schema(f)

    def exists(self, rel: str) -> bool:
        """Whether an object (not a directory) is stored under ``rel``."""
        return bool(self._fs.get_file_info(self.full_path(rel)).type == pafs.FileType.File)

    def delete(self, rel: str) -> None:
        """Remove one object; a missing object is not an error."""
        path = self.full_path(rel)
        with suppress(FileNotFoundError):
            self._fs.delete_file(path)

    def delete_prefix(self, rel_prefix: str) -> None:
        """Remove every object under the directory ``rel_prefix`` (``""`` = the whole root).

        The prefix is a directory: ``a/b`` removes ``a/b/...``, never ``a/bc``. Also removes
        temporary files that a crashed local write left behind. Not atomic: a concurrent
        lister may see some objects gone and others not yet.
        """
        prefix = check_rel_path(rel_prefix, allow_root=True)
        if prefix == "":
            self._fs.delete_dir_contents(self._root, missing_dir_ok=True)
            return
        path = f"{self._root}/{prefix}"
        if self._fs.get_file_info(path).type == pafs.FileType.Directory:
            with suppress(FileNotFoundError):
                self._fs.delete_dir(path)

    def list(self, rel_prefix: str) -> list[FileEntry]:
        """Every object under the directory ``rel_prefix``, recursively, sorted by path.

        Files only; a missing prefix gives ``[]``; temporary files of in-progress local
        writes are never listed.
        """
        prefix = check_rel_path(rel_prefix, allow_root=True)
        path = f"{self._root}/{prefix}" if prefix else self._root
        if self._fs.get_file_info(path).type != pafs.FileType.Directory:
            return []
        selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
        strip = len(self._root) + 1
        entries = []
        for info in self._fs.get_file_info(selector):
            if info.type != pafs.FileType.File or _is_temporary(info.base_name):
                continue
            entries.append(FileEntry(path=info.path[strip:], size=int(info.size or 0), mtime=self._mtime(info)))
        entries.sort(key=lambda e: e.path)
        return entries

    def __repr__(self) -> str:
        return f"ObjectStore({self._uri!r})"

    def _upload(self, path: str, payload: bytes | pa.Buffer) -> None:
        # One write of the complete object, then close: the upload is completed only by
        # close(), and a failed part makes close() fail, so no partial object appears.
        with self._fs.open_output_stream(path) as out:
            out.write(payload)

    def _not_found(self, rel: str) -> ObjectNotFound:
        return ObjectNotFound(f"object {rel!r} does not exist in {self._uri}")

    def _mtime(self, info: pafs.FileInfo) -> datetime:
        mtime = info.mtime
        if mtime is None:
            mtime = self._fs.get_file_info(info.path).mtime
        if mtime is None:
            return datetime.fromtimestamp(0, UTC)
        return mtime if mtime.tzinfo is not None else mtime.replace(tzinfo=UTC)


def _local_store(uri: str, netloc: str, path: str) -> ObjectStore:
    if netloc not in ("", "localhost") or not path.startswith("/"):
        raise InvalidArgument(f"storage file URI must be file:///ABSOLUTE/PATH, got {uri!r}")
    if any(segment in (".", "..") for segment in path.split("/")):
        raise InvalidArgument(f"storage file URI must not contain '.' or '..' segments, got {uri!r}")
    root = os.path.normpath(path)
    try:
        os.makedirs(root, exist_ok=True)
    except OSError as err:
        raise InvalidArgument(f"cannot create the storage directory {root}: {err.strerror}") from err
    if not os.path.isdir(root):
        raise InvalidArgument(f"storage path {root} is not a directory")
    return ObjectStore(filesystem=pafs.LocalFileSystem(), root=root, uri=uri)


def _s3_store(uri: str, bucket: str, path: str, env: Mapping[str, str]) -> ObjectStore:
    if not bucket or "@" in bucket or ":" in bucket:
        raise InvalidArgument(f"storage s3 URI must be s3://BUCKET[/PREFIX], got {uri!r}")
    prefix = path.strip("/")
    if prefix:
        try:
            prefix = check_rel_path(prefix)
        except InvalidArgument as err:
            raise InvalidArgument(f"storage s3 URI has a bad prefix: {err.message}") from None
    options: dict[str, object] = {}
    key_id, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if bool(key_id) != bool(secret):
        raise InvalidArgument("set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither")
    if key_id and secret:
        options["access_key"] = key_id
        options["secret_key"] = secret
        if env.get("AWS_SESSION_TOKEN"):
            options["session_token"] = env["AWS_SESSION_TOKEN"]
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        scheme, host = _parse_endpoint(endpoint)
        options["scheme"] = scheme
        options["endpoint_override"] = host
    filesystem = pafs.S3FileSystem(**options)
    root = f"{bucket}/{prefix}" if prefix else bucket
    return ObjectStore(filesystem=filesystem, root=root, uri=uri)


def _parse_endpoint(endpoint: str) -> tuple[str, str]:
    """``http://host:port`` -> ``("http", "host:port")``; a bare ``host:port`` means https."""
    parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        raise InvalidArgument(f"AWS endpoint URL must be http(s)://HOST[:PORT], got {endpoint!r}")
    if parts.query or parts.fragment or parts.username:
        raise InvalidArgument(f"AWS endpoint URL must be http(s)://HOST[:PORT], got {endpoint!r}")
    return parts.scheme, parts.netloc


def _is_temporary(base_name: str) -> bool:
    return base_name.startswith(_TMP_PREFIX) and base_name.endswith(_TMP_SUFFIX)


def _atomic_local_write(path: str, fill: Callable[[BinaryIO], object]) -> None:
    """Write through ``fill`` into a temporary sibling, fsync, rename over ``path``, fsync the directory."""
    directory, name = os.path.split(path)
    created = _make_dirs(directory)
    fd, tmp = tempfile.mkstemp(prefix=f"{_TMP_PREFIX}{name}.", suffix=_TMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            fill(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)
    # New directories are durable only once their parents' entries are.
    for new_dir in created:
        _fsync_dir(os.path.dirname(new_dir))


def _make_dirs(directory: str) -> list[str]:
    """Create ``directory`` and missing parents; returns the ones created, outermost first."""
    missing = []
    current = directory
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    missing.reverse()
    for d in missing:
        with suppress(FileExistsError):
            os.mkdir(d)
    return missing


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
