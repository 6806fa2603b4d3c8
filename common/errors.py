"""One error hierarchy for every Strata component.

``StrataError`` carries an ``ErrorCode``; ``CODE_TABLE`` maps each code to a
gRPC status (internal edges) and to a Milvus error code (the proxy's answers
to pymilvus). Domain code raises these; service edges translate them.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from enum import IntEnum

import grpc


class ErrorCode(IntEnum):
    OK = 0
    UNEXPECTED = 1
    INVALID_ARGUMENT = 2
    COLLECTION_NOT_FOUND = 3
    COLLECTION_ALREADY_EXISTS = 4
    COLLECTION_NOT_LOADED = 5
    FIELD_NOT_FOUND = 6
    ILLEGAL_FILTER = 7
    INDEX_NOT_FOUND = 8
    NOT_SUPPORTED = 9
    CHANNEL_NOT_EXIST = 10
    UNMATCHED_CHANNEL_TERM = 11
    CHANNEL_FENCED = 12
    IGNORED_OPERATION = 13
    WAL_CLOSED = 14
    TIMEOUT = 15
    NOT_READY = 16
    NODE_NOT_FOUND = 17
    UNAVAILABLE = 18
    POSITION_TRUNCATED = 19
    SEGMENT_NOT_FOUND = 20
    PARTITION_NOT_FOUND = 21
    PARTITION_NOT_LOADED = 22
    SEGMENT_LOAD_FAILED = 23
    INDEX_NOT_SUPPORTED = 24
    DISK_QUOTA_EXHAUSTED = 25
    IO_FAILED = 26
    LIMIT_EXCEEDED = 27
    INDEX_DUPLICATE = 40
    COLLECTION_LOADED = 41
    REFUSED = 42
    INVALID_PARTITION_NAME = 28
    FIELD_NAME_INVALID = 29
    DATABASE_NOT_FOUND = 30
    ALIAS_NOT_FOUND = 31
    RESOURCE_GROUP_NOT_FOUND = 50
    RESOURCE_GROUP_ALREADY_EXIST = 51
    SERVICE_UNAVAILABLE = 52
    COLLECTION_NOT_FULLY_LOADED = 53
    METRIC_NOT_FOUND = 54
    SCHEMA_MISMATCH = 43
    DATABASE_INVALID_NAME = 32
    DATABASE_NUM_LIMIT_EXCEEDED = 33
    COLLECTION_NUM_LIMIT_EXCEEDED = 34
    FORCE_DENIED = 35
    PRIVILEGE_NOT_PERMITTED = 55
    NOT_AUTHENTICATED = 56


@dataclass(frozen=True, slots=True)
class CodeInfo:
    grpc: grpc.StatusCode
    # milvus-proto common.ErrorCode (legacy) and the 2.x numeric error code.
    milvus_legacy: int
    milvus_code: int


# Milvus 2.x numeric codes are from pkg/util/merr/errors.go.
CODE_TABLE: dict[ErrorCode, CodeInfo] = {
    ErrorCode.OK: CodeInfo(grpc.StatusCode.OK, 0, 0),
    ErrorCode.UNEXPECTED: CodeInfo(grpc.StatusCode.INTERNAL, 1, 5),
    ErrorCode.INVALID_ARGUMENT: CodeInfo(grpc.StatusCode.INVALID_ARGUMENT, 5, 1100),
    ErrorCode.COLLECTION_NOT_FOUND: CodeInfo(grpc.StatusCode.NOT_FOUND, 4, 100),
    ErrorCode.COLLECTION_ALREADY_EXISTS: CodeInfo(grpc.StatusCode.ALREADY_EXISTS, 1, 1100),
    ErrorCode.COLLECTION_NOT_LOADED: CodeInfo(grpc.StatusCode.FAILED_PRECONDITION, 1, 101),
    ErrorCode.FIELD_NOT_FOUND: CodeInfo(grpc.StatusCode.INVALID_ARGUMENT, 5, 1100),
    ErrorCode.ILLEGAL_FILTER: CodeInfo(grpc.StatusCode.INVALID_ARGUMENT, 5, 1100),
    ErrorCode.INDEX_NOT_FOUND: CodeInfo(grpc.StatusCode.NOT_FOUND, 25, 700),
    ErrorCode.NOT_SUPPORTED: CodeInfo(grpc.StatusCode.UNIMPLEMENTED, 1, 6),
    ErrorCode.CHANNEL_NOT_EXIST: CodeInfo(grpc.StatusCode.NOT_FOUND, 1, 500),
    ErrorCode.UNMATCHED_CHANNEL_TERM: CodeInfo(grpc.StatusCode.FAILED_PRECONDITION, 1, 500),
    ErrorCode.CHANNEL_FENCED: CodeInfo(grpc.StatusCode.FAILED_PRECONDITION, 1, 500),
    ErrorCode.IGNORED_OPERATION: CodeInfo(grpc.StatusCode.ABORTED, 1, 5),
    ErrorCode.WAL_CLOSED: CodeInfo(grpc.StatusCode.UNAVAILABLE, 1, 500),
    ErrorCode.TIMEOUT: CodeInfo(grpc.StatusCode.DEADLINE_EXCEEDED, 1, 5),
    ErrorCode.NOT_READY: CodeInfo(grpc.StatusCode.UNAVAILABLE, 1, 1),
    ErrorCode.NODE_NOT_FOUND: CodeInfo(grpc.StatusCode.UNAVAILABLE, 1, 901),
    ErrorCode.UNAVAILABLE: CodeInfo(grpc.StatusCode.UNAVAILABLE, 1, 1),
    ErrorCode.POSITION_TRUNCATED: CodeInfo(grpc.StatusCode.OUT_OF_RANGE, 1, 500),
    ErrorCode.SEGMENT_NOT_FOUND: CodeInfo(grpc.StatusCode.NOT_FOUND, 1, 600),
    # Milvus' old code for a missing partition is MetaFailed (15).
    ErrorCode.PARTITION_NOT_FOUND: CodeInfo(grpc.StatusCode.NOT_FOUND, 15, 200),
    ErrorCode.PARTITION_NOT_LOADED: CodeInfo(grpc.StatusCode.FAILED_PRECONDITION, 1, 201),
    ErrorCode.SEGMENT_LOAD_FAILED: CodeInfo(grpc.StatusCode.UNAVAILABLE, 1, 604),
    ErrorCode.INDEX_NOT_SUPPORTED: CodeInfo(grpc.StatusCode.INVALID_ARGUMENT, 1, 701),
    # commonpb.ErrorCode_DiskQuotaExhausted (54) and merr.ErrServiceDiskLimitExceeded (7), which
    # Milvus converts into each other.
    ErrorCode.DISK_QUOTA_EXHAUSTED: CodeInfo(grpc.StatusCode.RESOURCE_EXHAUSTED, 54, 7),
    # merr.ErrIoFailed.
    ErrorCode.IO_FAILED: CodeInfo(grpc.StatusCode.UNAVAILABLE, 1, 1001),
    # A request over one of the proxy's limits (maxOutputSize): Milvus answers these with a plain
    # error, which its status table makes UnexpectedError / 65535.
    ErrorCode.LIMIT_EXCEEDED: CodeInfo(grpc.StatusCode.RESOURCE_EXHAUSTED, 1, 65535),
    # merr.ErrIndexDuplicate: an index name that matches more than one index.
    ErrorCode.INDEX_DUPLICATE: CodeInfo(grpc.StatusCode.FAILED_PRECONDITION, 1, 702),
    # merr.ErrCollectionLoaded: a change Milvus allows on a released collection only.
    ErrorCode.COLLECTION_LOADED: CodeInfo(grpc.StatusCode.FAILED_PRECONDITION, 1, 104),
    # A refusal Milvus answers with a plain error (no merr code): UnexpectedError / 65535.
    ErrorCode.REFUSED: CodeInfo(grpc.StatusCode.FAILED_PRECONDITION, 1, 65535),
    # Milvus' validatePartitionTag returns plain errors, which its status table makes 65535 too.
    ErrorCode.INVALID_PARTITION_NAME: CodeInfo(grpc.StatusCode.INVALID_ARGUMENT, 1, 65535),
    # merr.ErrFieldInvalidName, ErrDatabaseNotFound, ErrAliasNotFound (no old code of their own).
    ErrorCode.FIELD_NAME_INVALID: CodeInfo(grpc.StatusCode.INVALID_ARGUMENT, 1, 1701),
    ErrorCode.DATABASE_NOT_FOUND: CodeInfo(grpc.StatusCode.NOT_FOUND, 1, 800),
    ErrorCode.ALIAS_NOT_FOUND: CodeInfo(grpc.StatusCode.NOT_FOUND, 1, 1600),
    # merr.ErrResourceGroupNotFound, ErrResourceGroupAlreadyExist (resource groups: common/resource_groups.py).
    ErrorCode.RESOURCE_GROUP_NOT_FOUND: CodeInfo(grpc.StatusCode.NOT_FOUND, 1, 300),
    ErrorCode.RESOURCE_GROUP_ALREADY_EXIST: CodeInfo(grpc.StatusCode.ALREADY_EXISTS, 1, 301),
    # merr.ErrServiceUnavailable: what Milvus answers for the calls it deprecated or never implemented
    # (CalcDistance, ListIndexedSegment, DescribeSegmentIndexData); its status is marked retriable.
    ErrorCode.SERVICE_UNAVAILABLE: CodeInfo(grpc.StatusCode.UNAVAILABLE, 1, 2),
    # merr.ErrCollectionNotFullyLoaded: a collection still loading (LoadBalance).
    ErrorCode.COLLECTION_NOT_FULLY_LOADED: CodeInfo(grpc.StatusCode.FAILED_PRECONDITION, 1, 103),
    # merr.ErrMetricNotFound: a GetMetrics type the proxy does not serve.
    ErrorCode.METRIC_NOT_FOUND: CodeInfo(grpc.StatusCode.NOT_FOUND, 1, 1200),
    # merr.ErrCollectionSchemaMismatch (109), which Milvus reports as commonpb.ErrorCode_SchemaMismatch
    # (62): pymilvus then refreshes its cached schema and sends the insert again.
    ErrorCode.SCHEMA_MISMATCH: CodeInfo(grpc.StatusCode.FAILED_PRECONDITION, 62, 109),
    # merr.ErrDatabaseInvalidName, ErrDatabaseNumLimitExceeded, ErrCollectionNumLimitExceeded (databases).
    ErrorCode.DATABASE_INVALID_NAME: CodeInfo(grpc.StatusCode.INVALID_ARGUMENT, 1, 802),
    ErrorCode.DATABASE_NUM_LIMIT_EXCEEDED: CodeInfo(grpc.StatusCode.RESOURCE_EXHAUSTED, 1, 801),
    ErrorCode.COLLECTION_NUM_LIMIT_EXCEEDED: CodeInfo(grpc.StatusCode.RESOURCE_EXHAUSTED, 1, 102),
    # A database's database.force.deny.writing / reading: commonpb.ErrorCode_ForceDeny (48), which
    # merr turns into ErrServiceQuotaExceeded (9).
    ErrorCode.FORCE_DENIED: CodeInfo(grpc.StatusCode.PERMISSION_DENIED, 48, 9),
    # merr.ErrPrivilegeNotPermitted (commonpb.ErrorCode_PermissionDenied): the proxy's interceptor answers a
    # denied call with gRPC PERMISSION_DENIED itself, as Milvus's does (proxy/auth/interceptor.py).
    ErrorCode.PRIVILEGE_NOT_PERMITTED: CodeInfo(grpc.StatusCode.PERMISSION_DENIED, 3, 1401),
    # merr.ErrPrivilegeNotAuthenticated; a failed login is gRPC UNAUTHENTICATED, as in Milvus.
    ErrorCode.NOT_AUTHENTICATED: CodeInfo(grpc.StatusCode.UNAUTHENTICATED, 1, 1400),
}


class StrataError(Exception):
    """An error with a code that every service edge knows how to translate."""

    code: ErrorCode = ErrorCode.UNEXPECTED

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidArgument(StrataError):
    code = ErrorCode.INVALID_ARGUMENT


class MalformedMessage(InvalidArgument):
    """A WAL message whose type or header ``common.message.decode`` cannot read."""


class CollectionNotFound(StrataError):
    code = ErrorCode.COLLECTION_NOT_FOUND


class AliasNotFound(StrataError):
    code = ErrorCode.ALIAS_NOT_FOUND


class DatabaseNotFound(StrataError):
    code = ErrorCode.DATABASE_NOT_FOUND


class DatabaseInvalidName(StrataError):
    code = ErrorCode.DATABASE_INVALID_NAME


class DatabaseNumLimitExceeded(StrataError):
    code = ErrorCode.DATABASE_NUM_LIMIT_EXCEEDED


class CollectionNumLimitExceeded(StrataError):
    code = ErrorCode.COLLECTION_NUM_LIMIT_EXCEEDED


class ForceDenied(StrataError):
    """A write or read of a database whose properties deny it (``database.force.deny.*``)."""

    code = ErrorCode.FORCE_DENIED


class ResourceGroupNotFound(StrataError):
    code = ErrorCode.RESOURCE_GROUP_NOT_FOUND


class ResourceGroupAlreadyExist(StrataError):
    code = ErrorCode.RESOURCE_GROUP_ALREADY_EXIST


class ServiceUnavailable(StrataError):
    """A call Milvus answers as unavailable for good: deprecated, or never implemented."""

    code = ErrorCode.SERVICE_UNAVAILABLE


class CollectionNotFullyLoaded(StrataError):
    code = ErrorCode.COLLECTION_NOT_FULLY_LOADED


class InvalidPartitionName(InvalidArgument):
    """A partition name Milvus' rules refuse (``common/names.py``)."""

    code = ErrorCode.INVALID_PARTITION_NAME


class FieldNameInvalid(InvalidArgument):
    """A field name Milvus' rules refuse (``common/names.py``)."""

    code = ErrorCode.FIELD_NAME_INVALID


class IllegalFilter(StrataError):
    code = ErrorCode.ILLEGAL_FILTER


class IndexNotFound(StrataError):
    code = ErrorCode.INDEX_NOT_FOUND


class IndexDuplicate(StrataError):
    """An index name (or none) that matches more than one index where one is meant."""

    code = ErrorCode.INDEX_DUPLICATE


class CollectionLoaded(StrataError):
    """A change Milvus makes only while the collection is released."""

    code = ErrorCode.COLLECTION_LOADED


class PartitionNotFound(StrataError):
    code = ErrorCode.PARTITION_NOT_FOUND


class PartitionNotLoaded(StrataError):
    code = ErrorCode.PARTITION_NOT_LOADED


class NotSupported(StrataError):
    code = ErrorCode.NOT_SUPPORTED


class SegmentLoadFailed(StrataError):
    """A sealed segment a load needs cannot be loaded; reads of it fail until it is."""

    code = ErrorCode.SEGMENT_LOAD_FAILED


class IndexNotSupported(StrataError):
    """An index this server cannot build (a type, or a kind of field, it has no index for)."""

    code = ErrorCode.INDEX_NOT_SUPPORTED


class ChannelNotExist(StrataError):
    code = ErrorCode.CHANNEL_NOT_EXIST


class UnmatchedChannelTerm(StrataError):
    code = ErrorCode.UNMATCHED_CHANNEL_TERM


class ChannelFenced(StrataError):
    code = ErrorCode.CHANNEL_FENCED


class IgnoredOperation(StrataError):
    code = ErrorCode.IGNORED_OPERATION


class WALClosed(StrataError):
    code = ErrorCode.WAL_CLOSED


class NotReady(StrataError):
    code = ErrorCode.NOT_READY


class ReadTimeout(StrataError):
    code = ErrorCode.TIMEOUT


class LimitExceeded(StrataError):
    """A request asks for more than a configured limit allows (``ProxyLimits``)."""

    code = ErrorCode.LIMIT_EXCEEDED


class SchemaMismatch(StrataError):
    """A write converted with a schema older than the collection's (a client's cached schema)."""

    code = ErrorCode.SCHEMA_MISMATCH


class PrivilegeNotPermitted(StrataError):
    """The caller's roles do not grant what the call needs (``proxy/auth``)."""

    code = ErrorCode.PRIVILEGE_NOT_PERMITTED


class NotAuthenticated(StrataError):
    """No valid user and password (or a wrong one) came with the call."""

    code = ErrorCode.NOT_AUTHENTICATED


class SegmentNotFound(StrataError):
    """The segment is unknown or DROPPED (its collection may be gone)."""

    code = ErrorCode.SEGMENT_NOT_FOUND


class PositionTruncated(StrataError):
    """A reader asked to start below the oldest record the WAL still has."""

    code = ErrorCode.POSITION_TRUNCATED


class DiskQuotaExhausted(StrataError):
    """A write found no space on its disk (``ENOSPC``, ``EDQUOT``); nothing of it was acknowledged."""

    code = ErrorCode.DISK_QUOTA_EXHAUSTED


class IOFailed(StrataError):
    """A write failed with an I/O error (``EIO`` and other ``OSError``); nothing of it was acknowledged."""

    code = ErrorCode.IO_FAILED


# Milvus's wording for a refused write when the disk quota is used up (its quota center's reason).
DISK_QUOTA_MESSAGE = "disk quota exceeded, please allocate more resources"
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def disk_error(err: OSError, what: str) -> StrataError:
    """The error to report for ``err`` raised while ``what`` wrote to disk.

    No space left (``ENOSPC``, ``EDQUOT``) becomes :class:`DiskQuotaExhausted` with Milvus's
    wording; any other ``OSError`` becomes :class:`IOFailed`. Chained to ``err``.
    """
    detail = f"{what}: {err.strerror or err}"
    out: StrataError
    if err.errno in _NO_SPACE:
        out = DiskQuotaExhausted(f"{DISK_QUOTA_MESSAGE}: {detail}")
    else:
        out = IOFailed(f"IO failed: {detail}")
    out.__cause__ = err
    return out


def error_from_code(code: int, message: str) -> StrataError:
    """Rebuild a typed error from a status that crossed a service edge."""
    try:
        ec = ErrorCode(code)
    except ValueError:
        ec = ErrorCode.UNEXPECTED
    for cls in StrataError.__subclasses__():
        # Only classes that declare a code of their own: one that merely inherits UNEXPECTED
        # (e.g. NotLeader, WatchBroken) must not be what any unexpected remote error becomes.
        if "code" in cls.__dict__ and cls.code == ec:
            return cls(message)
    return StrataError(message, ec)
